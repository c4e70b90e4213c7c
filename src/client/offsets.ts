// ListOffsets for many partitions at once: grouped by leader, one request per leader, retried on
// leadership changes. Timestamps follow Kafka: -2 earliest, -1 latest, -3 max timestamp, else the first
// offset whose timestamp is >= the given one (offset -1 when there is none).
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as ListOffsets from '../protocol/messages/02-list-offsets.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { Cluster } from './cluster-connections.js'

export { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP } from '../domain/list-offsets.js'

export interface OffsetQuery {
  topic: string
  partition: number
  timestamp: number
}

export interface OffsetAnswer {
  offset: number
  timestamp: number
}

export const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`

const LEADER_ERRORS: ReadonlySet<number> = new Set([ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH])

/** Answers keyed by tpKey. isolationLevel 1 = read_committed (latest = last stable offset). */
export async function listOffsets(cluster: Cluster, queries: readonly OffsetQuery[], isolationLevel = 0): Promise<Map<string, OffsetAnswer>> {
  const out = new Map<string, OffsetAnswer>()
  let todo = [...queries]
  await cluster.withRetries(
    async () => {
      const byLeader = new Map<number, OffsetQuery[]>()
      for (const q of todo) {
        const leader = await cluster.leaderFor(q.topic, q.partition)
        let list = byLeader.get(leader)
        if (list === undefined) byLeader.set(leader, (list = []))
        list.push(q)
      }
      const failed: OffsetQuery[] = []
      let firstError: KafkaError | null = null
      await Promise.all(
        [...byLeader].map(async ([leader, qs]) => {
          const conn = await cluster.nodeConnection(leader)
          const byTopic = new Map<string, ListOffsets.ListOffsetsPartition[]>()
          for (const q of qs) {
            let list = byTopic.get(q.topic)
            if (list === undefined) byTopic.set(q.topic, (list = []))
            list.push(ListOffsets.createListOffsetsPartition({ partitionIndex: q.partition, timestamp: BigInt(q.timestamp), maxNumOffsets: 1 }))
          }
          const req = ListOffsets.createListOffsetsRequest({
            replicaId: -1,
            isolationLevel,
            topics: [...byTopic].map(([name, partitions]) => ListOffsets.createListOffsetsTopic({ name, partitions })),
          })
          const res = await conn.send(ApiKey.ListOffsets, (w, v) => ListOffsets.encodeListOffsetsRequest(w, req, v), ListOffsets.decodeListOffsetsResponse)
          for (const t of res.topics) {
            for (const p of t.partitions) {
              const q = qs.find((x) => x.topic === t.name && x.partition === p.partitionIndex)
              if (q === undefined) continue
              if (p.errorCode !== ErrorCode.NONE) {
                const err = new KafkaError(p.errorCode as ErrorCode, `offsets of ${t.name}-${p.partitionIndex}`)
                if (LEADER_ERRORS.has(p.errorCode)) failed.push(q)
                firstError ??= err
                continue
              }
              out.set(tpKey(t.name, p.partitionIndex), { offset: Number(p.offset), timestamp: Number(p.timestamp) })
            }
          }
        }),
      )
      todo = failed
      if (firstError !== null) throw firstError
    },
    async () => {
      await cluster.refreshMetadata([...new Set(todo.map((q) => q.topic))])
    },
  )
  return out
}
