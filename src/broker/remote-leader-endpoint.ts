// A replica fetcher's LeaderEndpoint (src/replication/leader-endpoint.ts) over Skein's client connection
// (Kafka's RemoteLeaderEndPoint; the broker's composition hands it to the replica fetcher manager):
// one TCP connection to the leader's inter-broker endpoint, Fetch v12 (topic names, lastFetchedEpoch and
// the diverging epoch, fetch sessions as the replica fetcher builds them) with this broker's replica
// id, OffsetForLeaderEpoch and ListOffsets for the leader's log end and start offsets. With
// inter.broker.protocol.version below 2.7, or a leader that serves no Fetch v12, Fetch v11: no diverging
// epoch, and the fetcher truncates through OffsetForLeaderEpoch instead (Kafka's pre-2.7 path).
import { BrokerConnection } from '../client/connection.js'
import type { ClientSecurity } from '../client/sasl.js'
import { ErrorCode } from '../domain/errors.js'
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as Fetch from '../protocol/messages/01-fetch.gen.js'
import * as ListOffsets from '../protocol/messages/02-list-offsets.gen.js'
import * as OffsetForLeaderEpoch from '../protocol/messages/23-offset-for-leader-epoch.gen.js'
import type { FollowerFetchAnswer, FollowerFetchRequest, FollowerFetchResult, FollowerFetchSettings, LeaderEndpoint } from '../replication/leader-endpoint.js'
import type { LiveLeader } from '../replication/partition-requests.js'

const FETCH_VERSION = 12
const OFFSET_FOR_LEADER_EPOCH_VERSION = 4
const LIST_OFFSETS_VERSION = 5
const EARLIEST = -2n
const EMPTY = Buffer.alloc(0)

/** Fetch v11 is the last without the diverging epoch (Kafka's IBP 2.7 brought v12). */
const FETCH_VERSION_BEFORE_DIVERGING_EPOCH = 11

/** Whether an inter.broker.protocol.version (e.g. '2.6', '2.7-IV1', '3.9') is below 2.7. */
export function beforeTruncationOnFetch(version: string | undefined): boolean {
  if (version === undefined) return false
  const [major, minor] = version.split(/[.-]/).map(Number) as [number, number]
  return major < 2 || (major === 2 && minor < 7)
}

export async function connectLeaderEndpoint(
  brokerId: number,
  leader: LiveLeader,
  requestTimeoutMs: number,
  opts: { fetcherId?: number; interBrokerProtocolVersion?: string | undefined; security?: ClientSecurity | undefined } = {},
): Promise<LeaderEndpoint> {
  const conn = await BrokerConnection.connect({
    host: leader.host,
    port: leader.port,
    // Kafka names its fetcher threads ReplicaFetcherThread-<fetcherId>-<leader>.
    clientId: `broker-${brokerId}-fetcher-${opts.fetcherId ?? 0}-${leader.brokerId}`,
    connectTimeoutMs: Math.min(requestTimeoutMs, 10_000),
    requestTimeoutMs,
    security: opts.security,
  })
  const range = conn.brokerRange(ApiKey.Fetch)
  const wanted = beforeTruncationOnFetch(opts.interBrokerProtocolVersion) ? FETCH_VERSION_BEFORE_DIVERGING_EPOCH : FETCH_VERSION
  if (range === undefined || range.max < FETCH_VERSION_BEFORE_DIVERGING_EPOCH) {
    conn.close()
    throw new Error(`broker ${leader.brokerId} does not serve Fetch v${FETCH_VERSION_BEFORE_DIVERGING_EPOCH}`)
  }
  const fetchVersion = Math.min(wanted, range.max)
  return {
    truncatesOnFetch: fetchVersion >= FETCH_VERSION,

    async epochEndOffset(topic: string, partition: number, currentLeaderEpoch: number, epoch: number) {
      const req = OffsetForLeaderEpoch.createOffsetForLeaderEpochRequest({
        replicaId: brokerId,
        topics: [OffsetForLeaderEpoch.createOffsetForLeaderTopic({
          topic,
          partitions: [OffsetForLeaderEpoch.createOffsetForLeaderPartition({ partition, currentLeaderEpoch, leaderEpoch: epoch })],
        })],
      })
      const res = await conn.send(
        ApiKey.OffsetForLeaderEpoch,
        (w) => OffsetForLeaderEpoch.encodeOffsetForLeaderEpochRequest(w, req, OFFSET_FOR_LEADER_EPOCH_VERSION),
        OffsetForLeaderEpoch.decodeOffsetForLeaderEpochResponse,
        { version: OFFSET_FOR_LEADER_EPOCH_VERSION },
      )
      const p = res.topics[0]?.partitions[0]
      if (p === undefined) return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, leaderEpoch: -1, endOffset: -1 }
      return { errorCode: p.errorCode, leaderEpoch: p.leaderEpoch, endOffset: Number(p.endOffset) }
    },

    async fetch(request: FollowerFetchRequest, settings: FollowerFetchSettings): Promise<FollowerFetchResult> {
      const byTopic = new Map<string, Fetch.FetchPartition[]>()
      for (const p of request.partitions) {
        let list = byTopic.get(p.topic)
        if (list === undefined) byTopic.set(p.topic, (list = []))
        list.push(Fetch.createFetchPartition({
          partition: p.partition,
          currentLeaderEpoch: p.currentLeaderEpoch,
          fetchOffset: BigInt(p.fetchOffset),
          // v11 has no such field (the fetcher truncated through OffsetForLeaderEpoch instead).
          lastFetchedEpoch: fetchVersion >= FETCH_VERSION ? p.lastFetchedEpoch : -1,
          partitionMaxBytes: p.maxBytes,
        }))
      }
      const forgotten = new Map<string, number[]>()
      for (const f of request.forgotten) {
        let list = forgotten.get(f.topic)
        if (list === undefined) forgotten.set(f.topic, (list = []))
        list.push(f.partition)
      }
      const body = Fetch.createFetchRequest({
        replicaId: brokerId,
        maxWaitMs: settings.maxWaitMs,
        minBytes: settings.minBytes,
        maxBytes: settings.maxBytes,
        sessionId: request.sessionId,
        sessionEpoch: request.sessionEpoch,
        topics: [...byTopic].map(([topic, ps]) => Fetch.createFetchTopic({ topic, partitions: ps })),
        forgottenTopicsData: [...forgotten].map(([topic, partitions]) => Fetch.createForgottenTopic({ topic, partitions })),
      })
      const res = await conn.send(ApiKey.Fetch, (w) => Fetch.encodeFetchRequest(w, body, fetchVersion), Fetch.decodeFetchResponse, {
        version: fetchVersion,
        extraTimeoutMs: settings.maxWaitMs,
      })
      const answers: FollowerFetchAnswer[] = []
      for (const t of res.responses) {
        for (const p of t.partitions) {
          const answer: FollowerFetchAnswer = {
            topic: t.topic,
            partition: p.partitionIndex,
            errorCode: p.errorCode,
            highWatermark: Number(p.highWatermark),
            logStartOffset: Number(p.logStartOffset),
            records: Buffer.isBuffer(p.records) ? p.records : EMPTY,
          }
          if (p.divergingEpoch.epoch >= 0) answer.divergingEpoch = { epoch: p.divergingEpoch.epoch, endOffset: Number(p.divergingEpoch.endOffset) }
          answers.push(answer)
        }
      }
      return { errorCode: res.errorCode, sessionId: res.sessionId, answers }
    },

    async offsets(topic: string, partition: number, currentLeaderEpoch: number) {
      const epochReq = OffsetForLeaderEpoch.createOffsetForLeaderEpochRequest({
        replicaId: brokerId,
        topics: [OffsetForLeaderEpoch.createOffsetForLeaderTopic({
          topic,
          partitions: [OffsetForLeaderEpoch.createOffsetForLeaderPartition({ partition, currentLeaderEpoch, leaderEpoch: currentLeaderEpoch })],
        })],
      })
      const epochRes = await conn.send(
        ApiKey.OffsetForLeaderEpoch,
        (w) => OffsetForLeaderEpoch.encodeOffsetForLeaderEpochRequest(w, epochReq, OFFSET_FOR_LEADER_EPOCH_VERSION),
        OffsetForLeaderEpoch.decodeOffsetForLeaderEpochResponse,
        { version: OFFSET_FOR_LEADER_EPOCH_VERSION },
      )
      const end = epochRes.topics[0]?.partitions[0]
      if (end === undefined || end.errorCode !== ErrorCode.NONE) return { errorCode: end?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, logEndOffset: -1, logStartOffset: -1 }
      const listReq = ListOffsets.createListOffsetsRequest({
        replicaId: brokerId,
        topics: [ListOffsets.createListOffsetsTopic({ name: topic, partitions: [ListOffsets.createListOffsetsPartition({ partitionIndex: partition, currentLeaderEpoch, timestamp: EARLIEST })] })],
      })
      const listRes = await conn.send(ApiKey.ListOffsets, (w) => ListOffsets.encodeListOffsetsRequest(w, listReq, LIST_OFFSETS_VERSION), ListOffsets.decodeListOffsetsResponse, {
        version: LIST_OFFSETS_VERSION,
      })
      const start = listRes.topics[0]?.partitions[0]
      if (start === undefined || start.errorCode !== ErrorCode.NONE) return { errorCode: start?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, logEndOffset: -1, logStartOffset: -1 }
      return { errorCode: ErrorCode.NONE, logEndOffset: Number(end.endOffset), logStartOffset: Number(start.offset) }
    },

    close(): void {
      conn.close()
    },
  }
}
