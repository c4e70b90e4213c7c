// A share consumer's membership of its share group (KIP-932): the coordinator is found as for any group
// (FindCoordinator, key type GROUP); the member id is chosen here, a random Kafka Uuid, and kept across
// rejoins (KIP-1082). ShareGroupHeartbeat joins with epoch 0 and the subscription, then beats at the
// interval the coordinator answers, sending the subscription only when it changed, and leaves with -1.
// The assignment comes by topic id; the consumer maps ids to names through Metadata. Errors as Kafka's
// ShareHeartbeatRequestManager: UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH rejoin with epoch 0, coordinator
// moves look the coordinator up again, and errors the member cannot outlive (authorization, a full group,
// an unsupported version) are kept for poll() to throw.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as ShareGroupHeartbeat from '../protocol/messages/76-share-group-heartbeat.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { randomKafkaUuid } from '../domain/uuid.js'
import type { Cluster } from './cluster-connections.js'

export const SHARE_LEAVE_EPOCH = -1

/** Before the coordinator says otherwise (Kafka's group.share.heartbeat.interval.ms default). */
const DEFAULT_HEARTBEAT_INTERVAL_MS = 5000

/** Errors after which this member cannot go on: poll() throws them. */
const FATAL: ReadonlySet<number> = new Set([
  ErrorCode.GROUP_AUTHORIZATION_FAILED,
  ErrorCode.TOPIC_AUTHORIZATION_FAILED,
  ErrorCode.INVALID_REQUEST,
  ErrorCode.GROUP_MAX_SIZE_REACHED,
  ErrorCode.UNSUPPORTED_VERSION,
  ErrorCode.GROUP_ID_NOT_FOUND,
  ErrorCode.INVALID_GROUP_ID,
  ErrorCode.UNSUPPORTED_ASSIGNOR,
])

export class ShareGroupMembership {
  readonly memberId = randomKafkaUuid()
  /** 0 until joined (and after a fence), then the coordinator's epoch. */
  memberEpoch = 0
  /** True once the coordinator has answered a join: the assignment is known. */
  joined = false
  /** The assignment: topic id -> partitions. */
  assignment = new Map<string, number[]>()
  /** A heartbeat error this member cannot go on after; poll() throws it. */
  fatalError: Error | null = null
  private subscription: string[] = []
  private subscriptionSent = false
  private intervalMs = DEFAULT_HEARTBEAT_INTERVAL_MS
  private timer: NodeJS.Timeout | null = null
  private inFlight: Promise<void> | null = null
  private stopped = true
  private readonly waiters = new Set<() => void>()

  constructor(
    private readonly cluster: Cluster,
    readonly groupId: string,
    private readonly rackId: string | null,
    /** Called when the assignment changes (a new one arrived, or it was lost). */
    private readonly onAssignment: () => void,
  ) {}

  /** Sets the subscription and beats at once (a join, or a heartbeat with the new subscription). */
  subscribe(topics: readonly string[]): void {
    this.subscription = [...new Set(topics)]
    this.subscriptionSent = false
    this.stopped = false
    this.beatSoon(0)
  }

  get subscribed(): readonly string[] {
    return this.subscription
  }

  get active(): boolean {
    return !this.stopped
  }

  /** Resolves when a heartbeat answers (or fails), or after ms. */
  waitForHeartbeat(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t)
        this.waiters.delete(done)
        resolve()
      }
      const t = setTimeout(done, Math.max(0, ms))
      this.waiters.add(done)
    })
  }

  private beatSoon(ms: number): void {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = null
      void this.beat()
    }, ms)
    this.timer.unref()
  }

  /** One heartbeat (never two at once); schedules the next. */
  private beat(): Promise<void> {
    if (this.inFlight !== null) return this.inFlight
    const p = this.heartbeat().finally(() => {
      this.inFlight = null
      for (const w of [...this.waiters]) w()
    })
    this.inFlight = p
    return p
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped) return
    const joining = this.memberEpoch === 0
    const sendSubscription = joining || !this.subscriptionSent
    let next = this.intervalMs
    try {
      const conn = await this.cluster.coordinator(this.groupId, 0)
      const req = ShareGroupHeartbeat.createShareGroupHeartbeatRequest({
        groupId: this.groupId,
        memberId: this.memberId,
        memberEpoch: this.memberEpoch,
        rackId: this.rackId,
        subscribedTopicNames: sendSubscription ? this.subscription : null,
      })
      const res = await conn.send(ApiKey.ShareGroupHeartbeat, (w, v) => ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest(w, req, v), ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse)
      if (this.stopped) return
      const code = res.errorCode
      if (code === ErrorCode.NONE) {
        if (sendSubscription) this.subscriptionSent = true
        this.memberEpoch = res.memberEpoch
        // A broker's interval is taken within sane bounds: 0 or a negative one must not make a busy loop.
        if (res.heartbeatIntervalMs > 0) this.intervalMs = Math.min(Math.max(res.heartbeatIntervalMs, 100), 3_600_000)
        next = this.intervalMs
        if (res.assignment !== null) {
          const a = new Map<string, number[]>()
          for (const tp of res.assignment.topicPartitions) a.set(tp.topicId, [...new Set(tp.partitions.filter((p) => Number.isInteger(p) && p >= 0))])
          this.assignment = a
          this.joined = true
          this.onAssignment()
        } else if (joining) {
          this.joined = true
        }
      } else if (code === ErrorCode.UNKNOWN_MEMBER_ID || code === ErrorCode.FENCED_MEMBER_EPOCH) {
        // The coordinator dropped this member: its partitions are no longer its own; join again at once.
        this.lose()
        next = 0
      } else if (code === ErrorCode.NOT_COORDINATOR || code === ErrorCode.COORDINATOR_NOT_AVAILABLE) {
        this.cluster.forgetCoordinator(this.groupId, 0)
        next = this.cluster.retryBackoffMs
      } else if (FATAL.has(code)) {
        this.fatalError = new KafkaError(code as ErrorCode, res.errorMessage ?? `ShareGroupHeartbeat of group '${this.groupId}'`)
        this.stopped = true
        return
      } else {
        // COORDINATOR_LOAD_IN_PROGRESS and the like: try again after a backoff.
        next = this.cluster.retryBackoffMs
      }
    } catch (err) {
      if (this.stopped) return
      if (err instanceof KafkaError && FATAL.has(err.code)) {
        // UNSUPPORTED_VERSION when the coordinator does not advertise ShareGroupHeartbeat v1: as Kafka's
        // client, this member fails rather than guessing a version.
        this.fatalError = err
        this.stopped = true
        return
      }
      this.cluster.forgetCoordinator(this.groupId, 0)
      next = this.cluster.retryBackoffMs
    }
    this.beatSoon(next)
  }

  /** The membership is gone: no assignment, epoch 0 (the next heartbeat joins again with the same id). */
  private lose(): void {
    this.memberEpoch = 0
    this.joined = false
    if (this.assignment.size > 0) {
      this.assignment = new Map()
      this.onAssignment()
    }
  }

  /** Rejoins on the next heartbeat (after leaving for max.poll.interval.ms). */
  rejoin(): void {
    if (this.stopped && this.fatalError === null) {
      this.stopped = false
      this.subscriptionSent = false
      this.beatSoon(0)
    }
  }

  /** Leaves the group (epoch -1) and stops beating; bounded by the client's request timeout. */
  async leave(): Promise<void> {
    const wasJoined = this.memberEpoch > 0
    this.stopped = true
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    await this.inFlight?.catch(() => {})
    this.lose()
    if (!wasJoined) return
    try {
      const conn = await this.cluster.coordinator(this.groupId, 0)
      const req = ShareGroupHeartbeat.createShareGroupHeartbeatRequest({ groupId: this.groupId, memberId: this.memberId, memberEpoch: SHARE_LEAVE_EPOCH, rackId: null, subscribedTopicNames: null })
      await conn.send(ApiKey.ShareGroupHeartbeat, (w, v) => ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest(w, req, v), ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse)
    } catch {
      // The coordinator removes the member after share.session.timeout.ms anyway.
    }
  }
}
