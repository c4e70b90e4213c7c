// Topic deletion (Kafka's TopicDeletionManager). A topic queued in the store (/admin/delete_topics/<t>)
// is deleted in steps the controller drives:
// 1. UpdateMetadata with leader -2 (LeaderDuringDelete) for its partitions: brokers drop it from their
//    metadata at once; its partitions go Offline -> NonExistent.
// 2. Its live replicas go OfflineReplica (StopReplica, out of the ISR) then ReplicaDeletionStarted
//    (StopReplica delete=true); replicas on dead brokers are ReplicaDeletionIneligible and the topic waits.
// 3. Each broker's StopReplica answer moves its replicas to ReplicaDeletionSuccessful (or Ineligible on an
//    error: retried). When every replica succeeded, the topic's assignment, states, config and queue entry
//    are removed from the store and from the controller.
// A dead broker's replicas block the topic until it registers again; a controller failover starts over
// from the queue in the store.
import type { Logger } from '../../observability/logger.js'
import type { MetadataStore } from '../metadata-store.js'
import type { ControllerContext, PartitionReplica } from './context.js'
import type { PartitionStateMachine } from './partition-state-machine.js'
import type { ReplicaStateMachine } from './replica-state-machine.js'

export interface TopicDeletionDeps {
  context: ControllerContext
  store: MetadataStore
  partitions: PartitionStateMachine
  replicas: ReplicaStateMachine
  /** delete.topic.enable */
  enabled: () => boolean
  /** UpdateMetadata for these partitions to every live broker. */
  sendMetadataUpdate(partitions: readonly { topic: string; partition: number }[]): Promise<void>
  /** Stops watching a topic's assignment (it is going away). */
  forgetTopic(topic: string): void
  log: Logger
}

export class TopicDeletionManager {
  constructor(private readonly deps: TopicDeletionDeps) {}

  async init(toBeDeleted: ReadonlySet<string>, ineligible: ReadonlySet<string>): Promise<void> {
    const ctx = this.deps.context
    if (this.deps.enabled()) {
      for (const t of toBeDeleted) ctx.topicsToBeDeleted.add(t)
      for (const t of ineligible) if (ctx.topicsToBeDeleted.has(t)) ctx.topicsIneligibleForDeletion.add(t)
    } else if (toBeDeleted.size > 0) {
      await this.deps.store.removeTopicDeletions(token(ctx), [...toBeDeleted])
    }
  }

  async tryTopicDeletion(): Promise<void> {
    if (this.deps.enabled()) await this.#resumeDeletions()
  }

  async enqueueTopicsForDeletion(topics: readonly string[]): Promise<void> {
    if (!this.deps.enabled()) return
    for (const t of topics) this.deps.context.topicsToBeDeleted.add(t)
    await this.#resumeDeletions()
  }

  /** A broker holding replicas of these topics came back: try them again. */
  async resumeDeletionForTopics(topics: ReadonlySet<string>): Promise<void> {
    if (!this.deps.enabled()) return
    const ctx = this.deps.context
    const resume = [...topics].filter((t) => ctx.topicsToBeDeleted.has(t))
    if (resume.length === 0) return
    for (const t of resume) ctx.topicsIneligibleForDeletion.delete(t)
    await this.#resumeDeletions()
  }

  async failReplicaDeletion(replicas: readonly PartitionReplica[]): Promise<void> {
    if (!this.deps.enabled()) return
    const ctx = this.deps.context
    const failed = replicas.filter((r) => ctx.isTopicQueuedUpForDeletion(r.topic))
    if (failed.length === 0) return
    await this.deps.replicas.handleStateChanges(failed, 'ReplicaDeletionIneligible')
    this.markTopicIneligibleForDeletion(new Set(failed.map((r) => r.topic)))
    await this.#resumeDeletions()
  }

  markTopicIneligibleForDeletion(topics: ReadonlySet<string>): void {
    if (!this.deps.enabled()) return
    const ctx = this.deps.context
    for (const t of topics) if (ctx.topicsToBeDeleted.has(t)) ctx.topicsIneligibleForDeletion.add(t)
  }

  isTopicQueuedUpForDeletion(topic: string): boolean {
    return this.deps.enabled() && this.deps.context.isTopicQueuedUpForDeletion(topic)
  }

  async completeReplicaDeletion(replicas: readonly PartitionReplica[]): Promise<void> {
    const ctx = this.deps.context
    const done = replicas.filter((r) => ctx.isTopicQueuedUpForDeletion(r.topic))
    await this.deps.replicas.handleStateChanges(done, 'ReplicaDeletionSuccessful')
    await this.#resumeDeletions()
  }

  #isEligible(topic: string): boolean {
    const ctx = this.deps.context
    return ctx.isTopicQueuedUpForDeletion(topic) && !ctx.isAnyReplicaInState(topic, 'ReplicaDeletionStarted') && !ctx.topicsIneligibleForDeletion.has(topic)
  }

  async #resumeDeletions(): Promise<void> {
    const ctx = this.deps.context
    const retry: string[] = []
    const eligible: string[] = []
    for (const topic of [...ctx.topicsToBeDeleted]) {
      if (ctx.areAllReplicasInState(topic, 'ReplicaDeletionSuccessful')) {
        await this.#completeDeleteTopic(topic)
        this.deps.log.info({ topic }, 'topic deletion completed')
        continue
      }
      if (!ctx.isAnyReplicaInState(topic, 'ReplicaDeletionStarted') && ctx.isAnyReplicaInState(topic, 'ReplicaDeletionIneligible')) retry.push(topic)
      if (this.#isEligible(topic)) {
        this.deps.log.info({ topic }, 'topic deletion (re)started')
        eligible.push(topic)
      }
    }
    for (const topic of retry) {
      const failed = ctx.replicasInState(topic, 'ReplicaDeletionIneligible')
      await this.deps.replicas.handleStateChanges(failed, 'OfflineReplica')
    }
    if (eligible.length > 0) await this.#onTopicDeletion(eligible)
  }

  async #completeDeleteTopic(topic: string): Promise<void> {
    const ctx = this.deps.context
    this.deps.forgetTopic(topic)
    await this.deps.replicas.handleStateChanges(ctx.replicasInState(topic, 'ReplicaDeletionSuccessful'), 'NonExistentReplica')
    const t = token(ctx)
    await this.deps.store.deleteTopic(t, topic)
    await this.deps.store.removeTopicDeletions(t, [topic])
    ctx.removeTopic(topic)
  }

  async #onTopicDeletion(topics: readonly string[]): Promise<void> {
    const ctx = this.deps.context
    const unseen = topics.filter((t) => !ctx.topicsWithDeletionStarted.has(t))
    if (unseen.length > 0) {
      const partitions = unseen.flatMap((t) => ctx.partitionsForTopic(t))
      await this.deps.partitions.handleStateChanges(partitions, 'OfflinePartition')
      await this.deps.partitions.handleStateChanges(partitions, 'NonExistentPartition')
      for (const t of unseen) ctx.topicsWithDeletionStarted.add(t)
    }
    // Brokers stop serving these topics now.
    await this.deps.sendMetadataUpdate(topics.flatMap((t) => ctx.partitionsForTopic(t)))
    await this.#onPartitionDeletion(topics)
  }

  async #onPartitionDeletion(topics: readonly string[]): Promise<void> {
    const ctx = this.deps.context
    const dead: PartitionReplica[] = []
    const retry: PartitionReplica[] = []
    const ineligible = new Set<string>()
    for (const topic of topics) {
      const replicas = ctx.replicasForTopic(topic)
      // A replica on a failed log dir is as dead as one on a dead broker (Kafka's isReplicaOnline(replica, partition)).
      const deadOfTopic = replicas.filter((r) => !ctx.isReplicaOnlineFor(r.replica, r))
      const succeeded = new Set(ctx.replicasInState(topic, 'ReplicaDeletionSuccessful').map((r) => `${r.partition}:${r.replica}`))
      retry.push(...replicas.filter((r) => ctx.isReplicaOnlineFor(r.replica, r) && !succeeded.has(`${r.partition}:${r.replica}`)))
      dead.push(...deadOfTopic)
      if (deadOfTopic.length > 0) ineligible.add(topic)
    }
    await this.deps.replicas.handleStateChanges(dead, 'ReplicaDeletionIneligible')
    await this.deps.replicas.handleStateChanges(retry, 'OfflineReplica')
    await this.deps.replicas.handleStateChanges(retry, 'ReplicaDeletionStarted')
    if (ineligible.size > 0) {
      this.deps.log.info({ topics: [...ineligible] }, 'topic deletion waits for offline replicas to come back')
      this.markTopicIneligibleForDeletion(ineligible)
    }
  }
}

function token(ctx: ControllerContext): { epoch: number; epochVersion: number } {
  return { epoch: ctx.epoch, epochVersion: ctx.epochVersion }
}
