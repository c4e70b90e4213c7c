// Compaction of compressed batches written by a real client: librdkafka (kcat -z CODEC) sends many
// updates per key in gzip, snappy, lz4 and zstd batches to compacted topics; a cleaning pass rewrites
// them; the surviving batches keep their codec, and kcat reads back exactly the latest value of every key
// at its original offset.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COMPRESSION_MASK, iterateBatches } from '../../src/protocol/records/batch.js'
import { readRegions } from '../../src/storage/regions.js'
import { hasKcat, INSTALL_HINT, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

const KCAT = hasKcat()
if (!KCAT) console.warn(`kcat is not installed: compaction of librdkafka's compressed batches is not tested (${INSTALL_HINT})`)

const CODECS = [
  ['gzip', 1],
  ['snappy', 2],
  ['lz4', 3],
  ['zstd', 4],
] as const
const KEYS = 20
const ROUNDS = 15

let tb: TestBroker

beforeAll(async () => {
  // The timer stays out of the way (long backoff): the test forces one pass and checks its result.
  tb = await startTestBroker(['log.cleaner.backoff.ms=3600000'])
})

afterAll(async () => {
  await tb?.stop()
})

/** Codec ids of the batches stored in partition 0 of topic. */
async function storedCodecs(topic: string): Promise<Set<number>> {
  const [read] = await tb.broker.router.read([{ topic, partition: 0, offset: 0, maxBytes: 64 * 1024 * 1024 }])
  if (read === undefined || !read.ok) throw new Error(`cannot read ${topic}`)
  try {
    const bytes = readRegions(read.value.regions)
    return new Set([...iterateBatches(bytes)].map((b) => b.attributes & COMPRESSION_MASK))
  } finally {
    tb.broker.router.releaseLeases([{ shard: read.value.shard, leaseId: read.value.leaseId }])
  }
}

describe.skipIf(!KCAT)('compaction of compressed batches from librdkafka', () => {
  for (const [codec, id] of CODECS) {
    it(`keeps the latest value per key of ${codec} batches, still ${codec}`, async () => {
      const topic = `compacted-${codec}`
      await tb.broker.topics.create({
        name: topic,
        numPartitions: 1,
        replicationFactor: 1,
        configs: { 'cleanup.policy': 'compact', 'segment.bytes': '2048', 'min.cleanable.dirty.ratio': '0.01' },
        validateOnly: false,
      })
      const latest = new Map<string, string>()
      for (let round = 0; round < ROUNDS; round++) {
        const lines: string[] = []
        for (let k = 0; k < KEYS; k++) {
          const value = `k${k}-r${round}-${'v'.repeat(30)}`
          lines.push(`key${k}:${value}`)
          latest.set(`key${k}`, value)
        }
        // One kcat run per round: one compressed batch (or a few) per round, many rounds per segment.
        await runOk('kcat', ['-P', '-b', tb.bootstrap, '-t', topic, '-p', '0', '-K:', '-z', codec, '-X', 'linger.ms=50'], { input: lines.join('\n') + '\n', timeoutMs: 20_000 })
      }
      // Something in the active segment, so every update round lies below it and is cleanable.
      await runOk('kcat', ['-P', '-b', tb.bootstrap, '-t', topic, '-p', '0', '-K:', '-z', codec], { input: `pad:${'p'.repeat(2100)}\n`, timeoutMs: 20_000 })
      latest.set('pad', 'p'.repeat(2100))
      expect(await storedCodecs(topic)).toEqual(new Set([id]))

      const [before] = await tb.broker.router.states([{ topic, partition: 0 }])
      const [outcome] = await tb.broker.router.compact([{ topic, partition: 0, force: true }])
      expect(outcome!.ok).toBe(true)
      const [after] = await tb.broker.router.states([{ topic, partition: 0 }])
      expect(after!.sizeBytes).toBeLessThan(before!.sizeBytes)
      expect(after!.logEndOffset).toBe(before!.logEndOffset)
      // Cleaned batches are recompressed with their own codec.
      expect(await storedCodecs(topic)).toEqual(new Set([id]))

      const r = await runOk('kcat', ['-C', '-b', tb.bootstrap, '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-f', '%k\\t%s\\t%o\\n'], { timeoutMs: 30_000 })
      const rows = r.stdout.toString().split('\n').filter((l) => l !== '').map((l) => l.split('\t'))
      expect(rows.length).toBeLessThan(KEYS * ROUNDS)
      const byKey = new Map<string, string>()
      let lastOffset = -1
      for (const [key, value, offset] of rows) {
        expect(Number(offset)).toBeGreaterThan(lastOffset)
        lastOffset = Number(offset)
        byKey.set(key!, value!)
      }
      expect(byKey).toEqual(latest)
      // The latest round survives whole: its records are the last KEYS offsets before the pad.
      expect(rows.length).toBeGreaterThanOrEqual(KEYS + 1)
    })
  }
})
