// Codec microbenchmarks: decode + encode of a Produce v7 request (10 partitions, 1 KiB batches)
// and a Fetch v12 response (10 partitions, records as file regions on encode). Short on purpose.
// Run: npm run build && node dist/bench/protocol.bench.js

import { Bench } from 'tinybench'
import * as Fetch from '../src/protocol/messages/01-fetch.gen.js'
import * as Produce from '../src/protocol/messages/00-produce.gen.js'
import { Reader } from '../src/protocol/primitives/reader.js'
import { Writer } from '../src/protocol/primitives/writer.js'

const PARTITIONS = 10
const batch = Buffer.alloc(1024, 0x61)

const produce = Produce.createProduceRequest({
  transactionalId: null,
  acks: -1,
  timeoutMs: 30000,
  topicData: [
    Produce.createTopicProduceData({
      name: 'bench-topic',
      partitionData: Array.from({ length: PARTITIONS }, (_, i) => Produce.createPartitionProduceData({ index: i, records: batch })),
    }),
  ],
})
const produceBytes = (() => {
  const w = new Writer()
  Produce.encodeProduceRequest(w, produce, 7)
  return Buffer.from(w.toBuffer())
})()

const fetchResponse = Fetch.createFetchResponse({
  sessionId: 1,
  responses: [
    Fetch.createFetchableTopicResponse({
      topic: 'bench-topic',
      partitions: Array.from({ length: PARTITIONS }, (_, i) =>
        Fetch.createPartitionData({
          partitionIndex: i,
          highWatermark: 1000n,
          lastStableOffset: 1000n,
          logStartOffset: 0n,
          abortedTransactions: null,
          records: { chunks: [{ fd: 3, position: i * 4096, length: 4096 }] },
        }),
      ),
    }),
  ],
})
const fetchBytes = (() => {
  // For decoding, the same response with in-memory records.
  const m = structuredClone({ ...fetchResponse, responses: [] }) as Fetch.FetchResponse
  m.responses = fetchResponse.responses.map((t) => ({ ...t, partitions: t.partitions.map((p) => ({ ...p, records: batch })) }))
  const w = new Writer()
  Fetch.encodeFetchResponse(w, m, 12)
  return Buffer.from(w.toBuffer())
})()

const bench = new Bench({ time: 400, warmup: true })
bench
  .add('Produce v7 request decode (10 partitions)', () => {
    Produce.decodeProduceRequest(new Reader(produceBytes), 7)
  })
  .add('Produce v7 request encode (10 partitions)', () => {
    const w = new Writer(512)
    Produce.encodeProduceRequest(w, produce, 7)
    w.chunks()
  })
  .add('Fetch v12 response encode (10 partitions, file regions)', () => {
    const w = new Writer(512)
    Fetch.encodeFetchResponse(w, fetchResponse, 12)
    w.chunks()
  })
  .add('Fetch v12 response decode (10 partitions)', () => {
    Fetch.decodeFetchResponse(new Reader(fetchBytes), 12)
  })

await bench.run()
console.table(bench.table())
