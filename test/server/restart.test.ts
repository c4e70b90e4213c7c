// Restarts: everything produced before a graceful stop (broker.stop() in process, SIGTERM to the real
// process) is fetchable afterwards, byte for byte and at the same offsets; everything acknowledged
// (acks=1) before a SIGKILL is fetchable after the restart, and the recovered log validates (CRCs,
// contiguous offsets, new appends continue at the high watermark). Topics and configs persist.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import * as DescribeConfigs from '../../src/protocol/messages/32-describe-configs.gen.js'
import { batchOf, decodeBatches, freePort, RawClient, recordsBuffer, REPO_ROOT, startBrokerProcess, startTestBroker, type FetchedRecord } from '../harness/index.js'

const TOPIC_RESOURCE = 2

interface Expected {
  offset: number
  key: Buffer | null
  value: Buffer | null
  headers: { key: string; value: Buffer | null }[]
  timestamp: number
}

async function fetchPartition(c: RawClient, topic: string, partition: number): Promise<{ records: FetchedRecord[]; highWatermark: number }> {
  const records: FetchedRecord[] = []
  let offset = 0
  let highWatermark = 0
  for (let round = 0; round < 1000; round++) {
    const p = await c.fetch(topic, partition, offset, { maxBytes: 4 * 1024 * 1024, partitionMaxBytes: 4 * 1024 * 1024 })
    expect(p.errorCode).toBe(0)
    highWatermark = Number(p.highWatermark)
    const batches = decodeBatches(recordsBuffer(p)) // checks every batch CRC
    for (const b of batches) for (const r of b.records) if (r.offset >= offset) records.push(r)
    if (records.length > 0) offset = records[records.length - 1]!.offset + 1
    if (offset >= highWatermark || batches.length === 0) break
  }
  return { records, highWatermark }
}

async function topicConfig(c: RawClient, topic: string, name: string): Promise<string | null | undefined> {
  const req = DescribeConfigs.createDescribeConfigsRequest({ resources: [DescribeConfigs.createDescribeConfigsResource({ resourceType: TOPIC_RESOURCE, resourceName: topic, configurationKeys: [name] })] })
  const res = await c.call(32, 4, (w) => DescribeConfigs.encodeDescribeConfigsRequest(w, req, 4), DescribeConfigs.decodeDescribeConfigsResponse)
  expect(res.results[0]!.errorCode).toBe(0)
  return res.results[0]!.configs.find((e) => e.name === name)?.value
}

/** Produces a mix of batches (keys, null values, headers, several records per batch) with acks 1, 0 and -1. */
async function produceMix(c: RawClient, topic: string, partitions: number, rounds: number): Promise<Map<number, Expected[]>> {
  const expected = new Map<number, Expected[]>()
  for (let p = 0; p < partitions; p++) expected.set(p, [])
  const ts = Date.now() - 10_000
  for (let round = 0; round < rounds; round++) {
    for (let p = 0; p < partitions; p++) {
      const list = expected.get(p)!
      const records = Array.from({ length: 1 + ((round + p) % 4) }, (_, i) => ({
        key: i % 2 === 0 ? Buffer.from(`k-${round}-${i}`) : null,
        value: round === 3 && i === 0 ? null : randomBytes(20 + ((round * 31 + i) % 200)),
        headers: i === 0 ? [{ key: 'round', value: Buffer.from(String(round)) }] : [],
        timestamp: ts + round * 10 + i,
      }))
      const acks = [1, 0, -1][round % 3]!
      if (acks === 0) await c.produceNoAck(topic, p, batchOf(records))
      else expect((await c.produce(topic, p, batchOf(records), acks)).errorCode).toBe(0)
      for (const r of records) list.push({ offset: list.length, key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp })
    }
  }
  // A final acks=1 request on the same connection: the acks=0 ones before it have been appended.
  for (let p = 0; p < partitions; p++) {
    const list = expected.get(p)!
    const res = await c.produce(topic, p, batchOf([{ value: Buffer.from('last'), timestamp: ts + 99_999 }]))
    expect(Number(res.baseOffset)).toBe(list.length)
    list.push({ offset: list.length, key: null, value: Buffer.from('last'), headers: [], timestamp: ts + 99_999 })
  }
  return expected
}

function expectRecords(got: FetchedRecord[], want: Expected[]): void {
  expect(got.length).toBe(want.length)
  got.forEach((r, i) => {
    const w = want[i]!
    expect(r.offset).toBe(w.offset)
    expect(r.key).toEqual(w.key)
    expect(r.value).toEqual(w.value)
    expect(r.timestamp).toBe(w.timestamp)
    expect(r.headers).toEqual(w.headers)
  })
}

describe('graceful restart', () => {
  it('in process (broker.stop): data, topics and configs survive', async () => {
    let tb = await startTestBroker()
    try {
      let c = await RawClient.connect(tb.host, tb.port)
      expect((await c.createTopic('keep', 3, { 'retention.ms': '7200000', 'segment.bytes': '16384' })).errorCode).toBe(0)
      const expected = await produceMix(c, 'keep', 3, 30)
      c.close()
      tb = await tb.restart()
      c = await RawClient.connect(tb.host, tb.port)
      const md = await c.metadata(['keep'])
      expect(md.topics[0]!.errorCode).toBe(0)
      expect(md.topics[0]!.partitions.length).toBe(3)
      for (const [p, want] of expected) {
        const { records, highWatermark } = await fetchPartition(c, 'keep', p)
        expect(highWatermark).toBe(want.length)
        expectRecords(records, want)
      }
      expect(await topicConfig(c, 'keep', 'retention.ms')).toBe('7200000')
      expect(await topicConfig(c, 'keep', 'segment.bytes')).toBe('16384')
      c.close()
    } finally {
      await tb.stop()
    }
  })

  it('child process (SIGTERM): exits 0, and everything is back after the restart', async () => {
    let proc = await startBrokerProcess()
    const { dataDir, port } = proc
    try {
      let c = await RawClient.connect(proc.host, proc.port)
      expect((await c.createTopic('term', 2, { 'cleanup.policy': 'delete', 'retention.bytes': '1000000000' })).errorCode).toBe(0)
      const expected = await produceMix(c, 'term', 2, 24)
      c.close()
      expect(await proc.kill('SIGTERM')).toBe(0)
      expect(proc.output()).toMatch(/shut down cleanly/)
      proc = await startBrokerProcess({ dataDir, port })
      c = await RawClient.connect(proc.host, proc.port)
      for (const [p, want] of expected) {
        const { records, highWatermark } = await fetchPartition(c, 'term', p)
        expect(highWatermark).toBe(want.length)
        expectRecords(records, want)
      }
      expect(await topicConfig(c, 'term', 'retention.bytes')).toBe('1000000000')
      c.close()
    } finally {
      if (proc.alive()) await proc.kill('SIGTERM')
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

/** The processes below pid (its children, theirs, ...), from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // The fields after the command's closing parenthesis: state, then the parent's pid.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // The process ended meanwhile.
    }
  }
  const out: number[] = []
  for (let queue = [pid]; queue.length > 0; ) for (const c of children.get(queue.shift()!) ?? []) out.push(c), queue.push(c)
  return out
}

describe('npm start', () => {
  it('a SIGTERM to npm stops the broker cleanly (npm hands it to the broker; a shell between them died and left the broker running)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'skein-npm-start-'))
    const [port, registryPort, restPort] = [await freePort(), await freePort(), await freePort()]
    const overrides = [`listeners=PLAINTEXT://127.0.0.1:${port}`, `log.dirs=${dataDir}`, `schema.registry.listeners=http://127.0.0.1:${registryPort}`, `rest.listeners=http://127.0.0.1:${restPort}`]
    // Its own process group, so that whatever is left is stopped by the group's id at the end.
    const npm = spawn('npm', ['start', '--', ...overrides.flatMap((o) => ['--override', o])], { cwd: REPO_ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    npm.stdout.on('data', (d: Buffer) => (output += d.toString()))
    npm.stderr.on('data', (d: Buffer) => (output += d.toString()))
    let broker: number | undefined
    try {
      for (let i = 0; !output.includes(' ready on '); i++) {
        if (i > 600 || npm.exitCode !== null) throw new Error(`npm start did not start a broker:\n${output}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      broker = descendants(npm.pid!).find((pid) => {
        try {
          // Node itself, not a shell whose command line names it.
          const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
          return /(^|\/)node$/.test(argv[0]!) && argv.includes('dist/src/main.js')
        } catch {
          return false
        }
      })
      expect(broker, 'the broker process under npm').toBeDefined()
      process.kill(npm.pid!, 'SIGTERM')
      for (let i = 0; existsSync(`/proc/${broker}`) && !readFileSync(`/proc/${broker}/stat`, 'utf8').includes(') Z '); i++) {
        if (i > 200) throw new Error(`the broker (pid ${broker}) still runs 20 s after npm got SIGTERM:\n${output.slice(-2000)}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      await new Promise((r) => setTimeout(r, 100))
      expect(output).toContain('shut down cleanly')
    } finally {
      try {
        process.kill(-npm.pid!, 'SIGKILL')
      } catch {
        // Everything in the group has ended.
      }
      if (broker !== undefined && existsSync(`/proc/${broker}`)) process.kill(broker, 'SIGKILL')
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 90_000)
})

describe('crash restart', () => {
  it('SIGKILL while producing: every acknowledged record is fetchable and the log validates', async () => {
    let proc = await startBrokerProcess({ overrides: ['log.segment.bytes=65536'] })
    const { dataDir, port } = proc
    try {
      const admin = await RawClient.connect(proc.host, proc.port)
      expect((await admin.createTopic('crash', 3, { 'retention.ms': '-1' })).errorCode).toBe(0)
      admin.close()
      const acked = new Map<number, Expected[]>([[0, []], [1, []], [2, []]])
      let stop = false
      // Three producers (one per partition), each pipelining acks=1 requests until the kill.
      const producers = [0, 1, 2].map(async (p) => {
        const c = await RawClient.connect(proc.host, proc.port)
        let n = 0
        try {
          while (!stop) {
            const inflight = Array.from({ length: 4 }, () => {
              const i = n++
              const value = Buffer.from(`p${p}-${i}-${randomBytes(8 + (i % 50)).toString('hex')}`)
              return c.produce('crash', p, batchOf([{ value, timestamp: 1_700_000_000_000 + i }])).then((res) => ({ res, value, i }))
            })
            for (const { res, value, i } of await Promise.all(inflight)) {
              expect(res.errorCode).toBe(0)
              acked.get(p)!.push({ offset: Number(res.baseOffset), key: null, value, headers: [], timestamp: 1_700_000_000_000 + i })
            }
          }
        } catch {
          // The connection died with the broker: requests in flight were never acknowledged.
        } finally {
          c.close()
        }
      })
      await new Promise((r) => setTimeout(r, 1200))
      expect(await proc.kill('SIGKILL')).toBe('SIGKILL')
      stop = true
      await Promise.all(producers)
      const total = [...acked.values()].reduce((s, l) => s + l.length, 0)
      expect(total).toBeGreaterThan(30)
      proc = await startBrokerProcess({ dataDir, port, overrides: ['log.segment.bytes=65536'] })
      const c = await RawClient.connect(proc.host, proc.port)
      for (const [p, want] of acked) {
        const { records, highWatermark } = await fetchPartition(c, 'crash', p)
        // The log is contiguous from 0 and holds at least every acknowledged record, unchanged.
        expect(records.map((r) => r.offset)).toEqual(records.map((_, i) => i))
        expect(highWatermark).toBe(records.length)
        expect(highWatermark).toBeGreaterThanOrEqual(want.length)
        for (const w of want) {
          const r = records[w.offset]!
          expect(r.value).toEqual(w.value)
          expect(r.timestamp).toBe(w.timestamp)
        }
        // Appends continue right after the recovered end.
        const res = await c.produce('crash', p, batchOf([{ value: Buffer.from('after the crash') }]))
        expect(res.errorCode).toBe(0)
        expect(Number(res.baseOffset)).toBe(highWatermark)
      }
      expect(await topicConfig(c, 'crash', 'retention.ms')).toBe('-1')
      c.close()
      console.info(`[restart] ${total} acknowledged records across 3 partitions survived SIGKILL`)
    } finally {
      if (proc.alive()) await proc.kill('SIGTERM')
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
