// FindCoordinator: v0-6
//
// Behavior:
// * Key type 0 (group): the leader of the group's __consumer_offsets partition (Kafka's partitionFor:
//   the key's Java string hash modulo the topic's partitions), which coordinates it. The first group
//   request creates that topic (offsets.topic.num.partitions, offsets.topic.replication.factor,
//   compacted) and waits for it, so the answer is immediately usable; if it cannot be created, or the
//   partition has no leader now, the answer is COORDINATOR_NOT_AVAILABLE.
// * Key type 1 (transaction): the same over __transaction_state
//   (transaction.state.log.num.partitions) and the transactional id.
// * Key type 2 (share, v6+, KIP-932): a share-partition's key "groupId:topicId:partition" (what a
//   share-partition leader asks to find its share coordinator): the leader of its __share_group_state
//   partition (abs(hashCode(key)) % share.coordinator.state.topic.num.partitions, created on first use).
//   Only brokers ask: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka's); a key
//   that is not a share-partition's, or a version below 6, is INVALID_REQUEST.
// * Any other key type: INVALID_REQUEST.
// Version notes:
// * v5: no change a broker sees (clients take TRANSACTION_ABORTABLE, KIP-890). v6: key type 2.
// * v4+: several keys per request (coordinatorKeys), one answer each. v3+: flexible. v1+: key type,
//   error message, throttle time.
// Bounds (docs/broker.md, "Requests are bounded"): at most request.max.list.elements keys (the decoder
// refuses more), looked up one after the other in ~10 ms slices of main-thread time.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode, errorName, KafkaError } from '../../domain/errors.js'
import * as FindCoordinator from '../../protocol/messages/10-find-coordinator.gen.js'
import type { RequestContext } from './common/context.js'
import { defineHandler, requestSlices } from './common/handler.js'

const GROUP_KEY_TYPE = 0
const TRANSACTION_KEY_TYPE = 1
const SHARE_KEY_TYPE = 2
/** The first FindCoordinator version with key type SHARE. */
const SHARE_KEY_MIN_VERSION = 6

/** A share-partition's coordinator key, "groupId:topicId:partition" (Kafka's SharePartitionKey), or undefined. */
function parseShareKey(key: string): { groupId: string; topicId: string; partition: number } | undefined {
  const last = key.lastIndexOf(':')
  const mid = last > 0 ? key.lastIndexOf(':', last - 1) : -1
  if (mid <= 0) return undefined
  const groupId = key.slice(0, mid)
  const topicId = key.slice(mid + 1, last)
  const partitionText = key.slice(last + 1)
  if (!/^\d{1,10}$/.test(partitionText) || !/^[A-Za-z0-9_-]{22}$/.test(topicId)) return undefined
  const partition = Number(partitionText)
  if (partition > 0x7fffffff) return undefined
  return { groupId, topicId, partition }
}

interface Answer {
  errorCode: number
  errorMessage: string | null
  nodeId: number
  host: string
  port: number
}

async function find(keyType: number, key: string, ctx: RequestContext): Promise<Answer> {
  const fail = (errorCode: number, errorMessage: string): Answer => ({ errorCode, errorMessage, nodeId: -1, host: '', port: -1 })
  if (keyType === SHARE_KEY_TYPE) return findShareCoordinator(key, ctx, fail)
  if (keyType !== GROUP_KEY_TYPE && keyType !== TRANSACTION_KEY_TYPE) return fail(ErrorCode.INVALID_REQUEST, `unknown coordinator key type ${keyType}`)
  // Describe on the group or the transactional id.
  if (keyType === GROUP_KEY_TYPE && !ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, key)) return fail(ErrorCode.GROUP_AUTHORIZATION_FAILED, 'Group authorization failed.')
  if (keyType === TRANSACTION_KEY_TYPE && !ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key)) {
    return fail(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 'Transactional Id authorization failed.')
  }
  let partition: number
  try {
    partition = keyType === TRANSACTION_KEY_TYPE ? (await ctx.transactions.coordinator()).partitionFor(key) : (await ctx.groups.coordinator()).partitionFor(key)
  } catch (err) {
    const code = err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE
    return fail(code, (err as Error).message)
  }
  const topic = keyType === TRANSACTION_KEY_TYPE ? ctx.transactions.topicName : ctx.groups.topicName
  return leaderOf(topic, partition, ctx, fail)
}

async function findShareCoordinator(key: string, ctx: RequestContext, fail: (errorCode: number, errorMessage: string) => Answer): Promise<Answer> {
  if (ctx.apiVersion < SHARE_KEY_MIN_VERSION) return fail(ErrorCode.INVALID_REQUEST, `key type ${SHARE_KEY_TYPE} needs FindCoordinator v${SHARE_KEY_MIN_VERSION}`)
  if (!ctx.acl.authorize(ctx.connection, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)) return fail(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 'Cluster authorization failed.')
  const shareKey = parseShareKey(key)
  if (shareKey === undefined) return fail(ErrorCode.INVALID_REQUEST, `not a share-partition key: ${key}`)
  if (ctx.shareStates === undefined) return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the share coordinator is not running')
  let partition: number
  try {
    partition = (await ctx.shareStates.coordinator()).partitionFor(shareKey)
  } catch (err) {
    return fail(err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE, (err as Error).message)
  }
  return leaderOf(ctx.shareStates.topicName, partition, ctx, fail)
}

function leaderOf(topic: string, partition: number, ctx: RequestContext, fail: (errorCode: number, errorMessage: string) => Answer): Answer {
  const leaderId = ctx.metadata.partition(topic, partition)?.leaderId ?? -1
  const node = leaderId === ctx.metadata.nodeId ? ctx.metadata.localBroker(ctx.connection.listenerName) : ctx.metadata.brokers(ctx.connection.listenerName).find((b) => b.nodeId === leaderId)
  if (node === undefined) return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${topic}-${partition} has no leader now`)
  return { errorCode: ErrorCode.NONE, errorMessage: null, nodeId: node.nodeId, host: node.host, port: node.port }
}

export const findCoordinatorHandler = defineHandler<FindCoordinator.FindCoordinatorRequest, FindCoordinator.FindCoordinatorResponse>({
  api: FindCoordinator.FindCoordinatorApi,
  minVersion: 0,
  maxVersion: 6,
  decodeRequest: FindCoordinator.decodeFindCoordinatorRequest,
  encodeResponse: FindCoordinator.encodeFindCoordinatorResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (ctx.apiVersion >= 4) {
      // One key after the other in ~10 ms slices of main-thread time (not 100,000 lookups started at once).
      const slices = requestSlices(ctx)
      const coordinators: FindCoordinator.Coordinator[] = []
      for (const key of req.coordinatorKeys) {
        const turn = slices.turn()
        if (turn !== undefined) await turn
        coordinators.push(FindCoordinator.createCoordinator({ key, ...(await find(req.keyType, key, ctx)) }))
      }
      return FindCoordinator.createFindCoordinatorResponse({ coordinators })
    }
    const a = await find(ctx.apiVersion >= 1 ? req.keyType : GROUP_KEY_TYPE, req.key, ctx)
    if (a.errorCode !== ErrorCode.NONE) ctx.log.debug({ key: req.key, error: errorName(a.errorCode) }, 'FindCoordinator failed')
    return FindCoordinator.createFindCoordinatorResponse({ ...a, errorMessage: ctx.apiVersion >= 1 ? a.errorMessage : '' })
  },
})
