// What the share-group offsets handlers (DescribeShareGroupOffsets 90, AlterShareGroupOffsets 91,
// DeleteShareGroupOffsets 92) share, as Kafka 4.x's group coordinator answers them: the group must be a
// share group this broker coordinates (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS as every group
// request; INVALID_GROUP_ID for an empty id; GROUP_ID_NOT_FOUND with "Group X not found." or "Group X is
// not a share group."), and alter and delete need it empty (NON_EMPTY_GROUP). The share-partitions'
// state is then read or written through ctx.shareGroupOffsets (the share coordinator of each).
import { ErrorCode } from '../../../domain/errors.js'
import type { RequestContext } from './context.js'
import type { GroupCoordinatorApi, ShareGroupOffsetsService, ShareOffsetRef } from './ports.js'

export type DescribedShareGroupInfo = Awaited<ReturnType<GroupCoordinatorApi['shareGroupDescribe']>>[number]

export type ShareGroupTarget =
  | { ok: true; group: DescribedShareGroupInfo; offsets: ShareGroupOffsetsService }
  | { ok: false; errorCode: number; errorMessage: string | null }

/** The share group `groupId` as its coordinator here describes it, or the error that answers the request. */
export async function shareGroupTarget(ctx: RequestContext, groupId: string, mustBeEmpty: boolean): Promise<ShareGroupTarget> {
  if (groupId === '') return { ok: false, errorCode: ErrorCode.INVALID_GROUP_ID, errorMessage: 'The group id must not be empty.' }
  const coordinator = ctx.groups.current
  if (coordinator === undefined) return { ok: false, errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: `Group ${groupId} not found.` }
  const [group] = await coordinator.shareGroupDescribe([groupId])
  if (group === undefined) return { ok: false, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: null }
  if (group.errorCode !== ErrorCode.NONE) return { ok: false, errorCode: group.errorCode, errorMessage: group.errorMessage }
  if (mustBeEmpty && group.members.length > 0) return { ok: false, errorCode: ErrorCode.NON_EMPTY_GROUP, errorMessage: `Share group ${groupId} is not empty.` }
  if (ctx.shareGroupOffsets === undefined) return { ok: false, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, errorMessage: 'the share coordinator is not running' }
  return { ok: true, group, offsets: ctx.shareGroupOffsets }
}

/** Every share-partition of `topic` (by its name), or undefined when the topic does not exist. */
export function topicSharePartitions(ctx: RequestContext, topic: string): ShareOffsetRef[] | undefined {
  const info = ctx.metadata.topic(topic)
  if (info === undefined) return undefined
  return Array.from({ length: info.partitions }, (_, partition) => ({ topic, topicId: info.topicId, partition }))
}
