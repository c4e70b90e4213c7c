// Share groups' offsets for the admin APIs (KIP-932: DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets), as Kafka's group coordinator serves them through its persister: each
// share-partition's share coordinator, here or on another broker (BrokerSharePersister, with its retries
// of a coordinator that moves or loads), is asked for the start offset (ReadShareGroupStateSummary), to
// initialize the state again (InitializeShareGroupState with the state epoch one above the current one:
// no in-flight records, the given start offset) or to delete it (DeleteShareGroupState).
//
// After an alter or delete the share-partition held in memory by this broker, when it leads the
// partition, is dropped unsaved (SharePartitionManager.onStateReset), so the next ShareFetch loads the new
// state. A copy held by another leader is not told (see docs/share-groups.md, "Limits"): its next save
// is refused with FENCED_STATE_EPOCH.
import { KafkaError, ErrorCode } from '../../domain/errors.js'
import type { SharePartitionManager } from '../../replication/share/share-partition-manager.js'
import type { ShareGroupOffsetsService, ShareOffsetAnswer, ShareOffsetRef } from '../../server/handlers/common/ports.js'
import type { BrokerSharePersister } from './share-states.js'

function failed(err: unknown): ShareOffsetAnswer {
  if (err instanceof KafkaError) return { errorCode: err.code, errorMessage: err.message || null, startOffset: -1 }
  const code = (err as { code?: unknown })?.code
  return { errorCode: typeof code === 'number' ? code : ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: (err as Error)?.message ?? String(err), startOffset: -1 }
}

export class BrokerShareGroupOffsets implements ShareGroupOffsetsService {
  constructor(
    private readonly persister: Pick<BrokerSharePersister, 'readSummary' | 'initializeState' | 'deleteState'>,
    private readonly partitions: Pick<SharePartitionManager, 'onStateReset'>,
  ) {}

  startOffsets(group: string, parts: readonly ShareOffsetRef[]): Promise<ShareOffsetAnswer[]> {
    return Promise.all(
      parts.map(async (p) => {
        try {
          const s = await this.persister.readSummary({ group, topicId: p.topicId, partition: p.partition })
          return { errorCode: ErrorCode.NONE, errorMessage: null, startOffset: s.startOffset }
        } catch (err) {
          return failed(err)
        }
      }),
    )
  }

  reset(group: string, parts: readonly (ShareOffsetRef & { startOffset: number })[]): Promise<ShareOffsetAnswer[]> {
    return Promise.all(
      parts.map(async (p) => {
        const key = { group, topicId: p.topicId, partition: p.partition }
        try {
          const current = await this.persister.readSummary(key)
          await this.persister.initializeState(key, current.stateEpoch + 1, p.startOffset)
          this.partitions.onStateReset(group, p.topicId, p.partition)
          return { errorCode: ErrorCode.NONE, errorMessage: null, startOffset: p.startOffset }
        } catch (err) {
          return failed(err)
        }
      }),
    )
  }

  remove(group: string, parts: readonly ShareOffsetRef[]): Promise<ShareOffsetAnswer[]> {
    return Promise.all(
      parts.map(async (p) => {
        try {
          await this.persister.deleteState({ group, topicId: p.topicId, partition: p.partition })
          this.partitions.onStateReset(group, p.topicId, p.partition)
          return { errorCode: ErrorCode.NONE, errorMessage: null, startOffset: -1 }
        } catch (err) {
          return failed(err)
        }
      }),
    )
  }
}
