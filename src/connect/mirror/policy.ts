// Replication policies (Kafka's ReplicationPolicy): how remote topics are named and recognised.
// DefaultReplicationPolicy names a topic mirrored from cluster `us-west` `us-west.<topic>` (separator
// replication.policy.separator, default "."), so its source can be read back from the name, which is
// what keeps A<->B replication from looping: a topic whose name says it came from the target cluster is
// never mirrored back. IdentityReplicationPolicy keeps names (one-way replication only: it cannot see
// cycles, except for heartbeats).

export interface ReplicationPolicy {
  formatRemoteTopic(sourceClusterAlias: string, topic: string): string
  /** The source cluster of a remote topic ("us-west" for "us-west.topic1"), or null. */
  topicSource(topic: string): string | null
  /** The topic on the source cluster ("topic1" for "us-west.topic1"), or null. */
  upstreamTopic(topic: string): string | null
  heartbeatsTopic(): string
  offsetSyncsTopic(clusterAlias: string): string
  checkpointsTopic(clusterAlias: string): string
  isCheckpointsTopic(topic: string): boolean
  isMM2InternalTopic(topic: string): boolean
}

/** The topic a (possibly multi-hop) remote topic started as. */
export function originalTopic(policy: ReplicationPolicy, topic: string): string {
  for (let t = topic, hops = 0; hops < 1000; hops++) {
    const up = policy.upstreamTopic(t)
    if (up === null || up === t) return t
    t = up
  }
  return topic
}

export function isHeartbeatsTopic(policy: ReplicationPolicy, topic: string): boolean {
  return policy.heartbeatsTopic() === originalTopic(policy, topic)
}

/** Internal topics are never replicated: Kafka's (`__*`, `.*`), Connect's and MM2's (`*.internal`, `*-internal`). */
export function isInternalTopic(policy: ReplicationPolicy, topic: string): boolean {
  return policy.isMM2InternalTopic(topic) || topic.startsWith('__') || topic.startsWith('.') || topic.endsWith('-internal') || topic.endsWith('.internal')
}

export interface PolicyOptions {
  /** replication.policy.separator */
  separator?: string
  /** replication.policy.internal.topic.separator.enabled */
  internalTopicSeparatorEnabled?: boolean
  /** The heartbeats topic's name; default "heartbeats". */
  heartbeatsTopic?: string
}

export class DefaultReplicationPolicy implements ReplicationPolicy {
  readonly separator: string
  private readonly internalSeparator: string
  private readonly heartbeats: string

  constructor(o: PolicyOptions = {}) {
    this.separator = o.separator ?? '.'
    if (this.separator === '') throw new Error('replication.policy.separator must not be empty')
    this.internalSeparator = (o.internalTopicSeparatorEnabled ?? true) ? this.separator : '.'
    this.heartbeats = o.heartbeatsTopic ?? 'heartbeats'
  }

  formatRemoteTopic(sourceClusterAlias: string, topic: string): string {
    return sourceClusterAlias + this.separator + topic
  }

  topicSource(topic: string): string | null {
    const i = topic.indexOf(this.separator)
    // Java's String.split drops trailing empty strings: "a." or "." alone has fewer than two parts.
    if (i < 0 || topic.slice(i + this.separator.length).split(this.separator).every((p) => p === '')) return null
    return topic.slice(0, i)
  }

  upstreamTopic(topic: string): string | null {
    const source = this.topicSource(topic)
    return source === null ? null : topic.slice(source.length + this.separator.length)
  }

  heartbeatsTopic(): string {
    return this.heartbeats
  }

  private internalSuffix(): string {
    return `${this.internalSeparator}internal`
  }

  offsetSyncsTopic(clusterAlias: string): string {
    return `mm2-offset-syncs${this.internalSeparator}${clusterAlias}${this.internalSuffix()}`
  }

  checkpointsTopic(clusterAlias: string): string {
    return `${clusterAlias}${this.internalSeparator}checkpoints${this.internalSuffix()}`
  }

  isCheckpointsTopic(topic: string): boolean {
    return topic.endsWith(`${this.internalSeparator}checkpoints${this.internalSuffix()}`)
  }

  isMM2InternalTopic(topic: string): boolean {
    return topic.endsWith(this.internalSuffix())
  }
}

/** Keeps topic names (Kafka's IdentityReplicationPolicy): heartbeats still get the source prefix. */
export class IdentityReplicationPolicy extends DefaultReplicationPolicy {
  override formatRemoteTopic(sourceClusterAlias: string, topic: string): string {
    return this.looksLikeHeartbeat(topic) ? super.formatRemoteTopic(sourceClusterAlias, topic) : topic
  }

  override topicSource(topic: string): string | null {
    return this.looksLikeHeartbeat(topic) ? super.topicSource(topic) : null
  }

  override upstreamTopic(topic: string): string | null {
    return this.looksLikeHeartbeat(topic) ? super.upstreamTopic(topic) : null
  }

  private looksLikeHeartbeat(topic: string): boolean {
    return topic === this.heartbeatsTopic() || topic.endsWith(this.separator + this.heartbeatsTopic())
  }
}

export const REPLICATION_POLICY_CLASSES: Record<string, new (o: PolicyOptions) => ReplicationPolicy> = {
  'org.apache.kafka.connect.mirror.DefaultReplicationPolicy': DefaultReplicationPolicy,
  DefaultReplicationPolicy,
  'org.apache.kafka.connect.mirror.IdentityReplicationPolicy': IdentityReplicationPolicy,
  IdentityReplicationPolicy,
}
