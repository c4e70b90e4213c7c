// The controller (Kafka's KafkaController in ZooKeeper mode). Every broker runs one; the one that wins
// the election in the store is active, the others only watch the controller registration. All work is
// done by one event queue, one event at a time (store watches, requests from brokers, timers), so the
// controller's view never changes under a step.
//
// Election: when there is no controller, campaign() registers this broker and bumps the controller epoch
// atomically; the winner runs onControllerFailover:
//   1. watch brokers, topics and the deletion queue (before reading, so no change is missed)
//   2. read everything: live brokers and epochs, topics, assignments (topics without an id get one),
//      partition states; start the channel to every live broker
//   3. topics queued for deletion (those with offline replicas wait)
//   4. UpdateMetadata (live brokers) to every broker, before the state machines run
//   5. the replica state machine (LeaderAndIsr to each online replica), then the partition state machine
//      (leaders for new and offline partitions)
//   6. resume deletions; schedule the preferred-leader check (auto.leader.rebalance.enable)
// A write refused for the epoch (ControllerMovedError) makes it resign: everything is dropped and it
// goes back to watching. A lost store session does the same, then the broker registers again (a new
// broker epoch) and the election runs again.
//
// Reactions: broker registered (UpdateMetadata; LeaderAndIsr for its replicas; offline partitions elect),
// broker gone or bounced (its led partitions elect from the ISR, first live ISR member in assignment
// order, unclean only where unclean.leader.election.enable allows; it leaves the ISRs; leader epochs
// bump), topic created / partitions added (New -> Online), topic deletion (topic-deletion.ts),
// AlterPartition (ISR changes from leaders; only the controller writes partition state), ControlledShutdown
// (leaderships move off the broker, it stops following), the periodic preferred-leader election.
import { randomKafkaUuid } from '../../domain/uuid.js'
import type { BrokerConfig } from '../../config/broker-config.js'
import { ErrorCode } from '../../domain/errors.js'
import { MainThreadSlices } from '../../domain/main-thread-slices.js'
import type { Logger } from '../../observability/logger.js'
import * as AlterPartition from '../../protocol/messages/56-alter-partition.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import {
  ControllerMovedError,
  LeaderRecoveryState,
  partitionKey,
  type LeaderAndIsr,
  type MetadataStore,
  type RegisteredBroker,
  type TopicAssignment,
  type Unwatch,
} from '../metadata-store.js'
import { BrokerLivenessMonitor, type ProbeLinkFactory } from './broker-liveness.js'
import { ControllerChannel, type BrokerLinkFactory, type ControlResponse, type LocalControlTarget } from './channel.js'
import { ControllerContext, type PartitionReplica, type TopicPartition } from './context.js'
import { PartitionStateMachine } from './partition-state-machine.js'
import { ReplicaStateMachine } from './replica-state-machine.js'
import { LeaderAndIsrMemory, RequestBatch } from './request-batch.js'
import { ReassignmentManager, type ReassignmentResult } from './reassignment.js'
import { TopicDeletionManager } from './topic-deletion.js'

export interface ControllerOptions {
  brokerId: number
  store: MetadataStore
  /** This broker's control plane: the controller's requests to its own broker go here directly. */
  local: LocalControlTarget
  /** How the controller connects to the other brokers. */
  connect: BrokerLinkFactory
  /**
   * How it pings them (broker-liveness.ts): brokers that refuse connections or stay silent for
   * broker.session.timeout.ms are fenced before their sessions expire. Undefined: the sessions alone decide.
   */
  probe?: ProbeLinkFactory
  /** When this broker last heard from a broker (its controller watch), for the first look of a new controller. */
  lastHeardFrom?: (brokerId: number) => number | undefined
  /** The broker configuration now (dynamic changes included). */
  config: () => BrokerConfig
  interBrokerListener: string
  log: Logger
}

/** ElectLeaders' election types (Kafka's ElectionType). */
export const ElectionType = { PREFERRED: 0, UNCLEAN: 1 } as const

export interface ElectionAnswer {
  errorCode: number
  errorMessage: string | null
}

/** A partition reassignment in progress (ListPartitionReassignments). */
export interface OngoingReassignment extends TopicPartition {
  replicas: number[]
  addingReplicas: number[]
  removingReplicas: number[]
}

export interface ControlledShutdownResult {
  errorCode: number
  /** Partitions the broker still leads. */
  remaining: TopicPartition[]
}

/** Delay before the first preferred-leader check after a failover (Kafka: 5 s). */
const FIRST_REBALANCE_CHECK_MS = 5000
/** How long a new controller's first connection attempt to each broker may take (refused ones are out at once). */
const FIRST_PROBE_WAIT_MS = 500
/** How long a new controller waits for its own broker to apply the elections before the ISR step. */
const LOCAL_APPLY_WAIT_MS = 10_000

type Event = { name: string; run: () => Promise<void>; onDropped: (() => void) | undefined }

export class Controller {
  readonly context = new ControllerContext()
  #activeControllerId = -1
  #channel: ControllerChannel | undefined
  #liveness: BrokerLivenessMonitor | undefined
  /**
   * Registered brokers the controller fenced (unreachable, broker-liveness.ts): out of liveBrokers, their
   * replicas offline, until they answer again or register anew.
   */
  readonly #fenced = new Map<number, RegisteredBroker>()
  readonly #queue: Event[] = []
  #processing = false
  #stopped = false
  readonly #watches: Unwatch[] = []
  readonly #topicWatches = new Map<string, Unwatch>()
  #controllerWatch: Unwatch | undefined
  #rebalanceTimer: NodeJS.Timeout | undefined
  readonly #batch: RequestBatch
  /** What this controller's failover has told each broker (its batches skip telling it twice). */
  readonly #told = new LeaderAndIsrMemory()
  readonly #partitionStateMachine: PartitionStateMachine
  readonly #replicaStateMachine: ReplicaStateMachine
  readonly #deletion: TopicDeletionManager
  readonly #reassignment: ReassignmentManager
  readonly #log: Logger

  constructor(private readonly options: ControllerOptions) {
    this.#log = options.log.child({ component: 'controller' })
    const newBatch = (): RequestBatch =>
      new RequestBatch(this.context, () => this.#requireChannel(), options.brokerId, options.interBrokerListener, (brokerId, deleting, response) =>
        this.#put('TopicDeletionStopReplicaResponseReceived', () => this.#onStopReplicaResponse(brokerId, deleting, response)),
        (brokerId, response) => {
          // Answers matter when they report a failed log dir, or may report one back (replicas counted offline).
          if ((this.context.replicasOnOfflineDirs.get(brokerId)?.size ?? 0) > 0 || response.partitionErrors.some((e) => e.errorCode === ErrorCode.KAFKA_STORAGE_ERROR)) {
            this.#put('LeaderAndIsrResponseReceived', () => this.#onLeaderAndIsrResponse(brokerId, response))
          }
        },
        this.#told,
      )
    this.#batch = newBatch()
    this.#partitionStateMachine = new PartitionStateMachine({
      context: this.context,
      store: options.store,
      batch: newBatch(),
      uncleanLeaderElection: (topics) => this.#uncleanLeaderElection(topics),
      log: this.#log,
    })
    this.#replicaStateMachine = new ReplicaStateMachine({ context: this.context, store: options.store, batch: newBatch(), told: this.#told, log: this.#log })
    this.#deletion = new TopicDeletionManager({
      context: this.context,
      store: options.store,
      partitions: this.#partitionStateMachine,
      replicas: this.#replicaStateMachine,
      enabled: () => options.config().getBoolean('delete.topic.enable'),
      sendMetadataUpdate: async (partitions) => this.#sendUpdateMetadata(this.context.liveOrShuttingDownBrokerIds(), partitions),
      forgetTopic: (topic) => this.#unwatchTopic(topic),
      log: this.#log,
    })
    this.#reassignment = new ReassignmentManager({
      context: this.context,
      store: options.store,
      partitions: this.#partitionStateMachine,
      replicas: this.#replicaStateMachine,
      batch: newBatch(),
      isTopicQueuedUpForDeletion: (topic) => this.#deletion.isTopicQueuedUpForDeletion(topic),
      sendUpdateMetadata: (partitions) => this.#sendUpdateMetadata(this.context.liveOrShuttingDownBrokerIds(), partitions),
      log: this.#log,
    })
  }

  get isActive(): boolean {
    return this.#activeControllerId === this.options.brokerId
  }

  /** The controller's broker id as this controller last read it (-1: none). */
  get activeControllerId(): number {
    return this.#activeControllerId
  }

  get epoch(): number {
    return this.context.epoch
  }

  /** While active: milliseconds since any other broker answered its pings (0 without others, or not probing). */
  msSinceAnyBrokerAnswered(): number {
    return this.#liveness?.msSinceAnyAnswered() ?? 0
  }

  /** Starts watching the controller registration and runs for controller. */
  startup(): void {
    this.#put('Startup', async () => {
      this.#controllerWatch = this.options.store.watchController(() => this.#put('ControllerChange', () => this.#processControllerChange()))
      await this.#elect()
    })
  }

  /** Stops for good: resigns if active (the registration itself goes with the store session). */
  async shutdown(): Promise<void> {
    await this.idle()
    this.#stopped = true
    for (const e of this.#queue.splice(0)) e.onDropped?.()
    this.#controllerWatch?.()
    if (this.isActive) this.#onControllerResignation()
    this.#activeControllerId = -1
  }

  /** The store session was lost: the controller role (and its watches) went with it. */
  onSessionExpired(): void {
    this.#put('Expire', async () => {
      this.#activeControllerId = -1
      this.#onControllerResignation()
    })
  }

  /** A new store session: register the broker again (a new epoch), then run for controller again. */
  onSessionReestablished(registerBroker: () => Promise<void>): void {
    this.#put('RegisterBrokerAndReelect', async () => {
      await registerBroker()
      this.#controllerWatch?.()
      this.#controllerWatch = this.options.store.watchController(() => this.#put('ControllerChange', () => this.#processControllerChange()))
      await this.#elect()
    })
  }

  /** Resolves when every event queued so far is processed. */
  idle(): Promise<void> {
    return new Promise((resolve) => this.#put('Idle', async () => resolve()))
  }

  /** Resolves when the requests sent so far (to one broker, or to all) have been answered (or their brokers left). */
  async drained(brokerId?: number): Promise<void> {
    await this.idle()
    await this.#channel?.drained(brokerId)
  }

  /** AlterPartition from a partition leader (KIP-497). */
  alterPartition(request: AlterPartition.AlterPartitionRequest, version: number): Promise<AlterPartition.AlterPartitionResponse> {
    return new Promise((resolve) => {
      this.#put('AlterPartitionReceived', async () => resolve(await this.#processAlterPartition(request, version)), () =>
        resolve(AlterPartition.createAlterPartitionResponse({ errorCode: ErrorCode.NOT_CONTROLLER })),
      )
    })
  }

  /** ControlledShutdown from a broker about to stop. */
  controlledShutdown(brokerId: number, brokerEpoch: bigint): Promise<ControlledShutdownResult> {
    return new Promise((resolve) => {
      this.#put('ControlledShutdown', async () => resolve(await this.#processControlledShutdown(brokerId, brokerEpoch)), () =>
        resolve({ errorCode: ErrorCode.NOT_CONTROLLER, remaining: [] }),
      )
    })
  }

  /**
   * ElectLeaders (Kafka's KafkaController.electLeaders): partitions (null: all) elect their preferred
   * replica or, UNCLEAN, a leader for partitions without a live one. Answers per partition key.
   */
  electLeaders(electionType: number, partitions: readonly TopicPartition[] | null): Promise<Map<string, ElectionAnswer> | undefined> {
    return new Promise((resolve) => {
      this.#put('ReplicaLeaderElection', async () => resolve(this.isActive ? await this.#processReplicaLeaderElection(electionType, partitions) : undefined), () => resolve(undefined))
    })
  }

  /** AlterPartitionReassignments: a new target per partition, or null to cancel. undefined: not the controller. */
  alterPartitionReassignments(requests: readonly { tp: TopicPartition; replicas: number[] | null }[]): Promise<Map<string, ReassignmentResult> | undefined> {
    return new Promise((resolve) => {
      this.#put(
        'ApiPartitionReassignment',
        async () => resolve(this.isActive ? await this.#reassignment.submit(requests, this.context.liveBrokerIds()) : undefined),
        () => resolve(undefined),
      )
    })
  }

  /** ListPartitionReassignments (partitions null: all). undefined: not the controller. */
  listPartitionReassignments(partitions: readonly TopicPartition[] | null): Promise<OngoingReassignment[] | undefined> {
    return new Promise((resolve) => {
      this.#put(
        'ListPartitionReassignments',
        async () => {
          if (!this.isActive) return resolve(undefined)
          const wanted = partitions === null ? undefined : new Set(partitions.map((p) => partitionKey(p.topic, p.partition)))
          resolve(
            this.#reassignment
              .ongoing()
              .filter(({ tp }) => wanted === undefined || wanted.has(partitionKey(tp.topic, tp.partition)))
              .map(({ tp, assignment }) => ({ ...tp, replicas: [...assignment.replicas], addingReplicas: [...assignment.addingReplicas], removingReplicas: [...assignment.removingReplicas] })),
          )
        },
        () => resolve(undefined),
      )
    })
  }

  // ---------------------------------------------------------------- the event queue

  /** Queues an event; onDropped runs when it is dropped unprocessed (shutdown) or fails. */
  #put(name: string, run: () => Promise<void>, onDropped?: () => void): void {
    if (this.#stopped) {
      onDropped?.()
      return
    }
    this.#queue.push({
      name,
      onDropped,
      run: async () => {
        try {
          await run()
        } catch (err) {
          onDropped?.()
          throw err
        }
      },
    })
    if (!this.#processing) void this.#processQueue()
  }

  async #processQueue(): Promise<void> {
    this.#processing = true
    while (this.#queue.length > 0 && !this.#stopped) {
      const event = this.#queue.shift()!
      try {
        await event.run()
      } catch (err) {
        if (err instanceof ControllerMovedError) {
          this.#log.info({ event: event.name, reason: err.message }, 'controller moved to another broker while processing an event')
          await this.#maybeResign().catch((e: unknown) => this.#log.error({ err: (e as Error).message }, 'resignation check failed'))
        } else {
          this.#log.error({ event: event.name, err }, 'error processing controller event')
        }
      }
    }
    this.#processing = false
  }

  #requireChannel(): ControllerChannel {
    if (this.#channel === undefined) throw new ControllerMovedError('not the active controller')
    return this.#channel
  }

  #token(): { epoch: number; epochVersion: number } {
    return { epoch: this.context.epoch, epochVersion: this.context.epochVersion }
  }

  // ---------------------------------------------------------------- election

  async #elect(): Promise<void> {
    const { store, brokerId } = this.options
    this.#activeControllerId = await store.getControllerId()
    if (this.#activeControllerId !== -1) {
      this.#log.debug({ controller: this.#activeControllerId }, 'a controller is already elected')
      return
    }
    try {
      const { epoch, epochVersion } = await store.campaign(brokerId)
      this.context.epoch = epoch
      this.context.epochVersion = epochVersion
      this.#activeControllerId = brokerId
      this.#log.info({ epoch, epochVersion }, `broker ${brokerId} is the controller (epoch ${epoch})`)
    } catch (err) {
      if (err instanceof ControllerMovedError) {
        await this.#maybeResign()
        return
      }
      throw err
    }
    try {
      await this.#onControllerFailover()
    } catch (err) {
      if (err instanceof ControllerMovedError) throw err
      this.#log.error({ err }, 'controller failover failed; giving up the controller role')
      await this.#triggerControllerMove()
    }
  }

  async #processControllerChange(): Promise<void> {
    await this.#maybeResign()
    if (this.#activeControllerId === -1) await this.#elect()
  }

  async #maybeResign(): Promise<void> {
    const wasActive = this.isActive
    this.#activeControllerId = await this.options.store.getControllerId()
    if (wasActive && !this.isActive) this.#onControllerResignation()
  }

  /** Gives up the role on an unexpected failure: resign, and delete the registration if the epoch is still ours. */
  async #triggerControllerMove(): Promise<void> {
    if (!this.isActive) return
    const token = this.#token()
    this.#activeControllerId = -1
    this.#onControllerResignation()
    await this.options.store.resign(token)
  }

  #onControllerResignation(): void {
    this.#log.info({ epoch: this.context.epoch }, 'resigning as controller')
    for (const unwatch of this.#watches.splice(0)) unwatch()
    for (const unwatch of this.#topicWatches.values()) unwatch()
    this.#topicWatches.clear()
    clearTimeout(this.#rebalanceTimer)
    this.#rebalanceTimer = undefined
    this.#channel?.shutdown()
    this.#channel = undefined
    this.#liveness?.stop()
    this.#liveness = undefined
    this.#fenced.clear()
    this.#batch.clear()
    this.context.reset()
  }

  async #onControllerFailover(): Promise<void> {
    const { store } = this.options
    const ctx = this.context
    const startedAt = performance.now()
    // Watches first: a change after them is an event, one before them is in what we read next.
    this.#watches.push(
      store.watchBrokers(() => this.#put('BrokerChange', () => this.#processBrokerChange())),
      store.watchTopics(() => this.#put('TopicChange', () => this.#processTopicChange())),
      store.watchTopicDeletions(() => this.#put('TopicDeletion', () => this.#processTopicDeletion())),
      store.watchLogDirEvents(() => this.#put('LogDirEventNotification', () => this.#processLogDirEvents())),
    )
    // Controller context from the store.
    for (const b of await store.getLiveBrokers()) ctx.liveBrokers.set(b.id, b)
    // A registered broker whose port refuses connections is gone (a killed predecessor, often): it starts
    // fenced, so the state machines below elect without it rather than after its session expires.
    this.#startLiveness()
    for (const id of (await this.#liveness?.refusing([...ctx.liveBrokers.values()], FIRST_PROBE_WAIT_MS)) ?? []) {
      const b = ctx.liveBrokers.get(id)
      if (b === undefined) continue
      this.#log.warn({ brokerId: id }, `broker ${id} is registered but refuses connections: fenced`)
      this.#fenced.set(id, b)
      ctx.liveBrokers.delete(id)
    }
    const topics = await store.getTopicNames()
    for (const t of topics) {
      ctx.allTopics.add(t)
      this.#watchTopic(t)
    }
    const assignments = await store.getTopicAssignments(topics)
    await this.#processTopicIds(assignments)
    for (const a of assignments.values()) a.partitions.forEach((r, partition) => ctx.setAssignment({ topic: a.name, partition }, r))
    const partitions = ctx.allPartitions()
    const states = await store.getPartitionStates(partitions)
    for (const tp of partitions) {
      const state = states.get(partitionKey(tp.topic, tp.partition))
      if (state !== undefined) ctx.putLeadership(tp, state)
    }
    this.#channel = new ControllerChannel({
      localBrokerId: this.options.brokerId,
      local: this.options.local,
      connect: this.options.connect,
      interBrokerListener: this.options.interBrokerListener,
      requestTimeoutMs: this.options.config().getInt('controller.socket.timeout.ms'),
      log: this.#log,
    })
    for (const b of ctx.liveBrokers.values()) this.#channel.addBroker(b)
    const loadedAt = performance.now()
    this.#log.info(
      { liveBrokers: [...ctx.liveBrokers.keys()], topics: ctx.allTopics.size, partitions: states.size, ms: Math.round(loadedAt - startedAt) },
      'controller context initialized',
    )

    // Deletions in progress; topics with offline replicas wait.
    const toBeDeleted = new Set(await store.getTopicDeletions())
    const withOfflineReplicas = new Set([...ctx.allTopics].filter((t) => ctx.assignments.get(t)?.some((a) => a !== undefined && a.replicas.some((r) => !ctx.isReplicaOnline(r))) === true))
    await this.#deletion.init(toBeDeleted, withOfflineReplicas)

    // Brokers learn the live brokers before any LeaderAndIsr.
    this.#sendUpdateMetadata(ctx.liveOrShuttingDownBrokerIds(), [])
    // Leaders first, then the replicas (Kafka goes the other way round): the partitions a dead broker led
    // get their new leader, and lose the dead broker from their ISR, in one write each; then the ISR
    // shrink of every partition it followed; then the LeaderAndIsr to every live replica, which at
    // 100,000 partitions came to most of a minute, leaves out what the first two steps told already.
    this.#told.remember()
    let ledAt: number
    let replicas: { offlineMs: number; onlineMs: number }
    try {
      await this.#partitionStateMachine.startup()
      ledAt = performance.now()
      // This broker takes the leaderships just elected before the ISR step starts: both run on this
      // thread, and interleaved with that step its own apply finished seconds after the other brokers'.
      await this.#localBrokerCaughtUp()
      replicas = await this.#replicaStateMachine.startup()
    } finally {
      this.#told.forget()
    }
    // Where a failover's time goes at scale: loading the state, electing leaders, telling the replicas.
    this.#log.info(
      { epoch: ctx.epoch, loadMs: Math.round(loadedAt - startedAt), leadersMs: Math.round(ledAt - loadedAt), offlineReplicasMs: replicas.offlineMs, onlineReplicasMs: replicas.onlineMs },
      'controller failover complete',
    )
    await this.#reassignment.resume()
    await this.#deletion.tryTopicDeletion()
    this.#scheduleRebalance(FIRST_REBALANCE_CHECK_MS)
    // Log dir failures reported while there was no controller.
    await this.#processLogDirEvents()
  }

  /** The controller's requests to its own broker applied, or LOCAL_APPLY_WAIT_MS passed. */
  async #localBrokerCaughtUp(): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, LOCAL_APPLY_WAIT_MS)))
    try {
      await Promise.race([this.#channel?.drained(this.options.brokerId), waited])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Topics created without an id get one (written back, guarded by the epoch). */
  async #processTopicIds(assignments: Map<string, TopicAssignment>): Promise<void> {
    const missing = [...assignments.values()].filter((a) => a.topicId === null || a.topicId === ZERO_UUID)
    if (missing.length > 0) {
      for (const a of missing) a.topicId = randomKafkaUuid()
      await this.options.store.setTopicIds(this.#token(), missing)
    }
    for (const a of assignments.values()) this.context.setTopicId(a.name, a.topicId!)
  }

  #watchTopic(topic: string): void {
    if (this.#topicWatches.has(topic)) return
    this.#topicWatches.set(
      topic,
      this.options.store.watchTopicAssignment(topic, () => this.#put('PartitionModifications', () => this.#processPartitionModifications(topic))),
    )
  }

  #unwatchTopic(topic: string): void {
    this.#topicWatches.get(topic)?.()
    this.#topicWatches.delete(topic)
  }

  #sendUpdateMetadata(brokers: readonly number[], partitions: readonly TopicPartition[]): void {
    this.#batch.newBatch()
    this.#batch.addUpdateMetadata(brokers, partitions)
    this.#batch.send()
  }

  // ---------------------------------------------------------------- brokers

  #startLiveness(): void {
    const { probe, config } = this.options
    if (probe === undefined) return
    this.#liveness = new BrokerLivenessMonitor({
      localBrokerId: this.options.brokerId,
      connect: probe,
      interBrokerListener: this.options.interBrokerListener,
      settings: { intervalMs: config().getInt('broker.heartbeat.interval.ms'), sessionTimeoutMs: config().getInt('broker.session.timeout.ms') },
      onUnreachable: (id, epoch, reason) => this.#put('BrokerUnreachable', () => this.#processBrokerUnreachable(id, epoch, reason)),
      onReachable: (id, epoch) => this.#put('BrokerReachable', () => this.#processBrokerReachable(id, epoch)),
      lastHeardFrom: this.options.lastHeardFrom,
      log: this.#log,
    })
  }

  /** Fences a live broker that stopped answering: its replicas go offline as a dead broker's do. */
  async #processBrokerUnreachable(brokerId: number, brokerEpoch: bigint, reason: string): Promise<void> {
    if (!this.isActive) return
    const ctx = this.context
    const b = ctx.liveBrokers.get(brokerId)
    if (b === undefined || b.epoch !== brokerEpoch) return
    this.#log.warn({ brokerId, reason }, `fencing broker ${brokerId} (${reason}); its partitions elect new leaders`)
    this.#fenced.set(brokerId, b)
    ctx.liveBrokers.delete(brokerId)
    this.#requireChannel().removeBroker(brokerId)
    await this.#onBrokerFailure([brokerId])
  }

  /** A fenced broker answers again with the same registration: taken back as a restarted broker is. */
  async #processBrokerReachable(brokerId: number, brokerEpoch: bigint): Promise<void> {
    if (!this.isActive) return
    const b = this.#fenced.get(brokerId)
    if (b === undefined || b.epoch !== brokerEpoch) return
    this.#log.info({ brokerId }, `broker ${brokerId} answers again: no longer fenced`)
    this.#fenced.delete(brokerId)
    this.context.liveBrokers.set(brokerId, b)
    this.#requireChannel().addBroker(b)
    await this.#onBrokerStartup([brokerId])
  }

  async #processBrokerChange(): Promise<void> {
    if (!this.isActive) return
    const ctx = this.context
    const channel = this.#requireChannel()
    const current = new Map((await this.options.store.getLiveBrokers()).map((b) => [b.id, b]))
    const added: RegisteredBroker[] = []
    const bounced: RegisteredBroker[] = []
    const dead: number[] = []
    for (const [id, b] of current) {
      const fenced = this.#fenced.get(id)
      if (fenced !== undefined) {
        // Still the fenced registration: stays out. A new one is a restarted broker, back in.
        if (fenced.epoch === b.epoch) continue
        this.#fenced.delete(id)
        added.push(b)
        continue
      }
      const known = ctx.liveBrokers.get(id)
      if (known === undefined) added.push(b)
      else if (known.epoch !== b.epoch) bounced.push(b)
    }
    for (const id of ctx.liveBrokers.keys()) if (!current.has(id)) dead.push(id)
    // A fenced broker's registration expired: its replicas went offline when it was fenced.
    for (const id of [...this.#fenced.keys()]) {
      if (current.has(id)) continue
      this.#fenced.delete(id)
      this.#liveness?.remove(id)
    }
    for (const b of [...added, ...bounced]) this.#liveness?.add(b)
    for (const id of dead) this.#liveness?.remove(id)
    if (added.length === 0 && bounced.length === 0 && dead.length === 0) return
    this.#log.info({ added: added.map((b) => b.id), bounced: bounced.map((b) => b.id), dead }, 'broker change')
    for (const b of added) channel.addBroker(b)
    for (const b of bounced) channel.removeBroker(b.id)
    for (const b of bounced) channel.addBroker(b)
    for (const id of dead) channel.removeBroker(id)
    if (added.length > 0) {
      for (const b of added) ctx.liveBrokers.set(b.id, b)
      await this.#onBrokerStartup(added.map((b) => b.id).sort((a, b) => a - b))
    }
    if (bounced.length > 0) {
      const ids = bounced.map((b) => b.id).sort((a, b) => a - b)
      for (const id of ids) ctx.liveBrokers.delete(id)
      await this.#onBrokerFailure(ids)
      for (const b of bounced) ctx.liveBrokers.set(b.id, b)
      await this.#onBrokerStartup(ids)
    }
    if (dead.length > 0) {
      for (const id of dead) ctx.liveBrokers.delete(id)
      await this.#onBrokerFailure(dead.sort((a, b) => a - b))
    }
  }

  async #onBrokerStartup(newBrokers: number[]): Promise<void> {
    const ctx = this.context
    const newSet = new Set(newBrokers)
    // A restarted broker reopens its log dirs: what failed before may be back.
    for (const id of newBrokers) ctx.replicasOnOfflineDirs.delete(id)
    const existing = ctx.liveOrShuttingDownBrokerIds().filter((id) => !newSet.has(id))
    // Existing brokers learn the new ones; new brokers get every partition's state.
    this.#sendUpdateMetadata(existing, [])
    this.#sendUpdateMetadata(newBrokers, ctx.partitionsWithLeaders())
    const replicasOnNew = ctx.replicasOnBrokers(newSet)
    await this.#replicaStateMachine.handleStateChanges(replicasOnNew, 'OnlineReplica')
    await this.#partitionStateMachine.triggerOnlinePartitionStateChange()
    const deleting = new Set(replicasOnNew.filter((r) => this.#deletion.isTopicQueuedUpForDeletion(r.topic)).map((r) => r.topic))
    if (deleting.size > 0) await this.#deletion.resumeDeletionForTopics(deleting)
    await this.#reassignment.onBrokerStartup(newSet)
  }

  async #onBrokerFailure(deadBrokers: number[]): Promise<void> {
    const ctx = this.context
    for (const id of deadBrokers) ctx.shuttingDownBrokerIds.delete(id)
    await this.#onReplicasBecomeOffline(ctx.replicasOnBrokers(new Set(deadBrokers)))
  }

  async #onReplicasBecomeOffline(offline: PartitionReplica[]): Promise<void> {
    const ctx = this.context
    const forDeletion = offline.filter((r) => this.#deletion.isTopicQueuedUpForDeletion(r.topic))
    const notForDeletion = offline.filter((r) => !this.#deletion.isTopicQueuedUpForDeletion(r.topic))
    await this.#partitionStateMachine.handleStateChanges(ctx.partitionsWithOfflineLeader(), 'OfflinePartition')
    const elections = await this.#partitionStateMachine.triggerOnlinePartitionStateChange()
    await this.#replicaStateMachine.handleStateChanges(notForDeletion, 'OfflineReplica')
    if (forDeletion.length > 0) await this.#deletion.failReplicaDeletion(forDeletion)
    // Nothing changed leadership or ISR: tell the brokers about the dead ones anyway.
    if (notForDeletion.length === 0 && [...elections.values()].every((e) => !e.ok)) this.#sendUpdateMetadata(ctx.liveOrShuttingDownBrokerIds(), [])
  }

  // ---------------------------------------------------------------- log dir failures

  /**
   * Kafka's processLogDirEventNotification: a broker reported a log dir event (a failed dir, or in Skein
   * also one back after a full disk). Every replica on it is sent LeaderAndIsr again: the online ones
   * through the replica state machine (OnlineReplica), those counted offline on a failed dir directly,
   * keeping their state until the answer; replicas on a failed dir answer KAFKA_STORAGE_ERROR and
   * onLeaderAndIsrResponse takes them offline, those that answer without it are online again.
   */
  async #processLogDirEvents(): Promise<void> {
    if (!this.isActive) return
    const events = await this.options.store.getLogDirEvents()
    if (events.length === 0) return
    const brokers = new Set(events.map((e) => e.brokerId).filter((id) => this.context.liveBrokers.has(id)))
    await this.options.store.removeLogDirEvents(this.#token(), events.map((e) => e.name))
    if (brokers.size === 0) return
    this.#log.info({ brokers: [...brokers] }, 'log dir event reported')
    const ctx = this.context
    const onBrokers = ctx.replicasOnBrokers(brokers).filter((r) => !ctx.isTopicQueuedUpForDeletion(r.topic))
    const replicas = onBrokers.filter((r) => ctx.replicaState(r) === 'OnlineReplica')
    await this.#replicaStateMachine.handleStateChanges(replicas, 'OnlineReplica')
    const onOfflineDirs = onBrokers.filter((r) => ctx.replicaState(r) === 'OfflineReplica' && ctx.replicasOnOfflineDirs.get(r.replica)?.has(partitionKey(r.topic, r.partition)) === true)
    if (onOfflineDirs.length > 0) {
      this.#batch.newBatch()
      for (const r of onOfflineDirs) {
        const state = ctx.leadershipOf(r)
        if (state !== undefined) this.#batch.addLeaderAndIsr([r.replica], r, state, false)
      }
      this.#batch.send()
    }
    // Deletions waiting for replicas on a failed dir try again (those still offline answer KAFKA_STORAGE_ERROR
    // and wait for the next event).
    const deleting = new Set(ctx.replicasOnBrokers(brokers).filter((r) => ctx.isTopicQueuedUpForDeletion(r.topic)).map((r) => r.topic))
    if (deleting.size > 0) await this.#deletion.resumeDeletionForTopics(deleting)
  }

  /**
   * Kafka's processLeaderAndIsrResponseReceived: replicas a broker answered KAFKA_STORAGE_ERROR for are
   * offline (onReplicasBecomeOffline); replicas counted offline that now answer without error are back
   * (a dir recovered from a full disk): online again, a leader elected where none was left, and every
   * broker told their new offline-replica lists.
   */
  async #onLeaderAndIsrResponse(brokerId: number, response: ControlResponse): Promise<void> {
    if (!this.isActive || !this.context.liveBrokers.has(brokerId)) return
    const ctx = this.context
    let offline = ctx.replicasOnOfflineDirs.get(brokerId)
    if (offline === undefined) ctx.replicasOnOfflineDirs.set(brokerId, (offline = new Set()))
    const newly: PartitionReplica[] = []
    const back: PartitionReplica[] = []
    for (const e of response.partitionErrors) {
      const key = partitionKey(e.topic, e.partition)
      if (e.errorCode === ErrorCode.NONE) {
        if (offline.delete(key)) back.push({ topic: e.topic, partition: e.partition, replica: brokerId })
        continue
      }
      if (e.errorCode !== ErrorCode.KAFKA_STORAGE_ERROR) continue
      if (offline.has(key) || ctx.assignment(e) === undefined) continue
      offline.add(key)
      newly.push({ topic: e.topic, partition: e.partition, replica: brokerId })
    }
    if (offline.size === 0) ctx.replicasOnOfflineDirs.delete(brokerId)
    if (newly.length > 0) {
      this.#log.warn({ brokerId, replicas: newly.length, partitions: newly.slice(0, 10).map((r) => `${r.topic}-${r.partition}`) }, 'replicas on a failed log dir are offline')
      await this.#onReplicasBecomeOffline(newly)
    }
    if (back.length > 0) {
      this.#log.info({ brokerId, replicas: back.length, partitions: back.slice(0, 10).map((r) => `${r.topic}-${r.partition}`) }, 'replicas on a recovered log dir are online again')
      // They were sent LeaderAndIsr already (the log dir event): no second request, only their state.
      for (const r of back) if (ctx.replicaState(r) === 'OfflineReplica') ctx.putReplicaState(r, 'OnlineReplica')
      const elections = await this.#partitionStateMachine.triggerOnlinePartitionStateChange()
      const elected = new Set([...elections].filter(([, e]) => e.ok).map(([k]) => k))
      this.#sendUpdateMetadata(ctx.liveOrShuttingDownBrokerIds(), back.filter((r) => !elected.has(partitionKey(r.topic, r.partition))))
    }
  }

  // ---------------------------------------------------------------- topics

  async #processTopicChange(): Promise<void> {
    if (!this.isActive) return
    const ctx = this.context
    const { store } = this.options
    const topics = new Set(await store.getTopicNames())
    const added = [...topics].filter((t) => !ctx.allTopics.has(t))
    const deleted = [...ctx.allTopics].filter((t) => !topics.has(t))
    for (const t of deleted) {
      this.#unwatchTopic(t)
      ctx.removeTopic(t)
    }
    if (added.length === 0) return
    for (const t of added) {
      ctx.allTopics.add(t)
      this.#watchTopic(t)
    }
    const assignments = await store.getTopicAssignments(added)
    await this.#processTopicIds(assignments)
    const newPartitions: TopicPartition[] = []
    for (const a of assignments.values()) {
      a.partitions.forEach((r, partition) => {
        ctx.setAssignment({ topic: a.name, partition }, r)
        newPartitions.push({ topic: a.name, partition })
      })
    }
    this.#log.info({ topics: added, partitions: newPartitions.length }, 'new topics')
    await this.#onNewPartitionCreation(newPartitions)
  }

  /**
   * Takes new partitions online (Kafka's onNewPartitionCreation): each step over all of them at once, as
   * Kafka does, so the store is written once per step; the state machines run their loops in ~SLICE_MS
   * slices and send the requests collected at each pause, so a topic of 100,000 partitions holds the event
   * loop for no longer than a slice at a time. (Chunking the partitions instead wrote the store once per
   * chunk: the embedded store rewrites its whole file per write, so 20,000 partitions took 559 s.)
   */
  async #onNewPartitionCreation(partitions: TopicPartition[]): Promise<void> {
    if (partitions.length === 0) return
    const replicas: PartitionReplica[] = []
    const slices = new MainThreadSlices()
    for (const tp of partitions) {
      const pause = slices.turn()
      if (pause !== undefined) await pause
      for (const replica of this.context.replicasOf(tp)) replicas.push({ topic: tp.topic, partition: tp.partition, replica })
    }
    await this.#partitionStateMachine.handleStateChanges(partitions, 'NewPartition')
    await this.#replicaStateMachine.handleStateChanges(replicas, 'NewReplica')
    await this.#partitionStateMachine.handleStateChanges(partitions, 'OnlinePartition', { kind: 'offline', allowUnclean: false })
    await this.#replicaStateMachine.handleStateChanges(replicas, 'OnlineReplica')
  }

  async #processPartitionModifications(topic: string): Promise<void> {
    if (!this.isActive) return
    const ctx = this.context
    const assignment = (await this.options.store.getTopicAssignments([topic])).get(topic)
    if (assignment === undefined) return
    const added: TopicPartition[] = []
    assignment.partitions.forEach((_r, partition) => {
      if (ctx.assignment({ topic, partition }) === undefined) added.push({ topic, partition })
    })
    if (added.length === 0) return
    if (this.#deletion.isTopicQueuedUpForDeletion(topic)) {
      this.#log.warn({ topic, partitions: added.map((p) => p.partition) }, 'not adding partitions to a topic being deleted')
      return
    }
    for (const tp of added) ctx.setAssignment(tp, assignment.partitions[tp.partition]!)
    this.#log.info({ topic, partitions: added.map((p) => p.partition) }, 'new partitions')
    await this.#onNewPartitionCreation(added)
  }

  async #processTopicDeletion(): Promise<void> {
    if (!this.isActive) return
    const ctx = this.context
    const { store } = this.options
    const queued = await store.getTopicDeletions()
    const nonExistent = queued.filter((t) => !ctx.allTopics.has(t))
    if (nonExistent.length > 0) {
      this.#log.warn({ topics: nonExistent }, 'ignoring deletion of topics that do not exist')
      await store.removeTopicDeletions(this.#token(), nonExistent)
    }
    const toDelete = queued.filter((t) => ctx.allTopics.has(t))
    if (toDelete.length === 0) return
    if (!this.options.config().getBoolean('delete.topic.enable')) {
      this.#log.info({ topics: toDelete }, 'topic deletion is disabled (delete.topic.enable=false): dropping the requests')
      await store.removeTopicDeletions(this.#token(), toDelete)
      return
    }
    const fresh = toDelete.filter((t) => !ctx.topicsToBeDeleted.has(t))
    if (fresh.length === 0) return
    this.#log.info({ topics: fresh }, 'starting topic deletion')
    await this.#deletion.enqueueTopicsForDeletion(fresh)
  }

  async #onStopReplicaResponse(brokerId: number, deleting: Set<string>, response: ControlResponse): Promise<void> {
    if (!this.isActive) return
    const errors = new Map<string, number>()
    for (const p of response.partitionErrors) errors.set(partitionKey(p.topic, p.partition), response.errorCode !== ErrorCode.NONE ? response.errorCode : p.errorCode)
    const failed: PartitionReplica[] = []
    const succeeded: PartitionReplica[] = []
    for (const key of deleting) {
      const i = key.lastIndexOf(':')
      const r = { topic: key.slice(0, i), partition: Number(key.slice(i + 1)), replica: brokerId }
      const code = response.errorCode !== ErrorCode.NONE ? response.errorCode : (errors.get(key) ?? ErrorCode.NONE)
      if (code === ErrorCode.NONE) succeeded.push(r)
      else failed.push(r)
    }
    if (failed.length > 0) await this.#deletion.failReplicaDeletion(failed)
    if (succeeded.length > 0) await this.#deletion.completeReplicaDeletion(succeeded)
  }

  async #uncleanLeaderElection(topics: readonly string[]): Promise<Map<string, boolean>> {
    const fallback = this.options.config().getBoolean('unclean.leader.election.enable')
    const out = new Map<string, boolean>()
    for (const t of topics) {
      try {
        const value = (await this.options.store.getEntityConfig('topics', t))['unclean.leader.election.enable']
        out.set(t, value === undefined ? fallback : value.trim().toLowerCase() === 'true')
      } catch (err) {
        this.#log.warn({ topic: t, err: (err as Error).message }, 'cannot read the topic config; no unclean election')
        out.set(t, false)
      }
    }
    return out
  }

  // ---------------------------------------------------------------- requests from brokers

  async #processControlledShutdown(brokerId: number, brokerEpoch: bigint): Promise<ControlledShutdownResult> {
    if (!this.isActive) return { errorCode: ErrorCode.NOT_CONTROLLER, remaining: [] }
    const ctx = this.context
    const cached = ctx.liveBrokers.get(brokerId)
    if (brokerEpoch !== -1n && cached !== undefined && brokerEpoch < cached.epoch) return { errorCode: ErrorCode.STALE_BROKER_EPOCH, remaining: [] }
    if (cached === undefined) return { errorCode: ErrorCode.BROKER_NOT_AVAILABLE, remaining: [] }
    ctx.shuttingDownBrokerIds.add(brokerId)
    this.#log.info({ brokerId }, 'controlled shutdown')
    const toActOn = ctx.partitionsOnBroker(brokerId).filter((tp) => ctx.replicasOf(tp).length > 1 && ctx.leadershipOf(tp) !== undefined && !this.#deletion.isTopicQueuedUpForDeletion(tp.topic))
    const led = toActOn.filter((tp) => ctx.leadershipOf(tp)!.leaderAndIsr.leader === brokerId)
    const followed = toActOn.filter((tp) => ctx.leadershipOf(tp)!.leaderAndIsr.leader !== brokerId)
    const moved = await this.#partitionStateMachine.handleStateChanges(led, 'OnlinePartition', { kind: 'controlledShutdown' })
    this.#batch.newBatch()
    // It stops following too, and stops the replicas it led that have a new leader (it does not follow
    // them: it is leaving). Its logs stay for when it returns.
    for (const tp of followed) this.#batch.addStopReplica([brokerId], tp, false)
    for (const tp of led) if (moved.get(partitionKey(tp.topic, tp.partition))?.ok === true) this.#batch.addStopReplica([brokerId], tp, false)
    this.#batch.send()
    await this.#replicaStateMachine.handleStateChanges(followed.map((tp) => ({ ...tp, replica: brokerId })), 'OfflineReplica')
    return { errorCode: ErrorCode.NONE, remaining: ctx.partitionLeadersOnBroker(brokerId) }
  }

  async #processAlterPartition(request: AlterPartition.AlterPartitionRequest, version: number): Promise<AlterPartition.AlterPartitionResponse> {
    if (!this.isActive) return AlterPartition.createAlterPartitionResponse({ errorCode: ErrorCode.NOT_CONTROLLER })
    const ctx = this.context
    const useTopicIds = version >= 2
    const broker = ctx.liveBrokers.get(request.brokerId)
    if (broker === undefined || broker.epoch !== request.brokerEpoch) {
      this.#log.info({ brokerId: request.brokerId, brokerEpoch: String(request.brokerEpoch) }, 'AlterPartition from a broker with an unknown or stale epoch')
      return AlterPartition.createAlterPartitionResponse({ errorCode: ErrorCode.STALE_BROKER_EPOCH })
    }
    type Answer = { errorCode: number; state?: LeaderAndIsr }
    const answers = new Map<string, Answer>()
    const order: { topicName: string; topicId: string; partition: number; key: string }[] = []
    const toWrite: { tp: TopicPartition; leaderAndIsr: LeaderAndIsr }[] = []
    for (const t of request.topics) {
      const name = useTopicIds ? ctx.topicNamesById.get(t.topicId) : t.topicName
      for (const p of t.partitions) {
        const key = name === undefined ? `id:${t.topicId}:${p.partitionIndex}` : partitionKey(name, p.partitionIndex)
        order.push({ topicName: name ?? '', topicId: t.topicId, partition: p.partitionIndex, key })
        if (name === undefined) {
          answers.set(key, { errorCode: ErrorCode.UNKNOWN_TOPIC_ID })
          continue
        }
        const tp = { topic: name, partition: p.partitionIndex }
        const isr = version >= 3 ? p.newIsrWithEpochs.map((b) => b.brokerId) : p.newIsr
        const proposed: LeaderAndIsr = { leader: request.brokerId, leaderEpoch: p.leaderEpoch, isr, leaderRecoveryState: p.leaderRecoveryState, partitionEpoch: p.partitionEpoch }
        const current = ctx.leadershipOf(tp)?.leaderAndIsr
        if (current === undefined) {
          answers.set(key, { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
        } else if (proposed.partitionEpoch > current.partitionEpoch || proposed.leaderEpoch > current.leaderEpoch) {
          // Newer than what this controller wrote: it is probably no longer the controller.
          answers.set(key, { errorCode: ErrorCode.NOT_CONTROLLER })
        } else if (proposed.leaderEpoch < current.leaderEpoch) {
          answers.set(key, { errorCode: ErrorCode.FENCED_LEADER_EPOCH })
        } else if (sameLeaderAndIsr(proposed, current)) {
          // Already so: answered as done, before the partition epoch check (a retried request).
          answers.set(key, { errorCode: ErrorCode.NONE, state: current })
        } else if (proposed.partitionEpoch < current.partitionEpoch) {
          answers.set(key, { errorCode: ErrorCode.INVALID_UPDATE_VERSION })
        } else if (proposed.leaderRecoveryState === LeaderRecoveryState.RECOVERING && proposed.isr.length > 1) {
          answers.set(key, { errorCode: ErrorCode.INVALID_REQUEST })
        } else if (current.leaderRecoveryState === LeaderRecoveryState.RECOVERED && proposed.leaderRecoveryState === LeaderRecoveryState.RECOVERING) {
          answers.set(key, { errorCode: ErrorCode.INVALID_REQUEST })
        } else if (proposed.isr.some((r) => !ctx.isReplicaOnlineFor(r, tp) && !(r === request.brokerId && current.isr.includes(r))) || staleIsrEpochs(version, p.newIsrWithEpochs, ctx)) {
          // KIP-841: only live brokers (with the epoch given, KIP-903) may be in the ISR, and not those in a
          // controlled shutdown (Kafka's liveBrokerIds leaves them out): a broker leaving would otherwise be
          // added back by its leader while it still fetches, and acks=all would wait for it once it stops.
          // Nor a replica on a log dir its broker reported failed (Kafka's isReplicaOnline(broker, partition)):
          // a follower fetch sent before the dir failed could otherwise put it back, and acks=all would wait
          // for it until replica.lag.time.max.ms.
          answers.set(key, { errorCode: ErrorCode.INELIGIBLE_REPLICA })
        } else {
          toWrite.push({ tp, leaderAndIsr: proposed })
        }
      }
    }
    if (toWrite.length > 0) {
      const result = await this.options.store.updatePartitionStates(
        this.#token(),
        toWrite.map(({ tp, leaderAndIsr }) => ({ ...tp, state: { leaderAndIsr, controllerEpoch: ctx.epoch } })),
      )
      const changed: TopicPartition[] = []
      for (const { tp } of toWrite) {
        const key = partitionKey(tp.topic, tp.partition)
        const written = result.updated.get(key)
        if (written !== undefined) {
          ctx.putLeadership(tp, { leaderAndIsr: written, controllerEpoch: ctx.epoch })
          answers.set(key, { errorCode: ErrorCode.NONE, state: written })
          changed.push(tp)
        } else if (result.badVersion.includes(key)) {
          answers.set(key, { errorCode: ErrorCode.INVALID_UPDATE_VERSION })
        } else {
          answers.set(key, { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR })
        }
      }
      // Every broker learns the new ISR (the leader already knows it from the answer).
      if (changed.length > 0) this.#sendUpdateMetadata(ctx.liveOrShuttingDownBrokerIds(), changed)
      // A reassignment whose target replicas are all in sync now completes (after this answer's state is
      // queued: the leader learns the completion from the LeaderAndIsr that follows).
      const reassigning = changed.filter((tp) => this.#reassignment.isReassigning(tp))
      if (reassigning.length > 0) this.#put('PartitionReassignmentIsrChange', () => this.#reassignment.onIsrChange(reassigning))
    }
    const topics = new Map<string, AlterPartition.ResponseTopicData>()
    for (const o of order) {
      const topicKey = useTopicIds ? o.topicId : o.topicName
      let topic = topics.get(topicKey)
      if (topic === undefined) {
        topic = AlterPartition.createResponseTopicData({ topicName: o.topicName, topicId: useTopicIds ? o.topicId : ZERO_UUID, partitions: [] })
        topics.set(topicKey, topic)
      }
      const a = answers.get(o.key)!
      topic.partitions.push(
        AlterPartition.createResponsePartitionData({
          partitionIndex: o.partition,
          errorCode: a.errorCode,
          leaderId: a.state?.leader ?? -1,
          leaderEpoch: a.state?.leaderEpoch ?? -1,
          isr: a.state === undefined ? [] : [...a.state.isr],
          leaderRecoveryState: a.state?.leaderRecoveryState ?? 0,
          partitionEpoch: a.state?.partitionEpoch ?? -1,
        }),
      )
    }
    return AlterPartition.createAlterPartitionResponse({ errorCode: ErrorCode.NONE, topics: [...topics.values()] })
  }

  // ---------------------------------------------------------------- preferred leaders

  /**
   * ElectLeaders, as Kafka's ZooKeeper-mode controller answers it per partition: unknown ->
   * UNKNOWN_TOPIC_OR_PARTITION; a topic being deleted -> INVALID_TOPIC_EXCEPTION; PREFERRED: led by its
   * preferred replica already -> ELECTION_NOT_NEEDED, the preferred replica not live or not in the ISR ->
   * PREFERRED_LEADER_NOT_AVAILABLE; UNCLEAN: a live leader already -> ELECTION_NOT_NEEDED, no live
   * replica at all -> ELIGIBLE_LEADERS_NOT_AVAILABLE (a live in-ISR replica is chosen first, else the
   * first live one, whatever unclean.leader.election.enable says: the operator asked for it).
   */
  async #processReplicaLeaderElection(electionType: number, partitions: readonly TopicPartition[] | null): Promise<Map<string, ElectionAnswer>> {
    const ctx = this.context
    const out = new Map<string, ElectionAnswer>()
    const list = partitions ?? ctx.allPartitions()
    const toElect: TopicPartition[] = []
    for (const tp of list) {
      const key = partitionKey(tp.topic, tp.partition)
      const leadership = ctx.leadershipOf(tp)
      if (ctx.assignment(tp) === undefined || leadership === undefined) {
        out.set(key, { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `The partition ${tp.topic}-${tp.partition} does not exist.` })
      } else if (this.#deletion.isTopicQueuedUpForDeletion(tp.topic)) {
        out.set(key, { errorCode: ErrorCode.INVALID_TOPIC_EXCEPTION, errorMessage: `Deletion of topic ${tp.topic} is in progress.` })
      } else if (electionType === ElectionType.PREFERRED && leadership.leaderAndIsr.leader === ctx.replicasOf(tp)[0]) {
        out.set(key, { errorCode: ErrorCode.ELECTION_NOT_NEEDED, errorMessage: 'Leader election not needed for topic partition.' })
      } else if (electionType === ElectionType.UNCLEAN && ctx.isReplicaOnline(leadership.leaderAndIsr.leader)) {
        out.set(key, { errorCode: ErrorCode.ELECTION_NOT_NEEDED, errorMessage: 'Leader election not needed for topic partition.' })
      } else {
        toElect.push(tp)
      }
    }
    if (toElect.length === 0) return out
    this.#log.info({ type: electionType === ElectionType.PREFERRED ? 'PREFERRED' : 'UNCLEAN', partitions: toElect.length }, 'leader election requested')
    const strategy = electionType === ElectionType.PREFERRED ? ({ kind: 'preferred' } as const) : ({ kind: 'offline', allowUnclean: true } as const)
    if (electionType === ElectionType.UNCLEAN) await this.#partitionStateMachine.handleStateChanges(toElect.filter((tp) => ctx.partitionState(tp) === 'OnlinePartition'), 'OfflinePartition')
    const results = await this.#partitionStateMachine.handleStateChanges(toElect, 'OnlinePartition', strategy)
    for (const tp of toElect) {
      const key = partitionKey(tp.topic, tp.partition)
      const r = results.get(key)
      if (r?.ok === true) out.set(key, { errorCode: ErrorCode.NONE, errorMessage: null })
      else if (electionType === ElectionType.PREFERRED) {
        out.set(key, { errorCode: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, errorMessage: `Failed to elect leader for partition ${tp.topic}-${tp.partition} under strategy PreferredReplicaPartitionLeaderElectionStrategy` })
      } else {
        out.set(key, { errorCode: ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, errorMessage: `Failed to elect leader for partition ${tp.topic}-${tp.partition} under strategy OfflinePartitionLeaderElectionStrategy(true)` })
      }
    }
    return out
  }

  #scheduleRebalance(delayMs: number): void {
    clearTimeout(this.#rebalanceTimer)
    if (!this.options.config().getBoolean('auto.leader.rebalance.enable')) return
    this.#rebalanceTimer = setTimeout(() => this.#put('AutoPreferredReplicaLeaderElection', () => this.#checkAndTriggerAutoLeaderRebalance()), delayMs)
    this.#rebalanceTimer.unref()
  }

  /**
   * For each broker, when the share of the partitions preferring it (assignment head) that another broker
   * leads is above leader.imbalance.per.broker.percentage, those whose preferred replica is live and in the
   * ISR elect it again.
   */
  async #checkAndTriggerAutoLeaderRebalance(): Promise<void> {
    if (!this.isActive) return
    const ctx = this.context
    const config = this.options.config()
    try {
      const byPreferred = new Map<number, TopicPartition[]>()
      for (const tp of ctx.allPartitions()) {
        if (this.#deletion.isTopicQueuedUpForDeletion(tp.topic) || this.#reassignment.isReassigning(tp)) continue
        const preferred = ctx.replicasOf(tp)[0]
        if (preferred === undefined) continue
        let list = byPreferred.get(preferred)
        if (list === undefined) byPreferred.set(preferred, (list = []))
        list.push(tp)
      }
      const threshold = config.getInt('leader.imbalance.per.broker.percentage') / 100
      for (const [preferred, partitions] of byPreferred) {
        const notLed = partitions.filter((tp) => {
          const l = ctx.leadershipOf(tp)
          return l !== undefined && l.leaderAndIsr.leader !== preferred
        })
        if (notLed.length / partitions.length <= threshold) continue
        const candidates = notLed.filter((tp) => ctx.isReplicaOnline(preferred) && ctx.leadershipOf(tp)!.leaderAndIsr.isr.includes(preferred))
        if (candidates.length === 0) continue
        this.#log.info({ broker: preferred, partitions: candidates.length }, 'preferred replica leader election')
        await this.#partitionStateMachine.handleStateChanges(candidates, 'OnlinePartition', { kind: 'preferred' })
      }
    } finally {
      if (this.isActive) this.#scheduleRebalance(config.getInt('leader.imbalance.check.interval.seconds') * 1000)
    }
  }
}

function sameLeaderAndIsr(a: LeaderAndIsr, b: LeaderAndIsr): boolean {
  return a.leader === b.leader && a.leaderEpoch === b.leaderEpoch && a.leaderRecoveryState === b.leaderRecoveryState && a.isr.length === b.isr.length && a.isr.every((r, i) => r === b.isr[i])
}

function staleIsrEpochs(version: number, brokers: readonly AlterPartition.BrokerState[], ctx: ControllerContext): boolean {
  if (version < 3) return false
  return brokers.some((b) => b.brokerEpoch !== -1n && ctx.liveBrokers.get(b.brokerId)?.epoch !== b.brokerEpoch)
}
