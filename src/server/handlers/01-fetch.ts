// Fetch: v4-12
//
// Behavior:
// * Record data is never read into memory: the partition service answers file regions of whole batches
//   and the connection sends them with sendfile, straight from the segment files. The leases pinning
//   those segments are released once the response has been written.
// * Each partition returns at most partitionMaxBytes; the request's maxBytes bounds the total, except
//   that the first partition with data always returns at least one whole batch (Kafka's minOneMessage),
//   so a batch larger than the limits still makes progress. Partitions past the budget return no data.
// * Long polling: with less than minBytes available the fetch waits until one of its partitions gets
//   data or maxWaitMs passes, then answers with what there is.
// * Consumers read up to the high watermark; read_committed (isolation level 1) up to the last stable
//   offset (the first offset of the oldest open transaction), and the answer lists the aborted
//   transactions overlapping the returned batches: the client drops their records. The broker still
//   sends file regions, it never filters bytes. read_uncommitted answers carry a null list.
// * Fetch sessions (KIP-227) are not kept: every answer is a full response with session id 0, which
//   clients treat as "no session" and keep sending full requests. A request naming a session id gets
//   FETCH_SESSION_ID_NOT_FOUND.
// Version notes:
// * v12: flexible, topic names. v11: rack id / preferred read replica (-1). v9+: current leader epoch.
//   v7+: sessions. v5+: log start offset. v4: isolation level, aborted transactions.
// Not implemented:
// * Follower fetches (replicaId >= 0) are answered as consumer fetches: replication comes later.
import { ErrorCode } from '../../domain/errors.js'
import * as Fetch from '../../protocol/messages/01-fetch.gen.js'
import { defineHandler } from './common/handler.js'
import type { ConsumerRead, PartitionRead, PartitionService } from './common/ports.js'

const EMPTY = Buffer.alloc(0)
const READ_COMMITTED = 1

export const fetchHandler = defineHandler<Fetch.FetchRequest, Fetch.FetchResponse>({
  api: Fetch.FetchApi,
  minVersion: 4,
  maxVersion: 12,
  decodeRequest: Fetch.decodeFetchRequest,
  encodeResponse: Fetch.encodeFetchResponse,
  async handle(req, ctx) {
    if (ctx.apiVersion >= 7 && req.sessionId !== 0) {
      return Fetch.createFetchResponse({ errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, responses: [] })
    }
    const { partitions } = ctx
    const responses: Fetch.FetchableTopicResponse[] = []
    // The partitions to read and, at the same index, their answers.
    const reads: ConsumerRead[] = []
    const targets: Fetch.PartitionData[] = []
    const totalMax = Math.max(0, req.maxBytes)
    for (const t of req.topics) {
      const topicPartitions: Fetch.PartitionData[] = []
      responses.push(Fetch.createFetchableTopicResponse({ topic: t.topic, topicId: t.topicId, partitions: topicPartitions }))
      for (const p of t.partitions) {
        const response = Fetch.createPartitionData({
          partitionIndex: p.partition,
          highWatermark: -1n,
          lastStableOffset: -1n,
          logStartOffset: -1n,
          preferredReadReplica: -1,
          abortedTransactions: req.isolationLevel === READ_COMMITTED ? [] : null,
          records: EMPTY,
        })
        topicPartitions.push(response)
        response.errorCode = partitions.leaderError(t.topic, p.partition, p.currentLeaderEpoch)
        if (response.errorCode !== ErrorCode.NONE) continue
        const fetchOffset = Number(p.fetchOffset)
        if (p.partitionMaxBytes < 0) {
          response.errorCode = ErrorCode.INVALID_FETCH_SIZE
          continue
        }
        const read: ConsumerRead = { topic: t.topic, partition: p.partition, offset: fetchOffset, maxBytes: Math.min(p.partitionMaxBytes, Math.max(totalMax, 1)) }
        if (req.isolationLevel === READ_COMMITTED) read.isolation = 'read_committed'
        reads.push(read)
        targets.push(response)
      }
    }
    const deadline = ctx.receivedAt + Math.max(0, req.maxWaitMs)
    for (;;) {
      const held = await readAll(reads, targets, totalMax, partitions)
      let bytes = 0
      let anyError = false
      for (const t of targets) {
        bytes += recordsBytes(t)
        if (t.errorCode !== ErrorCode.NONE) anyError = true
      }
      const remaining = deadline - Date.now()
      if (bytes >= req.minBytes || anyError || remaining <= 0 || targets.length === 0 || ctx.connection.isClosed) {
        if (held.length > 0) ctx.onResponseDone(() => partitions.releaseLeases(held))
        break
      }
      partitions.releaseLeases(held)
      await partitions.waitForAppends(reads, remaining)
    }
    for (let i = 0; i < targets.length; i++) partitions.countFetched(reads[i]!.topic, recordsBytes(targets[i]!), targets[i]!.errorCode !== ErrorCode.NONE)
    return Fetch.createFetchResponse({ errorCode: ErrorCode.NONE, sessionId: 0, responses })
  },
})

function recordsBytes(p: Fetch.PartitionData): number {
  const r = p.records
  if (r === null) return 0
  if (Buffer.isBuffer(r)) return r.length
  let n = 0
  for (const c of r.chunks) n += c.length
  return n
}

/** Reads every partition once (one message per shard) and fills the answers; returns the reads holding segments. */
async function readAll(reads: ConsumerRead[], targets: Fetch.PartitionData[], totalMax: number, partitions: PartitionService): Promise<PartitionRead[]> {
  const held: PartitionRead[] = []
  if (reads.length === 0) return held
  const results = await partitions.read(reads)
  let budget = totalMax
  let firstWithData = true
  for (let i = 0; i < results.length; i++) {
    const result = results[i]!
    const response = targets[i]!
    response.records = EMPTY
    if (!result.ok) {
      response.errorCode = result.errorCode
      response.highWatermark = -1n
      response.lastStableOffset = -1n
      response.logStartOffset = -1n
      continue
    }
    const r = result.value
    if (r.regions.length > 0) held.push(r)
    response.errorCode = ErrorCode.NONE
    response.highWatermark = BigInt(r.highWatermark)
    response.lastStableOffset = BigInt(r.lastStableOffset)
    response.logStartOffset = BigInt(r.logStartOffset)
    if (response.abortedTransactions !== null) response.abortedTransactions = []
    if (r.bytes === 0) continue
    if (r.bytes <= budget || firstWithData) {
      response.records = { chunks: r.regions }
      if (response.abortedTransactions !== null) {
        response.abortedTransactions = r.abortedTransactions.map((a) => Fetch.createAbortedTransaction({ producerId: BigInt(a.producerId), firstOffset: BigInt(a.firstOffset) }))
      }
      budget = Math.max(0, budget - r.bytes)
      firstWithData = false
    }
  }
  return held
}
