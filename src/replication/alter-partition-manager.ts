// The ISR side of the replica manager (Kafka's Partition.maybeShrinkIsr / maybeExpandIsr with its
// AlterPartitionManager): a leader proposes ISR changes to the controller with AlterPartition, one in
// flight per partition, batched into one request at a time, and applies the committed answer. A shrink
// is looked for every replica.lag.time.max.ms / 2 among followers not caught up (Kafka's isr-expiration
// task); an expansion when a follower's fetch reaches the HW and the current epoch. The controller is
// reached through the port the broker's composition gives (sendAlterPartition), so this file opens no
// socket.
import { ErrorCode, errorName } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { BrokerMetrics } from '../observability/broker-metrics.js'
import type { AlterPartitionRequest, AlterPartitionResponse } from '../protocol/messages/56-alter-partition.gen.js'
import type { HostedPartition } from './hosted-partition.js'

/** How long a leader waits before proposing an ISR expansion again after the controller refused one. */
const EXPAND_RETRY_BACKOFF_MS = 1000

export interface AlterPartitionManagerDeps {
  brokerId: number
  /** This broker's epoch (its registration), sent with AlterPartition. */
  brokerEpoch(): bigint
  /** Sends an AlterPartition (v1: topic names) to the active controller; rejects when none answers. */
  sendAlterPartition(request: AlterPartitionRequest): Promise<AlterPartitionResponse>
  /** replica.lag.time.max.ms */
  replicaLagTimeMaxMs: number
}

/** What the ISR manager needs of the replica manager's leadership table and HW rules. */
export interface IsrHost {
  /** The hosted partition now (a proposal's answer applies only to the entry that sent it). */
  hosted(topic: string, partition: number): HostedPartition | undefined
  /** Every hosted partition, for the shrink task. */
  hostedPartitions(): Iterable<HostedPartition>
  /** A proposal went out or failed: the shard's HW mode may change (a follower about to join counts). */
  isrProposalChanged(p: HostedPartition): void
  /** The controller answered a proposal (applied or refused): acks=all waits and the HW follow. */
  isrAnswered(p: HostedPartition): void
}

/** An ISR change proposed for a partition, for the leadership (ls) that proposed it. */
interface Proposal {
  p: HostedPartition
  ls: NonNullable<HostedPartition['leaderState']>
  isr: number[]
  expands: boolean
}

export class AlterPartitionManager {
  readonly #shrinkTimer: NodeJS.Timeout
  #closed = false
  /** Proposals not yet sent: they go in the next AlterPartition. */
  #unsent: Proposal[] = []
  /** An AlterPartition is out (at most one at a time). */
  #inFlight = false

  constructor(
    private readonly host: IsrHost,
    private readonly log: Logger,
    private readonly deps: AlterPartitionManagerDeps,
    private readonly metrics?: BrokerMetrics,
  ) {
    // Kafka's isr-expiration task: every replica.lag.time.max.ms / 2.
    this.#shrinkTimer = setInterval(() => this.maybeShrinkIsrs(), Math.max(10, Math.floor(deps.replicaLagTimeMaxMs / 2)))
    this.#shrinkTimer.unref()
  }

  /** A follower's fetch was recorded: proposes it for the ISR when it may join (and no change is pending or backed off). */
  maybeExpandIsr(p: HostedPartition, replicaId: number): void {
    const ls = p.leaderState!
    if (ls.pending === undefined && Date.now() >= ls.expandRetryAt && ls.mayJoinIsr(replicaId)) this.#proposeIsr(p, [...ls.isr, replicaId], true)
  }

  /** Proposes shrinking the ISR of every led partition with followers out of sync for replica.lag.time.max.ms. */
  maybeShrinkIsrs(): void {
    if (this.#closed) return
    const now = Date.now()
    for (const p of this.host.hostedPartitions()) {
      const ls = p.leaderState
      if (ls === undefined || ls.pending !== undefined || ls.isr.length <= 1) continue
      const out = ls.outOfSyncReplicas(now, this.deps.replicaLagTimeMaxMs)
      if (out.length > 0) this.#proposeIsr(p, ls.isr.filter((id) => !out.includes(id)), false)
    }
  }

  /**
   * Proposes an ISR to the controller (one change in flight per partition). Proposals are batched as
   * Kafka's AlterPartitionManager does: those made while a request is out wait for its answer and go
   * together in the next one, so a leader of thousands of partitions sends one AlterPartition at a time,
   * not one (and one connection attempt) per partition.
   */
  #proposeIsr(p: HostedPartition, isr: number[], expands: boolean): void {
    const ls = p.leaderState!
    if (ls.pending !== undefined || this.#closed) return
    ls.pending = { isr, expands }
    // A follower about to join counts for the HW from now on (maximal ISR): the shard stops moving it.
    this.host.isrProposalChanged(p)
    this.log.info({ topic: p.topic, partition: p.partition, isr: ls.isr, proposed: isr, leaderEpoch: ls.leaderEpoch }, expands ? 'expanding the ISR' : 'shrinking the ISR')
    this.#unsent.push({ p, ls, isr, expands })
    if (!this.#inFlight) queueMicrotask(() => this.#send())
  }

  /** Sends every unsent proposal in one AlterPartition, unless one is out already (its answer sends the rest). */
  #send(): void {
    if (this.#inFlight || this.#unsent.length === 0 || this.#closed) return
    const batch = this.#unsent
    this.#unsent = []
    const topics = new Map<string, AlterPartitionRequest['topics'][number]>()
    for (const { p, ls, isr } of batch) {
      let t = topics.get(p.topic)
      if (t === undefined) topics.set(p.topic, (t = { topicName: p.topic, topicId: p.topicId, partitions: [] }))
      t.partitions.push({ partitionIndex: p.partition, leaderEpoch: ls.leaderEpoch, newIsr: isr, newIsrWithEpochs: [], leaderRecoveryState: 0, partitionEpoch: ls.partitionEpoch })
    }
    const request: AlterPartitionRequest = { brokerId: this.deps.brokerId, brokerEpoch: this.deps.brokerEpoch(), topics: [...topics.values()] }
    this.#inFlight = true
    this.deps
      .sendAlterPartition(request)
      .then(
        (res) => {
          const answers = new Map<string, AlterPartitionResponse['topics'][number]['partitions'][number]>()
          for (const t of res.topics) for (const a of t.partitions) answers.set(`${t.topicName}\u0000${a.partitionIndex}`, a)
          for (const proposal of batch) this.#answered(proposal, res.errorCode, answers.get(`${proposal.p.topic}\u0000${proposal.p.partition}`))
        },
        (err: unknown) => {
          this.log.warn({ partitions: batch.length, err: (err as Error).message }, 'AlterPartition failed; retrying later')
          const retryAt = Date.now() + EXPAND_RETRY_BACKOFF_MS
          for (const { p, ls, expands } of batch) {
            if (p.leaderState !== ls) continue
            ls.pending = undefined
            // Not at once on the next fetch: a controller that cannot be reached is not asked thousands of times a second.
            if (expands) ls.expandRetryAt = retryAt
            this.host.isrProposalChanged(p)
          }
        },
      )
      .finally(() => {
        this.#inFlight = false
        this.#send()
      })
  }

  /** The controller's answer to one proposal: applied when it is for the partition's current leadership. */
  #answered(proposal: Proposal, requestError: number, answer: AlterPartitionResponse['topics'][number]['partitions'][number] | undefined): void {
    const { p, ls, expands } = proposal
    if (this.host.hosted(p.topic, p.partition) !== p || p.leaderState !== ls) return
    ls.pending = undefined
    const error = requestError !== ErrorCode.NONE ? requestError : (answer?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR)
    if (error !== ErrorCode.NONE || answer === undefined) {
      this.log.info({ topic: p.topic, partition: p.partition, error: errorName(error) }, 'the controller did not change the ISR')
      if (expands) ls.expandRetryAt = Date.now() + EXPAND_RETRY_BACKOFF_MS
    } else if (answer.leaderEpoch === ls.leaderEpoch && answer.partitionEpoch > ls.partitionEpoch) {
      // (A LeaderAndIsr may have brought a newer partition epoch meanwhile: an older answer is stale.)
      ls.applyCommittedIsr(answer.isr, answer.partitionEpoch)
      p.isr = [...answer.isr]
      p.partitionEpoch = answer.partitionEpoch
      this.log.info({ topic: p.topic, partition: p.partition, isr: ls.isr, partitionEpoch: ls.partitionEpoch }, 'ISR changed')
      // Kafka's IsrShrinksPerSec / IsrExpandsPerSec count committed changes.
      if (expands) this.metrics?.isrExpands.inc()
      else this.metrics?.isrShrinks.inc()
    }
    this.host.isrAnswered(p)
  }

  /** Stops the shrink task; no proposal goes out after this. */
  close(): void {
    this.#closed = true
    clearInterval(this.#shrinkTimer)
  }
}
