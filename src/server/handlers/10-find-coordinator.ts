// FindCoordinator: v0-4
//
// Behavior:
// * Key type 0 (group): this broker, which leads every partition of __consumer_offsets. The first
//   group request creates that topic (offsets.topic.num.partitions, compacted) and waits for it, so the
//   answer is immediately usable; if it cannot be created the answer is COORDINATOR_NOT_AVAILABLE.
// * Key type 1 (transaction): this broker, which leads every partition of __transaction_state; the
//   first such request creates that topic (transaction.state.log.num.partitions, compacted). The key
//   (transactional id) is not needed to pick the broker, since there is one.
// * Any other key type: INVALID_REQUEST.
// * In a ZooKeeper cluster coordinators do not yet follow the leadership of their internal topic's
//   partitions (the replication layer's step): this answer is right only on a single broker.
// Version notes:
// * v4+: several keys per request (coordinatorKeys), one answer each. v3+: flexible. v1+: key type,
//   error message, throttle time.
import { ErrorCode, errorName, KafkaError } from '../../domain/errors.js'
import * as FindCoordinator from '../../protocol/messages/10-find-coordinator.gen.js'
import type { RequestContext } from './common/context.js'
import { defineHandler } from './common/handler.js'

const GROUP_KEY_TYPE = 0
const TRANSACTION_KEY_TYPE = 1

interface Answer {
  errorCode: number
  errorMessage: string | null
  nodeId: number
  host: string
  port: number
}

async function find(keyType: number, ctx: RequestContext): Promise<Answer> {
  const fail = (errorCode: number, errorMessage: string): Answer => ({ errorCode, errorMessage, nodeId: -1, host: '', port: -1 })
  if (keyType !== GROUP_KEY_TYPE && keyType !== TRANSACTION_KEY_TYPE) return fail(ErrorCode.INVALID_REQUEST, `unknown coordinator key type ${keyType}`)
  try {
    if (keyType === TRANSACTION_KEY_TYPE) await ctx.transactions.coordinator()
    else await ctx.groups.coordinator()
  } catch (err) {
    const code = err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE
    return fail(code, (err as Error).message)
  }
  // This broker leads every partition of both internal topics, so it coordinates every key.
  const node = ctx.metadata.localBroker(ctx.connection.listenerName)
  return { errorCode: ErrorCode.NONE, errorMessage: null, nodeId: node.nodeId, host: node.host, port: node.port }
}

export const findCoordinatorHandler = defineHandler<FindCoordinator.FindCoordinatorRequest, FindCoordinator.FindCoordinatorResponse>({
  api: FindCoordinator.FindCoordinatorApi,
  minVersion: 0,
  maxVersion: 4,
  decodeRequest: FindCoordinator.decodeFindCoordinatorRequest,
  encodeResponse: FindCoordinator.encodeFindCoordinatorResponse,
  async handle(req, ctx) {
    if (ctx.apiVersion >= 4) {
      const coordinators = await Promise.all(
        req.coordinatorKeys.map(async (key) => {
          const a = await find(req.keyType, ctx)
          return FindCoordinator.createCoordinator({ key, ...a })
        }),
      )
      return FindCoordinator.createFindCoordinatorResponse({ coordinators })
    }
    const a = await find(ctx.apiVersion >= 1 ? req.keyType : GROUP_KEY_TYPE, ctx)
    if (a.errorCode !== ErrorCode.NONE) ctx.log.debug({ key: req.key, error: errorName(a.errorCode) }, 'FindCoordinator failed')
    return FindCoordinator.createFindCoordinatorResponse({ ...a, errorMessage: ctx.apiVersion >= 1 ? a.errorMessage : '' })
  },
})
