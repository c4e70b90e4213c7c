// Crashes during cleaning. A child process appends updates and tombstones to a compacted log and cleans
// it in a loop; it is killed with SIGKILL after a random delay or from inside a segment swap (after each
// of its steps). After every kill the log is reopened as after an unclean shutdown: it must be whole
// (every batch CRC-valid, offsets increasing), hold no leftover .cleaned/.swap file, and give, for every
// key, its latest confirmed value (or one from the append the kill interrupted). Then stray files are
// planted by hand and by a failing swap, and must be handled on open.
import { spawn } from 'node:child_process'
import { copyFileSync, existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { buildRecordBatch, checkBatchIntegrity, iterateBatches } from '../../src/protocol/records/index.js'
import { inflateBatch } from '../../src/protocol/records/inflate.js'
import type { SwapStep } from '../../src/storage/index.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../../src/storage/index.js'
import type { PartitionLog } from '../../src/storage/index.js'
import { cleanerCrashConfig } from './fixtures/cleaner-crash-shared.js'
import { T0, regionBytes, tempDir } from './helpers.js'

const root = join(import.meta.dirname, '..', '..')
const child = join(root, 'dist', 'test', 'storage', 'fixtures', 'cleaner-crash-child.js')

beforeAll(() => {
  // npm test compiles first (tsc before vitest); run `npx tsc -p tsconfig.json` before this file alone.
  if (!existsSync(child)) throw new Error(`${child} is missing: run npx tsc -p tsconfig.json first`)
})

/** One append as the child planned it: key -> value (null = tombstone), in record order. */
interface Planned {
  round: number
  index: number
  ops: Array<[string, string | null]>
  confirmed: boolean
}

function runAndKill(dataDir: string, round: number, seed: number, mode: string, delayMs: number): Promise<{ planned: Planned[]; selfKilled: boolean }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, dataDir, String(round), String(seed), mode], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    let timer: NodeJS.Timeout | undefined
    let killedByUs = false
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      if (timer === undefined && out.startsWith('ready\n')) {
        timer = setTimeout(() => {
          killedByUs = true
          proc.kill('SIGKILL')
        }, delayMs)
      }
    })
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const guard = setTimeout(() => {
      killedByUs = true
      proc.kill('SIGKILL')
    }, 20_000)
    proc.on('exit', (_code, signal) => {
      clearTimeout(guard)
      clearTimeout(timer)
      if (signal !== 'SIGKILL') return reject(new Error(`child exited on its own: ${err}`))
      const planned = new Map<string, Planned>()
      // Only whole lines count; a partial last line was cut by the kill.
      for (const line of out.split('\n').slice(0, -1)) {
        const [kind, r, i, ...rest] = line.split(' ')
        if (kind === 'P') {
          planned.set(`${r} ${i}`, {
            round: Number(r), index: Number(i), confirmed: false,
            ops: rest.map((p) => {
              const eq = p.indexOf('=')
              const v = p.slice(eq + 1)
              return [p.slice(0, eq), v === '~' ? null : v]
            }),
          })
        } else if (kind === 'A') {
          planned.get(`${r} ${i}`)!.confirmed = true
        }
      }
      resolve({ planned: [...planned.values()], selfKilled: !killedByUs })
    })
  })
}

function open(dataDir: string): { m: LogManager; log: PartitionLog } {
  const m = LogManager.open({ dataDir, defaults: { ...DEFAULT_LOG_CONFIG, ...cleanerCrashConfig }, cleanShutdown: false })
  return { m, log: m.get('compacted', 0) ?? m.create('compacted', 0) }
}

/** Every batch whole and CRC-valid, offsets increasing; returns the latest value per key. */
function validate(m: LogManager, log: PartitionLog): Map<string, string | null> {
  const r = log.read(log.logStartOffset, 1 << 30)
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  const latest = new Map<string, string | null>()
  let last = -1
  let end = 0
  for (const b of iterateBatches(bytes)) {
    expect(checkBatchIntegrity(bytes, b.position, bytes.length, native.crc32c)).toBeNull()
    expect(b.baseOffset).toBeGreaterThan(last)
    last = b.lastOffset
    end = b.position + b.size
    const inflated = inflateBatch(bytes.subarray(b.position), 1 << 26)
    for (const rec of inflated.records) latest.set(rec.key!.toString(), rec.value?.toString() ?? null)
  }
  expect(end).toBe(bytes.length)
  expect(last).toBeLessThan(log.logEndOffset)
  return latest
}

describe('SIGKILL during cleaning', () => {
  const dir = tempDir('skein-cleaner-crash-')
  afterAll(() => dir.cleanup())

  it('leaves a valid log with the latest value of every key, whatever the point of the kill', async () => {
    const modes: Array<SwapStep | 'random'> = ['random', 'cleaned-written', 'renamed-to-swap', 'old-deleted', 'swapped', 'random', 'renamed-to-swap', 'old-deleted', 'random']
    // Confirmed history in order: the latest op per key, plus each round's interrupted append.
    const confirmedLatest = new Map<string, string | null>()
    let selfKills = 0
    let swapsCompleted = 0
    let cleanedDeleted = 0
    const started = Date.now()
    for (const [round, mode] of modes.entries()) {
      const { planned, selfKilled } = await runAndKill(dir.path, round, 1000 + round * 7919, mode, 300 + ((round * 397) % 900))
      if (selfKilled) selfKills++
      const interrupted = planned.filter((p) => !p.confirmed)
      expect(interrupted.length).toBeLessThanOrEqual(1)
      const confirmed = planned.filter((p) => p.confirmed)
      expect(confirmed.length).toBeGreaterThan(0)

      const names = readdirSync(join(dir.path, 'compacted-0'))
      const { m, log } = open(dir.path)
      try {
        swapsCompleted += log.recovery.swapsCompleted
        cleanedDeleted += log.recovery.cleanedFilesDeleted
        expect(readdirSync(log.dir).filter((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))).toEqual([])
        if (names.some((n) => n.endsWith('.log.swap'))) expect(log.recovery.swapsCompleted).toBeGreaterThan(0)
        const inLog = validate(m, log)
        // What this round confirmed moves the expectation forward.
        for (const p of confirmed) for (const [k, v] of p.ops) confirmedLatest.set(k, v)
        // The interrupted append may or may not be in the log: its values are acceptable too.
        const maybe = new Map<string, Set<string | null>>()
        for (const p of interrupted) for (const [k, v] of p.ops) (maybe.get(k) ?? maybe.set(k, new Set()).get(k)!).add(v)
        for (const [k, v] of confirmedLatest) {
          const got = inLog.has(k) ? inLog.get(k)! : null
          if (maybe.get(k)?.has(got)) continue
          // A tombstone may have been removed (delete.retention.ms = 0): then the key is absent.
          expect({ key: k, value: got }).toEqual({ key: k, value: v })
        }
        // No key the child never wrote, and nothing older than confirmed comes back.
        for (const k of inLog.keys()) expect(confirmedLatest.has(k) || maybe.has(k)).toBe(true)
        // Whatever the interrupted append left is now history for the next round.
        for (const p of interrupted) for (const [k] of p.ops) if (inLog.has(k) || confirmedLatest.get(k) !== null) confirmedLatest.set(k, inLog.get(k) ?? null)
      } finally {
        await m.close()
      }
    }
    // The step modes kill from inside a swap; the run exercised recovery of both kinds of leftovers.
    expect(selfKills).toBeGreaterThanOrEqual(4)
    expect(swapsCompleted).toBeGreaterThan(0)
    expect(cleanedDeleted).toBeGreaterThan(0)
    expect(Date.now() - started).toBeLessThan(120_000)
  }, 180_000)
})

describe('stray cleaner files on open', () => {
  const COMPACT = { ...DEFAULT_LOG_CONFIG, cleanupPolicy: 'compact' as const, segmentBytes: 2048, segmentIndexBytes: 64 * 1024, indexIntervalBytes: 256, minCleanableDirtyRatio: 0 }

  function build(dataDir: string): { m: LogManager; log: PartitionLog; latest: Map<string, string> } {
    const m = LogManager.open({ dataDir, defaults: COMPACT, cleanShutdown: true })
    const log = m.create('t', 0)
    const latest = new Map<string, string>()
    for (let i = 0; i < 300; i++) {
      const key = `k${i % 12}`
      const value = `v${i}`
      log.append(buildRecordBatch([{ key: Buffer.from(key), value: Buffer.from(value), timestamp: T0 }], native.crc32c), { leaderEpoch: 0 })
      latest.set(key, value)
    }
    return { m, log, latest }
  }

  function readLatest(m: LogManager, log: PartitionLog): Map<string, string | null> {
    return validate(m, log)
  }

  it('removes .cleaned files and drops an index .swap (rebuilding that index)', async () => {
    const d = tempDir('skein-cleaner-stray-')
    try {
      const { m, log, latest } = build(d.path)
      const bases = log.segmentBaseOffsets()
      await m.close()
      const dir = log.dir
      const first = String(bases[0]).padStart(20, '0')
      const second = String(bases[1]).padStart(20, '0')
      copyFileSync(join(dir, `${first}.log`), join(dir, `${first}.log.cleaned`))
      writeFileSync(join(dir, `${first}.index.cleaned`), Buffer.alloc(16))
      copyFileSync(join(dir, `${second}.index`), join(dir, `${second}.index.swap`))
      writeFileSync(join(dir, `${second}.index`), Buffer.alloc(64, 0xff))
      const m2 = LogManager.open({ dataDir: d.path, defaults: COMPACT, cleanShutdown: true })
      const log2 = m2.get('t', 0)!
      expect(log2.recovery.cleanedFilesDeleted).toBe(2)
      expect(log2.recovery.indexesRebuilt + log2.recovery.segmentsRecovered).toBeGreaterThan(0)
      expect(readdirSync(dir).filter((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))).toEqual([])
      expect(log2.segmentBaseOffsets()).toEqual(bases)
      expect(readLatest(m2, log2)).toEqual(latest)
      // Lookups through the rebuilt index work.
      const r = log2.read(bases[1]! + 3, 1)
      expect(regionBytes(r).readInt32BE(4)).toBeLessThanOrEqual(bases[1]! + 3)
      m2.releaseLease(r.leaseId)
      await m2.close()
    } finally {
      d.cleanup()
    }
  })

  for (const step of ['cleaned-written', 'renamed-to-swap', 'old-deleted'] as const) {
    it(`completes or rolls back a swap interrupted after '${step}'`, async () => {
      const d = tempDir('skein-cleaner-stray-')
      try {
        const { m, log, latest } = build(d.path)
        // The swap is made to fail at the step: the files stay exactly as a crash there leaves them.
        await m.close()
        const m1 = LogManager.open({
          dataDir: d.path, defaults: COMPACT, cleanShutdown: true,
          cleaner: { onSwapStep: (_l, s) => { if (s === step) throw new Error(`crash at ${s}`) } },
        })
        const log1 = m1.get('t', 0)!
        const r = await m1.cleaner.clean(log1, { force: true })
        expect(r.reason).toBe('failed')
        const names = readdirSync(log1.dir)
        // Before the commit point the pass removes its own .cleaned files; after it the .swap stays for
        // the next open (the SIGKILL test above covers .cleaned files left by a crash).
        if (step === 'cleaned-written') expect(names.filter((n) => n.endsWith('.cleaned'))).toEqual([])
        else expect(names.some((n) => n.endsWith('.log.swap'))).toBe(true)
        // The log refuses work until reopened.
        expect(() => log1.append(buildRecordBatch([{ key: Buffer.from('x'), value: Buffer.from('y') }], native.crc32c), { leaderEpoch: 0 })).toThrow(/KAFKA_STORAGE_ERROR|failed/)
        await m1.close()
        const m2 = LogManager.open({ dataDir: d.path, defaults: COMPACT, cleanShutdown: false })
        const log2 = m2.get('t', 0)!
        expect(readdirSync(log2.dir).filter((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))).toEqual([])
        expect(log2.recovery.swapsCompleted).toBe(step === 'cleaned-written' ? 0 : 1)
        expect(readLatest(m2, log2)).toEqual(latest)
        // And the next pass finishes the job.
        expect((await m2.cleaner.clean(log2, { force: true })).cleaned).toBe(true)
        expect(readLatest(m2, log2)).toEqual(latest)
        await m2.close()
        expect(log.isClosed).toBe(true)
      } finally {
        d.cleanup()
      }
    })
  }
})
