// What the share coordinator's inter-broker handlers (InitializeShareGroupState 83, ReadShareGroupState 84,
// WriteShareGroupState 85, DeleteShareGroupState 86, ReadShareGroupStateSummary 87) share, as Kafka's
// KafkaApis handles them: ClusterAction on the cluster (brokers only), else every share-partition is
// answered CLUSTER_AUTHORIZATION_FAILED; an empty group id is INVALID_REQUEST (Kafka's "Group id must be
// set"); the coordinator is started on first use (its topic created as __consumer_offsets is), and
// COORDINATOR_NOT_AVAILABLE answers every share-partition while it cannot be had. Each share-partition
// is then answered by the coordinator on its own: NOT_COORDINATOR when its __share_group_state partition
// is not led here, COORDINATOR_LOAD_IN_PROGRESS while it is replayed, the fencing errors.
// Bounds: the decoder bounds the topics and partitions (request.max.list.elements); each share-partition
// is one operation queued on its coordinator partition, answered in request order.
import { ErrorCode, KafkaError } from '../../../domain/errors.js'
import { mayActAsBroker } from './cluster-action.js'
import type { RequestContext } from './context.js'
import type { ShareStateCoordinatorApi } from './ports.js'

export type ShareStateTarget = { ok: true; coordinator: ShareStateCoordinatorApi } | { ok: false; errorCode: number; errorMessage: string | null }

/** The coordinator to answer from, or the error every share-partition of the request gets. */
export async function shareStateTarget(ctx: RequestContext, groupId: string): Promise<ShareStateTarget> {
  if (!mayActAsBroker(ctx)) return { ok: false, errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: 'Cluster authorization failed.' }
  if (groupId === '') return { ok: false, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Group id must be set.' }
  if (ctx.shareStates === undefined) return { ok: false, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, errorMessage: 'the share coordinator is not running' }
  try {
    return { ok: true, coordinator: await ctx.shareStates.coordinator() }
  } catch (err) {
    return { ok: false, errorCode: err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE, errorMessage: (err as Error).message || null }
  }
}

/** One answer per share-partition of the request, topic by topic, computed concurrently and kept in order. */
export async function perSharePartition<P extends { partition: number }, R>(
  topics: readonly { topicId: string; partitions: readonly P[] }[],
  answer: (topicId: string, p: P) => Promise<R>,
): Promise<{ topicId: string; partitions: R[] }[]> {
  return Promise.all(topics.map(async (t) => ({ topicId: t.topicId, partitions: await Promise.all(t.partitions.map((p) => answer(t.topicId, p))) })))
}
