// Many partitions on one broker: CreateTopics with thousands of partitions, the open files they cost
// (one .log per partition; index files are opened lazily, see src/storage/segment.ts), and a restart
// that brings every one of them back with its records.
import { readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { batchOf, decodeBatches, RawClient, recordsBuffer, startTestBroker } from '../harness/index.js'

const PARTITIONS = 3000

function openFds(): number {
  return readdirSync('/proc/self/fd').length
}

async function fetchValues(c: RawClient, topic: string, partition: number): Promise<string[]> {
  const p = await c.fetch(topic, partition, 0, { maxBytes: 1 << 20, partitionMaxBytes: 1 << 20 })
  expect(p.errorCode).toBe(0)
  return decodeBatches(recordsBuffer(p)).flatMap((b) => b.records.map((r) => r.value!.toString()))
}

describe(`a topic of ${PARTITIONS} partitions`, () => {
  it('is created holding one open file per partition, serves every partition, and comes back after a restart', async () => {
    let tb = await startTestBroker()
    try {
      let c = await RawClient.connect(tb.host, tb.port)
      const before = openFds()
      expect((await c.createTopic('many', PARTITIONS)).errorCode).toBe(0)
      const perPartition = (openFds() - before) / PARTITIONS
      expect(perPartition).toBeGreaterThanOrEqual(1)
      expect(perPartition).toBeLessThan(1.05)
      const md = await c.metadata(['many'])
      expect(md.topics[0]!.partitions).toHaveLength(PARTITIONS)

      const sample = Array.from({ length: 30 }, (_, i) => i * 97 + 1)
      for (const p of sample) {
        const res = await c.produce('many', p, batchOf([{ value: Buffer.from(`a-${p}`) }, { value: Buffer.from(`b-${p}`) }]))
        expect(res.errorCode).toBe(0)
        expect(Number(res.baseOffset)).toBe(0)
      }
      for (const p of sample) expect(await fetchValues(c, 'many', p)).toEqual([`a-${p}`, `b-${p}`])
      expect(await fetchValues(c, 'many', 0)).toEqual([])
      c.close()

      tb = await tb.restart()
      c = await RawClient.connect(tb.host, tb.port)
      expect((await c.createTopic('many', 5)).errorCode).toBe(36) // TOPIC_ALREADY_EXISTS
      const md2 = await c.metadata(['many'])
      expect(md2.topics[0]!.partitions).toHaveLength(PARTITIONS)
      for (const p of sample) expect(await fetchValues(c, 'many', p)).toEqual([`a-${p}`, `b-${p}`])
      // Appends continue at the end of every reopened partition, empty or not.
      for (const p of [0, sample[3]!, PARTITIONS - 1]) {
        const res = await c.produce('many', p, batchOf([{ value: Buffer.from(`c-${p}`) }]))
        expect(res.errorCode).toBe(0)
        expect(Number(res.baseOffset)).toBe(sample.includes(p) ? 2 : 0)
      }
      expect(await fetchValues(c, 'many', sample[3]!)).toEqual([`a-${sample[3]}`, `b-${sample[3]}`, `c-${sample[3]}`])
      c.close()
    } finally {
      await tb.stop()
    }
  }, 120_000)
})
