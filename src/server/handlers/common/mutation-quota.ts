// Controller mutation quotas in the admin handlers that create or delete partitions (KIP-599): strict
// from CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 (a topic is refused with
// THROTTLING_QUOTA_EXCEEDED while the client's quota is exhausted), permissive before (everything is
// done and the client is throttled after). The response's throttle_time_ms is the quota's throttle.
import { ErrorCode, KafkaError } from '../../../domain/errors.js'
import type { ControllerMutationQuota } from './ports.js'

/** Throws THROTTLING_QUOTA_EXCEEDED when a strict request's quota is exhausted. */
export function checkMutationQuota(quota: ControllerMutationQuota | null, strict: boolean): void {
  if (quota !== null && strict && quota.isExceeded()) throw new KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, 'The throttling quota has been exceeded.')
}
