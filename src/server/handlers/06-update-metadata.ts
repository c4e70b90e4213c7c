// UpdateMetadata: v0-8 (controller -> broker)
//
// Behavior:
// * The controller's view of the cluster for this broker's metadata: every live broker with its
//   endpoints and rack (replacing the previous list), and the state of the partitions that changed
//   (leader -2 removes a partition of a topic being deleted). Metadata, DescribeCluster and the admin
//   requests answer from what it sets. Refused with STALE_CONTROLLER_EPOCH / STALE_BROKER_EPOCH like
//   LeaderAndIsr.
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka); then admitted
//   only from the active controller, like LeaderAndIsr (not served at all without ZooKeeper).
// Version notes:
// * v0: one PLAINTEXT endpoint per broker (V0Host/V0Port). v1-2: endpoints named by security protocol
//   (the listener name is the protocol's). v3+: listener names. v4+: offline replicas. v5+: grouped by
//   topic, broker epoch. v6+: flexible. v7+: topic ids. v8: isKRaftController and type (ignored).
import { ErrorCode } from '../../domain/errors.js'
import * as UpdateMetadata from '../../protocol/messages/06-update-metadata.gen.js'
import { mayActAsBroker } from './common/cluster-action.js'
import { defineHandler } from './common/handler.js'

const PROTOCOL_NAMES = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']

export const updateMetadataHandler = defineHandler<UpdateMetadata.UpdateMetadataRequest, UpdateMetadata.UpdateMetadataResponse>({
  api: UpdateMetadata.UpdateMetadataApi,
  minVersion: 0,
  maxVersion: 8,
  decodeRequest: UpdateMetadata.decodeUpdateMetadataRequest,
  encodeResponse: UpdateMetadata.encodeUpdateMetadataResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!mayActAsBroker(ctx)) return UpdateMetadata.createUpdateMetadataResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED })
    const answer = await ctx.control.updateMetadata(newestShape(req, ctx.apiVersion))
    return UpdateMetadata.createUpdateMetadataResponse({ errorCode: answer.errorCode === ErrorCode.NONE ? ErrorCode.NONE : answer.errorCode })
  },
})

function newestShape(req: UpdateMetadata.UpdateMetadataRequest, version: number): UpdateMetadata.UpdateMetadataRequest {
  let { topicStates, liveBrokers } = req
  if (version < 5) {
    const byTopic = new Map<string, UpdateMetadata.UpdateMetadataPartitionState[]>()
    for (const p of req.ungroupedPartitionStates) {
      let list = byTopic.get(p.topicName)
      if (list === undefined) byTopic.set(p.topicName, (list = []))
      list.push(p)
    }
    topicStates = [...byTopic].map(([topicName, partitionStates]) => UpdateMetadata.createUpdateMetadataTopicState({ topicName, partitionStates }))
  }
  if (version === 0) {
    liveBrokers = liveBrokers.map((b) => ({ ...b, endpoints: [UpdateMetadata.createUpdateMetadataEndpoint({ host: b.v0Host, port: b.v0Port, listener: 'PLAINTEXT', securityProtocol: 0 })] }))
  } else if (version < 3) {
    liveBrokers = liveBrokers.map((b) => ({ ...b, endpoints: b.endpoints.map((e) => ({ ...e, listener: PROTOCOL_NAMES[e.securityProtocol] ?? 'PLAINTEXT' })) }))
  }
  return { ...req, topicStates, liveBrokers }
}
