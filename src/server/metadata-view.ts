// The cluster as this broker sees it, read-only (the handlers' MetadataView): the brokers and their
// endpoints per listener, the topics, and who leads each partition at which epoch. One broker is the
// whole cluster today: it is the controller, and every partition's leader, sole replica and sole ISR
// member at epoch 0. The cluster layer replaces this with a metadata image fed by the controller.
import type { BrokerConfig } from '../config/index.js'
import type { BrokerEndpoint } from './broker.js'
import type { BrokerNode, MetadataView, PartitionLeadership, TopicInfo } from './handlers/common/ports.js'
import { LEADER_EPOCH } from './replica-manager.js'
import { INTERNAL_TOPICS, type TopicManager } from './topics.js'
import { validateTopicName } from '../storage/index.js'

export class BrokerMetadataView implements MetadataView {
  /** The same answer for every partition here; nobody writes to it. */
  readonly #localLeadership: PartitionLeadership

  constructor(
    readonly nodeId: number,
    readonly clusterId: string,
    /** Where clients of a listener reach this broker (advertised.listeners). */
    private readonly endpointFor: (listenerName: string) => BrokerEndpoint,
    private readonly topicManager: TopicManager,
    private readonly config: () => BrokerConfig,
  ) {
    this.#localLeadership = Object.freeze({
      leaderId: nodeId,
      leaderEpoch: LEADER_EPOCH,
      replicas: Object.freeze([nodeId]),
      isr: Object.freeze([nodeId]),
      offlineReplicas: Object.freeze([]),
    })
  }

  /** The single broker is its own controller. */
  get controllerId(): number {
    return this.nodeId
  }

  brokers(listenerName: string): BrokerNode[] {
    return [this.localBroker(listenerName)]
  }

  localBroker(listenerName: string): BrokerNode {
    const endpoint = this.endpointFor(listenerName)
    return { nodeId: this.nodeId, host: endpoint.host, port: endpoint.port, rack: this.config().getString('broker.rack') }
  }

  topic(name: string): TopicInfo | undefined {
    return this.topicManager.get(name)
  }

  topicById(topicId: string): TopicInfo | undefined {
    return this.topicManager.getById(topicId)
  }

  topics(): readonly TopicInfo[] {
    return this.topicManager.list()
  }

  isInternalTopic(name: string): boolean {
    return INTERNAL_TOPICS.has(name)
  }

  validateTopicName(name: string): void {
    validateTopicName(name)
  }

  partition(topic: string, partition: number): PartitionLeadership | undefined {
    const t = this.topicManager.get(topic)
    if (t === undefined || partition < 0 || partition >= t.partitions) return undefined
    return this.#localLeadership
  }
}
