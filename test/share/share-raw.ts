// Raw ShareFetch (78) / ShareAcknowledge (79) v1 for the durable share-state tests: one member's share
// session against one partition leader, acknowledgements as [first, last, type] ranges.
import { expect } from 'vitest'
import * as ShareAcknowledge from '../../src/protocol/messages/79-share-acknowledge.gen.js'
import * as ShareFetch from '../../src/protocol/messages/78-share-fetch.gen.js'
import * as ShareGroupHeartbeat from '../../src/protocol/messages/76-share-group-heartbeat.gen.js'
import { decodeAllRecords, type RawClient } from '../harness/index.js'

export const ACCEPT = 1
export const RELEASE = 2
export const REJECT = 3

export type Acks = [first: number, last: number, type: number][]

/** One member's share session on one broker (its epochs), for one topic id. */
export class ShareSessionClient {
  epoch = 0

  constructor(
    readonly client: RawClient,
    readonly group: string,
    readonly member: string,
    readonly topicId: string,
  ) {}

  /** A ShareFetch of partition 0 with piggybacked acks; the session epoch moves on when it is answered without a top-level error. */
  async fetch(opts: { acks?: Acks; maxWaitMs?: number; minBytes?: number; partition?: number } = {}): Promise<ShareFetch.ShareFetchResponse> {
    const req = ShareFetch.createShareFetchRequest({
      groupId: this.group,
      memberId: this.member,
      shareSessionEpoch: this.epoch,
      maxWaitMs: opts.maxWaitMs ?? 500,
      minBytes: opts.minBytes ?? 1,
      maxBytes: 52428800,
      maxRecords: 500,
      batchSize: 500,
      topics: [ShareFetch.createFetchTopic({
        topicId: this.topicId,
        partitions: [ShareFetch.createFetchPartition({
          partitionIndex: opts.partition ?? 0,
          acknowledgementBatches: (opts.acks ?? []).map(([first, last, type]) => ShareFetch.createAcknowledgementBatch({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: [type] })),
        })],
      })],
    })
    const res = await this.client.call(78, 1, (w) => ShareFetch.encodeShareFetchRequest(w, req, 1), ShareFetch.decodeShareFetchResponse, 60_000)
    if (res.errorCode === 0) this.epoch++
    return res
  }

  /** A ShareAcknowledge in the open session; answers the partition's error code. */
  async acknowledge(acks: Acks, partition = 0): Promise<number> {
    const req = ShareAcknowledge.createShareAcknowledgeRequest({
      groupId: this.group,
      memberId: this.member,
      shareSessionEpoch: this.epoch,
      topics: [ShareAcknowledge.createAcknowledgeTopic({
        topicId: this.topicId,
        partitions: [ShareAcknowledge.createAcknowledgePartition({
          partitionIndex: partition,
          acknowledgementBatches: acks.map(([first, last, type]) => ShareAcknowledge.createAcknowledgementBatch({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: [type] })),
        })],
      })],
    })
    const res = await this.client.call(79, 1, (w) => ShareAcknowledge.encodeShareAcknowledgeRequest(w, req, 1), ShareAcknowledge.decodeShareAcknowledgeResponse, 60_000)
    expect(res.errorCode).toBe(0)
    this.epoch++
    const p = res.responses.flatMap((t) => t.partitions).find((x) => x.partitionIndex === partition)
    expect(p).toBeDefined()
    return p!.errorCode
  }
}

/** The partition's answer in a ShareFetch response. */
export function partitionOf(res: ShareFetch.ShareFetchResponse, partition = 0): ShareFetch.PartitionData | undefined {
  return res.responses.flatMap((t) => t.partitions).find((x) => x.partitionIndex === partition)
}

/** offset -> delivery count of the records acquired, checked to be among the records sent. */
export function acquiredOf(p: ShareFetch.PartitionData): Map<number, number> {
  const out = new Map<number, number>()
  for (const a of p.acquiredRecords) for (let o = Number(a.firstOffset); o <= Number(a.lastOffset); o++) out.set(o, a.deliveryCount)
  if (out.size > 0) {
    const sent = new Set(decodeAllRecords(p.records as Buffer).map((r) => r.offset))
    for (const o of out.keys()) expect(sent.has(o), `record ${o} sent`).toBe(true)
  }
  return out
}

/**
 * Joins a share group (ShareGroupHeartbeat v1, epoch 0) subscribed to `topic`, and heartbeats until the
 * member is assigned a partition of it: the group coordinator initializes the share-partitions it
 * assigns (as Kafka 4.1's does), which a share-partition leader may require before it serves them.
 */
export async function joinShareGroup(client: RawClient, group: string, member: string, topic: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let epoch = 0
  for (;;) {
    const req = ShareGroupHeartbeat.createShareGroupHeartbeatRequest({ groupId: group, memberId: member, memberEpoch: epoch, subscribedTopicNames: [topic] })
    const res = await client.call(76, 1, (w) => ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest(w, req, 1), ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse, 30_000)
    if (res.errorCode === 0) {
      epoch = res.memberEpoch
      if ((res.assignment?.topicPartitions ?? []).some((t) => t.partitions.length > 0)) return
    }
    if (Date.now() > deadline) throw new Error(`no assignment for ${member} in ${group} within ${timeoutMs} ms (error ${res.errorCode})`)
    await new Promise((r) => setTimeout(r, 200))
  }
}
