// Many partitions on one broker, many more than it may open files: the broker process runs under
// `prlimit --nofile=1024` and holds a topic of SKEIN_SCALE_PARTITIONS partitions (10,000 in npm test;
// `npm run test:scale` runs the 100,000 of issue 13). Segment files are opened through a bounded cache
// (src/storage/open-files.ts), so the partition count is bounded by the disk: every partition is
// created, written, read back, and comes back after a clean restart and after a SIGKILL. While the topic
// is created, a second client's Metadata, Produce and Fetch on another topic keep answering (issue 30:
// long operations run in ~10 ms slices); each one's worst latency is printed and bounded by
// MAX_LATENCY_MS.
import { readdirSync, rmSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { batchOf, decodeBatches, RawClient, recordsBuffer, startBrokerProcess, type BrokerProcess } from '../harness/index.js'

const PARTITIONS = Number(process.env.SKEIN_SCALE_PARTITIONS ?? 10_000)
const NOFILE = 1024
/**
 * Bound on any single Metadata, Produce or Fetch of the second client while the topic is created. The
 * work is sliced to ~10 ms; what is left above that is the machine (a 2-core machine shared with other
 * test runs: a slow mkdir or fsync, a major GC of a heap holding 100,000 partitions), hence the bound of
 * the admin-fairness test. Measured at 100,000 under a load average of 14: 0.67 s, 0.88 s and 0.93 s
 * (at 10,000 beside another test file, Produce once took 1.45 s); before the controller's pass was
 * sliced, it alone held the event loop ~1 s per 20,000 partitions (~4.6 s at 100,000).
 */
const MAX_LATENCY_MS = 3000
const SAMPLE = Array.from({ length: 40 }, (_, i) => Math.floor((i * PARTITIONS) / 40) + (i % 7))

async function fetchValues(c: RawClient, partition: number): Promise<string[]> {
  const p = await c.fetch('huge', partition, 0, { maxBytes: 1 << 20, partitionMaxBytes: 1 << 20 })
  expect(p.errorCode).toBe(0)
  return decodeBatches(recordsBuffer(p)).flatMap((b) => b.records.map((r) => r.value!.toString()))
}

function openFiles(b: BrokerProcess): number {
  return readdirSync(`/proc/${b.pid}/fd`).length
}

/** Lines the broker logged at WARN or above. */
function problems(b: BrokerProcess): string[] {
  return b.output().split('\n').filter((l) => /"level":(40|50|60)/.test(l))
}

describe(`a topic of ${PARTITIONS} partitions on a broker limited to ${NOFILE} open files`, () => {
  it('is created whole, serves every partition, and comes back after SIGTERM and after SIGKILL', async () => {
    const start = (dataDir?: string): Promise<BrokerProcess> =>
      startBrokerProcess({ nofile: NOFILE, readyTimeoutMs: 240_000, ...(dataDir === undefined ? {} : { dataDir }) })
    let b = await start()
    const dataDir = b.dataDir
    try {
      let c = await RawClient.connect(b.host, b.port, 240_000)
      const other = await RawClient.connect(b.host, b.port, 240_000)
      expect((await other.createTopic('small', 1)).errorCode).toBe(0)
      // The broker answers once every partition has its leader (Kafka's CreateTopics timeout): the
      // controller's pass over 100,000 partitions takes longer than the harness's 10 s on a loaded machine.
      const started = performance.now()
      let createMs = 0
      const creation = c.createTopic('huge', PARTITIONS, {}, 5, 240_000).then((r) => {
        createMs = performance.now() - started
        return r
      })
      const worst = { metadata: 0, produce: 0, fetch: 0 }
      let rounds = 0
      const timed = async <T>(api: keyof typeof worst, call: () => Promise<T>): Promise<T> => {
        const t0 = performance.now()
        const result = await call()
        worst[api] = Math.max(worst[api], performance.now() - t0)
        return result
      }
      while (createMs === 0) {
        expect((await timed('metadata', () => other.metadata(['small']))).topics[0]!.errorCode).toBe(0)
        expect((await timed('produce', () => other.produce('small', 0, batchOf([{ value: Buffer.from(`v-${rounds}`) }])))).errorCode).toBe(0)
        const fetched = await timed('fetch', () => other.fetch('small', 0, rounds, { maxWaitMs: 0 }))
        expect(fetched.errorCode).toBe(0)
        expect(decodeBatches(recordsBuffer(fetched)).flatMap((x) => x.records.map((r) => r.value!.toString()))).toEqual([`v-${rounds}`])
        rounds++
        await new Promise((r) => setTimeout(r, 5))
      }
      const created = await creation
      expect(created.errorCode, created.errorMessage ?? '').toBe(0)
      console.log(
        `created ${PARTITIONS} partitions in ${createMs.toFixed(0)} ms; meanwhile ${rounds} rounds on another topic, worst ` +
          `Metadata ${worst.metadata.toFixed(1)} ms, Produce ${worst.produce.toFixed(1)} ms, Fetch ${worst.fetch.toFixed(1)} ms`,
      )
      expect(rounds).toBeGreaterThan(1)
      for (const api of ['metadata', 'produce', 'fetch'] as const) expect(worst[api], api).toBeLessThan(MAX_LATENCY_MS)
      other.close()
      expect((await c.metadata(['huge'])).topics[0]!.partitions).toHaveLength(PARTITIONS)
      for (const p of SAMPLE) {
        const res = await c.produce('huge', p, batchOf([{ value: Buffer.from(`a-${p}`) }, { value: Buffer.from(`b-${p}`) }]))
        expect(res.errorCode).toBe(0)
        expect(Number(res.baseOffset)).toBe(0)
      }
      for (const p of SAMPLE) expect(await fetchValues(c, p)).toEqual([`a-${p}`, `b-${p}`])
      expect(await fetchValues(c, 1)).toEqual([])
      // The cache keeps at most half the limit: sockets and short-lived files have the rest.
      expect(openFiles(b)).toBeLessThan(NOFILE / 2 + 64)
      c.close()
      expect(await b.kill('SIGTERM', 120_000)).toBe(0)

      b = await start(dataDir)
      // No descriptor per partition at startup.
      expect(openFiles(b)).toBeLessThan(NOFILE / 2 + 64)
      c = await RawClient.connect(b.host, b.port, 240_000)
      expect((await c.createTopic('huge', 5)).errorCode).toBe(36) // TOPIC_ALREADY_EXISTS
      expect((await c.metadata(['huge'])).topics[0]!.partitions).toHaveLength(PARTITIONS)
      for (const p of SAMPLE) expect(await fetchValues(c, p)).toEqual([`a-${p}`, `b-${p}`])
      // Appends continue at the end of every reopened partition, empty or not.
      for (const p of [0, SAMPLE[3]!, PARTITIONS - 1]) {
        const res = await c.produce('huge', p, batchOf([{ value: Buffer.from(`c-${p}`) }]))
        expect(res.errorCode).toBe(0)
        expect(Number(res.baseOffset)).toBe(SAMPLE.includes(p) ? 2 : 0)
      }
      c.close()
      expect(await b.kill('SIGKILL')).toBe('SIGKILL')

      // After a crash every partition is recovered, still within the limit.
      b = await start(dataDir)
      c = await RawClient.connect(b.host, b.port, 240_000)
      for (const p of SAMPLE) {
        const values = await fetchValues(c, p)
        expect(values.slice(0, 2)).toEqual([`a-${p}`, `b-${p}`])
      }
      expect(await fetchValues(c, PARTITIONS - 1)).toEqual([`c-${PARTITIONS - 1}`])
      expect(openFiles(b)).toBeLessThan(NOFILE / 2 + 64)
      c.close()
      expect(problems(b)).toEqual([])
    } finally {
      await b.kill('SIGTERM', 120_000)
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 600_000)
})
