// A shard applies the operations sent to it in the order sent, across messages too, also while one of
// them waits on I/O: an append queued behind a truncation (whose fsyncs a follower's truncation waits
// for) is not overtaken by an append of the next message. The two appends are one idempotent producer's
// consecutive batches on one partition, so an append overtaken would be refused
// OUT_OF_ORDER_SEQUENCE_NUMBER after its successor was written (librdkafka then stops with a fatal
// "sequence desynchronization" error). Inline (io.threads=0, what the cluster tests run) and on a
// worker thread (which takes several messages at once).
import { afterEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { buildRecordBatch } from '../../src/protocol/records/builder.js'
import type { ShardRouter } from '../../src/shard/index.js'
import { batch, openReplicatedRouter, value } from './helpers.js'

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

const open = (ioThreads: number): Promise<ShardRouter> => openReplicatedRouter(ioThreads, cleanup)

/** Two records of producer 7 (epoch 0) from sequence baseSequence. */
function idempotent(baseSequence: number): Buffer {
  const records = [0, 1].map((i) => ({ key: null, value: Buffer.from(`seq-${baseSequence + i}`) }))
  return buildRecordBatch(records, (d, s) => native.crc32c(d, s), { producerId: 7, producerEpoch: 0, baseSequence })
}

describe.each([0, 1])('shard operation order (io.threads=%i)', (ioThreads) => {
  it("applies an append queued behind another partition's truncation before the appends sent after it", async () => {
    const router = await open(ioThreads)
    const written = { topic: 'written', partition: 0 }
    const cut = { topic: 'cut', partition: 0 }
    await router.createPartitions([written, cut])
    expect(value((await router.append([{ ...written, records: idempotent(0), leaderEpoch: 0 }]))[0]).baseOffset).toBe(0)

    for (let round = 0; round < 5; round++) {
      const tail = value((await router.append([{ ...cut, records: batch(`c${round}`, 2), leaderEpoch: 0 }]))[0]).baseOffset
      // One message: a truncation that cuts (so it waits for its fsyncs), then the producer's next batch.
      const truncated = router.call('truncate', [{ ...cut, offset: tail }])
      const first = router.append([{ ...written, records: idempotent(2 + 4 * round), leaderEpoch: 0 }])
      // The batch after it, in the next message (sent on the next turn of the event loop).
      const second = new Promise<Awaited<typeof first>>((resolve) => setImmediate(() => resolve(router.append([{ ...written, records: idempotent(4 + 4 * round), leaderEpoch: 0 }]))))
      expect(value((await first)[0]).baseOffset).toBe(2 + 4 * round)
      expect(value((await second)[0]).baseOffset).toBe(4 + 4 * round)
      expect(value((await truncated)[0]).logEndOffset).toBe(tail)
    }
  })
})
