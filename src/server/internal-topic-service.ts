// The lifecycle both coordinators share: their internal topic (__consumer_offsets,
// __transaction_state) is created on first use — never by a client's Metadata auto-creation, as in
// Kafka — or found at startup, and the coordinator over it is built once, replays its partitions (in
// the background when the topic already existed) and is closed first when the broker stops.
import type { TopicInfo } from './handlers/common/ports.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { Broker } from './broker.js'

export interface InternalCoordinator {
  loadAll(): Promise<unknown>
  close(): void
}

export interface InternalTopicSpec {
  numPartitions: number
  replicationFactor: number
  configs: Record<string, string>
}

export abstract class InternalTopicService<C extends InternalCoordinator> {
  #starting: Promise<C> | undefined
  #coordinator: C | undefined
  #closed = false

  constructor(
    protected readonly broker: Broker,
    readonly topicName: string,
  ) {}

  /** How the topic is created (from the broker's config at that moment). */
  protected abstract topicSpec(): InternalTopicSpec

  /** The coordinator over the topic; its partition count decides placement, whatever the config says now. */
  protected abstract build(topic: TopicInfo): C

  /** At startup: if the topic exists, start coordinating it now (replay in the background). */
  startIfPresent(): void {
    if (this.broker.topics.get(this.topicName) === undefined) return
    this.coordinator().catch((err: unknown) => this.broker.log.error({ err: (err as Error)?.message, topic: this.topicName }, 'cannot start the coordinator'))
  }

  /** The coordinator, once the topic exists (created now if needed). */
  coordinator(): Promise<C> {
    if (this.#closed) return Promise.reject(new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down'))
    if (this.#starting === undefined) {
      this.#starting = this.#start()
      // A failed start (the topic could not be created) is retried by the next request.
      this.#starting.catch(() => {
        this.#starting = undefined
      })
    }
    return this.#starting
  }

  /** The coordinator if it is running (requests that must not create the topic, the library API, tests). */
  get current(): C | undefined {
    return this.#coordinator
  }

  topicExists(): boolean {
    return this.broker.topics.get(this.topicName) !== undefined
  }

  close(): void {
    this.#closed = true
    this.#coordinator?.close()
  }

  async #start(): Promise<C> {
    const { broker, topicName } = this
    let topic: TopicInfo | undefined = broker.topics.get(topicName)
    const created = topic === undefined
    if (topic === undefined) {
      try {
        topic = await broker.topics.create({ name: topicName, ...this.topicSpec(), validateOnly: false })
      } catch (err) {
        topic = broker.topics.get(topicName)
        if (topic === undefined) {
          broker.log.error({ err: (err as Error).message }, `cannot create ${topicName}`)
          throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `cannot create ${topicName}: ${(err as Error).message}`)
        }
      }
    }
    if (this.#closed) throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down')
    const coordinator = this.build(topic)
    this.#coordinator = coordinator
    const loading = coordinator.loadAll().catch((err: unknown) => broker.log.error({ err: (err as Error)?.message }, `loading ${topicName} failed`))
    // A new topic is empty: wait for the (instant) load so the first request is served, not told to retry.
    if (created) await loading
    return coordinator
  }
}
