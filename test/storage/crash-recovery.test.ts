// Crash tests: a child process appends in a loop and is killed with SIGKILL at random points; the log
// is then reopened as after an unclean shutdown and must hold every completed append, whole, and
// validate end to end. Then tails and indexes are damaged by hand before reopening.
import { spawn } from 'node:child_process'
import { closeSync, existsSync, ftruncateSync, openSync, readSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { BatchHeaderView, checkBatchIntegrity } from '../../src/protocol/records/index.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../../src/storage/index.js'
import type { PartitionLog } from '../../src/storage/index.js'
import { crashConfig, recordValue, xorshift } from './fixtures/crash-shared.js'
import { T0, decodeAll, makeBatch, regionBytes, tempDir } from './helpers.js'

const root = join(import.meta.dirname, '..', '..')
const writer = join(root, 'dist', 'test', 'storage', 'fixtures', 'crash-writer.js')

beforeAll(() => {
  // npm test compiles first (tsc before vitest); run `npx tsc -p tsconfig.json` before this file alone.
  if (!existsSync(writer)) throw new Error(`${writer} is missing: run npx tsc -p tsconfig.json first`)
})

interface Completed {
  base: number
  last: number
  round: number
  index: number
  count: number
}

/** Runs the writer, kills it with SIGKILL delayMs after it is ready, returns the appends it reported. */
function runAndKill(dataDir: string, round: number, seed: number, delayMs: number): Promise<Completed[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writer, dataDir, String(round), String(seed)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    let timer: NodeJS.Timeout | undefined
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      if (timer === undefined && out.startsWith('ready\n')) timer = setTimeout(() => child.kill('SIGKILL'), delayMs)
    })
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const guard = setTimeout(() => child.kill('SIGKILL'), 15_000)
    child.on('exit', (_code, signal) => {
      clearTimeout(guard)
      if (signal !== 'SIGKILL') return reject(new Error(`writer exited on its own: ${err}`))
      // Only whole lines are completed appends; a partial last line was cut by the kill.
      const lines = out.split('\n').slice(0, -1).filter((l) => l !== 'ready')
      resolve(lines.map((l) => {
        const [base, last, r, index, count] = l.split(' ').map(Number)
        return { base: base!, last: last!, round: r!, index: index!, count: count! }
      }))
    })
  })
}

/** Every batch from the log start: whole, CRC-valid, offsets contiguous. Returns records by offset. */
function validateWholeLog(m: LogManager, log: PartitionLog): Map<number, string> {
  const r = log.read(log.logStartOffset, 1 << 30)
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  let pos = 0
  let expected = log.logStartOffset
  while (pos < bytes.length) {
    expect(checkBatchIntegrity(bytes, pos, bytes.length, native.crc32c)).toBeNull()
    const v = new BatchHeaderView(bytes, pos)
    expect(v.baseOffset).toBe(expected)
    expected = v.lastOffset + 1
    pos += v.sizeInBytes
  }
  expect(expected).toBe(log.logEndOffset)
  return new Map(decodeAll(bytes).map((rec) => [rec.offset, rec.value!.toString()]))
}

function checkLookups(m: LogManager, log: PartitionLog, step: number): void {
  for (let off = log.logStartOffset; off < log.logEndOffset; off += step) {
    const r = log.read(off, 1)
    const v = new BatchHeaderView(regionBytes(r), 0)
    expect(v.baseOffset).toBeLessThanOrEqual(off)
    expect(v.lastOffset).toBeGreaterThanOrEqual(off)
    m.releaseLease(r.leaseId)
  }
}

describe('crash recovery (SIGKILL)', () => {
  const dir = tempDir('skein-crash-')
  afterAll(() => dir.cleanup())

  it('keeps every completed append across random kills', async () => {
    const rand = xorshift(20240611)
    const completed: Completed[] = []
    for (let round = 1; round <= 6; round++) {
      const delay = 10 + (rand() % 140)
      completed.push(...(await runAndKill(dir.path, round, 1000 + round, delay)))
      const m = LogManager.open({ dataDir: dir.path, defaults: { ...DEFAULT_LOG_CONFIG, ...crashConfig }, cleanShutdown: false })
      const log = m.get('crash', 0)!
      expect(log).toBeDefined()
      const values = validateWholeLog(m, log)
      const last = completed[completed.length - 1]!
      expect(log.logEndOffset).toBeGreaterThanOrEqual(last.last + 1)
      for (const c of completed) {
        for (let j = 0; j < c.count; j++) {
          expect(values.get(c.base + j)?.startsWith(recordValue(c.round, c.index, j, 0))).toBe(true)
        }
      }
      checkLookups(m, log, 17)
      // Batches appended after reopening continue the offsets.
      expect(log.state().segmentCount).toBeGreaterThan(0)
      await m.close()
    }
    expect(completed.length).toBeGreaterThan(50)
  }, 60_000)
})

describe('damaged files', () => {
  const settings = { segmentBytes: 2048, indexIntervalBytes: 200, segmentIndexBytes: 4096 }
  const defaults = { ...DEFAULT_LOG_CONFIG, ...settings }

  async function build(path: string, batches = 40): Promise<{ sizes: number[] }> {
    const m = LogManager.open({ dataDir: path, defaults, cleanShutdown: true })
    const log = m.create('d', 0)
    const sizes: number[] = []
    for (let i = 0; i < batches; i++) {
      const b = makeBatch(`b${i}`, 2, T0 + i, 60)
      sizes.push(b.length)
      log.append(b, { leaderEpoch: 0 })
    }
    await m.close()
    return { sizes }
  }

  function segmentFiles(path: string, suffix: string): string[] {
    return readdirSync(join(path, 'd-0')).filter((f) => f.endsWith(suffix)).sort().map((f) => join(path, 'd-0', f))
  }

  function damage(file: string, fn: (fd: number, size: number) => void): void {
    const fd = openSync(file, 'r+')
    try {
      fn(fd, statSync(file).size)
    } finally {
      closeSync(fd)
    }
  }

  it('truncates a torn tail of the active segment to the last whole batch', async () => {
    const d = tempDir()
    try {
      const { sizes } = await build(d.path)
      const active = segmentFiles(d.path, '.log').at(-1)!
      const sizeBefore = statSync(active).size
      damage(active, (fd, size) => ftruncateSync(fd, size - 7))
      const m = LogManager.open({ dataDir: d.path, defaults, cleanShutdown: false })
      const log = m.get('d', 0)!
      expect(log.logEndOffset).toBe(78)
      expect(log.recovery.bytesTruncated).toBe(sizes.at(-1)! - 7)
      expect(statSync(active).size).toBe(sizeBefore - sizes.at(-1)!)
      const values = validateWholeLog(m, log)
      expect(values.get(77)?.startsWith('b38-1')).toBe(true)
      checkLookups(m, log, 1)
      expect(log.append(makeBatch('after', 1), { leaderEpoch: 0 }).baseOffset).toBe(78)
      await m.close()
    } finally {
      d.cleanup()
    }
  })

  it('truncates at a corrupt batch and drops the segments after it', async () => {
    const d = tempDir()
    try {
      await build(d.path)
      const logs = segmentFiles(d.path, '.log')
      expect(logs.length).toBeGreaterThan(2)
      const victim = logs[1]!
      const victimBase = Number(victim.slice(-24, -4))
      // Flip a byte inside the second batch of the second segment.
      const lengthField = Buffer.alloc(4)
      damage(victim, (fd) => readSync(fd, lengthField, 0, 4, 8))
      const firstSize = 12 + lengthField.readInt32BE(0)
      damage(victim, (fd) => writeSync(fd, Buffer.from([0xee]), 0, 1, firstSize + 70))
      // The clean-shutdown path trusts the .log; say the shutdown was unclean from before segment 1.
      rmSync(join(d.path, 'd-0', 'recovery-point-offset-checkpoint'))
      const m = LogManager.open({ dataDir: d.path, defaults, cleanShutdown: false })
      const log = m.get('d', 0)!
      expect(log.logEndOffset).toBe(victimBase + 2)
      expect(log.segmentBaseOffsets()).toEqual([0, victimBase])
      expect(log.recovery.segmentsDropped).toBe(logs.length - 2)
      expect(segmentFiles(d.path, '.log')).toEqual(logs.slice(0, 2))
      validateWholeLog(m, log)
      checkLookups(m, log, 1)
      expect(log.append(makeBatch('x', 1), { leaderEpoch: 0 }).baseOffset).toBe(victimBase + 2)
      await m.close()
    } finally {
      d.cleanup()
    }
  })

  it('rebuilds a missing, truncated or corrupt index', async () => {
    const d = tempDir()
    try {
      await build(d.path)
      const idx = segmentFiles(d.path, '.index')
      const tidx = segmentFiles(d.path, '.timeindex')
      rmSync(idx[0]!)
      damage(idx[1]!, (fd, size) => ftruncateSync(fd, size - 3))
      damage(idx.at(-1)!, (fd, size) => {
        const junk = Buffer.alloc(8, 0)
        junk.writeInt32BE(1, 0)
        junk.writeInt32BE(999_999, 4)
        writeSync(fd, junk, 0, 8, Math.max(0, size - 8))
      })
      rmSync(tidx[2]!)
      const m = LogManager.open({ dataDir: d.path, defaults, cleanShutdown: true })
      const log = m.get('d', 0)!
      expect(log.recovery.indexesRebuilt + log.recovery.segmentsRecovered).toBeGreaterThanOrEqual(3)
      expect(log.logEndOffset).toBe(80)
      checkLookups(m, log, 1)
      for (let i = 0; i < 40; i++) expect(log.offsetForTimestamp(T0 + i)?.offset).toBe(2 * i)
      await m.close()
      // The rebuilt files are trimmed and consistent: a second clean open rebuilds nothing.
      const m2 = LogManager.open({ dataDir: d.path, defaults, cleanShutdown: true })
      expect(m2.get('d', 0)!.recovery).toEqual({ segmentsRecovered: 0, bytesTruncated: 0, segmentsDropped: 0, indexesRebuilt: 0, cleanedFilesDeleted: 0, swapsCompleted: 0 })
      checkLookups(m2, m2.get('d', 0)!, 1)
      await m2.close()
    } finally {
      d.cleanup()
    }
  })

  it('treats a preallocated index full of zeros (crash while active) as stale', async () => {
    const d = tempDir()
    try {
      await build(d.path)
      const idx = segmentFiles(d.path, '.index').at(-1)!
      damage(idx, (fd) => ftruncateSync(fd, 4096))
      const m = LogManager.open({ dataDir: d.path, defaults, cleanShutdown: true })
      const log = m.get('d', 0)!
      expect(log.recovery.indexesRebuilt).toBe(1)
      checkLookups(m, log, 1)
      await m.close()
    } finally {
      d.cleanup()
    }
  })
})
