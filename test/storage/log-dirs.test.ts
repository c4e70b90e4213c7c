// A LogManager over several data directories: placement by count, a move through a -future copy (byte-
// identical, epochs kept), the recovery of a swap cut short between its renames and of an unfinished
// copy, duplicate partition directories refused, and an I/O failure that offlines a directory only when
// a probe of the directory fails too (EIO, and a full disk in a cluster, without a probe). With each
// directory its own filesystem (two tmpfs, root only), deleting or setting aside a partition of the second
// renames it within that directory (a rename across filesystems would fail with EXDEV).
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { isLogDirFailure, LogManager, type PartitionLog } from '../../src/storage/index.js'
import { T0, makeBatch, openManager, tempDir } from './helpers.js'
import { mountTmpfs } from '../harness/disk.js'

let cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups) c()
  cleanups = []
})

function dirs(): { a: string; b: string } {
  const d = tempDir('skein-logdirs-')
  cleanups.push(d.cleanup)
  return { a: join(d.path, 'a'), b: join(d.path, 'b') }
}

function open(a: string, b: string): LogManager {
  return openManager(a, {}, { dataDirs: [a, b] })
}

function logBytes(log: PartitionLog): Buffer {
  return Buffer.concat(readdirSync(log.dir).filter((n) => n.endsWith('.log')).sort().map((n) => readFileSync(join(log.dir, n))))
}

describe('a LogManager over two data directories', () => {
  it('places new partitions in the directory with the fewest and moves one through a -future copy', async () => {
    const { a, b } = dirs()
    const lm = open(a, b)
    const logs = [0, 1, 2, 3].map((p) => lm.create('t', p))
    expect(logs.map((l) => l.state().logDir)).toEqual([a, b, a, b])
    const log = lm.get('t', 0)!
    log.assignLeaderEpoch(0)
    for (let i = 0; i < 5; i++) log.append(makeBatch(`x${i}`, 3), { leaderEpoch: 0, now: T0 })
    log.assignLeaderEpoch(2)
    for (let i = 0; i < 5; i++) log.append(makeBatch(`y${i}`, 2), { leaderEpoch: 2, now: T0 })
    const before = logBytes(log)
    const epochs = log.epochEntries()
    expect(lm.startMove('t', 0, b)).toBe(true)
    expect(readdirSync(b).some((n) => /^t-0\..+-future$/.test(n))).toBe(true)
    expect(lm.moveStep('t', 0, 100)).toBe('copying')
    while (lm.moveStep('t', 0, 100) !== 'caught-up') { /* copy on */ }
    log.append(makeBatch('late', 1), { leaderEpoch: 2, now: T0 })
    expect(await lm.completeMove('t', 0)).toBe(true)
    const moved = lm.get('t', 0)!
    expect(moved.state().logDir).toBe(b)
    expect(existsSync(join(a, 't-0'))).toBe(false)
    expect(logBytes(moved).subarray(0, before.length).equals(before)).toBe(true)
    expect(moved.logEndOffset).toBe(26)
    expect(moved.epochEntries()).toEqual(epochs)
    // A move to where it is already is nothing; an unknown directory is LOG_DIR_NOT_FOUND.
    expect(lm.startMove('t', 0, b)).toBe(false)
    expect(() => lm.startMove('t', 0, join(a, '..', 'c'))).toThrow(expect.objectContaining({ code: ErrorCode.LOG_DIR_NOT_FOUND }))
    await lm.close()
  })

  it('counts partitions per directory as they come and go, so placing one does not walk every log', async () => {
    const { a, b } = dirs()
    const lm = open(a, b)
    const n = 600
    const looks = vi.spyOn(LogManager, 'logDirOf')
    for (let p = 0; p < n; p++) lm.create('t', p)
    // One look at each log as it enters (issue 30); counting every log per new partition was n²/2 looks (179,700 here).
    expect(looks.mock.calls.length).toBeLessThan(4 * n)
    looks.mockRestore()
    expect(lm.partitionCounts()).toEqual(new Map([[a, n / 2], [b, n / 2]]))
    // Partitions deleted from the first directory: the next new ones go there.
    for (let p = 0; p < 20; p += 2) lm.delete('t', p)
    expect(lm.partitionCounts()).toEqual(new Map([[a, n / 2 - 10], [b, n / 2]]))
    expect(Array.from({ length: 10 }, (_, p) => lm.create('u', p).state().logDir)).toEqual(Array(10).fill(a))
    // A copy being written counts in its directory until it is dropped.
    expect(lm.startMove('u', 0, b)).toBe(true)
    expect(lm.partitionCounts()).toEqual(new Map([[a, n / 2], [b, n / 2 + 1]]))
    lm.abandonMove('u', 0)
    expect(lm.partitionCounts()).toEqual(new Map([[a, n / 2], [b, n / 2]]))
    await lm.close()
  })

  it('finishes a swap cut short, drops an unfinished copy and refuses a partition found twice', async () => {
    const { a, b } = dirs()
    const lm = open(a, b)
    lm.create('t', 0).append(makeBatch('v', 4), { leaderEpoch: 0, now: T0 })
    lm.create('t', 1).append(makeBatch('w', 2), { leaderEpoch: 0, now: T0 })
    await lm.close()
    // t-0: only its -future copy is left (the current was renamed -delete). t-1: a stale copy beside it.
    renameSync(join(a, 't-0'), join(b, 't-0.0123abcd-future'))
    cpSync(join(b, 't-1'), join(a, 't-1.4567cdef-future'), { recursive: true })
    const again = open(a, b)
    expect(again.get('t', 0)!.state()).toMatchObject({ logDir: b, logEndOffset: 4 })
    expect(again.get('t', 1)!.state()).toMatchObject({ logDir: b, logEndOffset: 2 })
    expect(readdirSync(a).filter((n) => n.endsWith('-future'))).toEqual([])
    await again.close()
    cpSync(join(b, 't-1'), join(a, 't-1'), { recursive: true })
    expect(() => open(a, b)).toThrow(/duplicate log directories for t-1/)
  })

  it('takes a directory offline on an I/O error only when a probe of the directory fails too', async () => {
    const { a, b } = dirs()
    const failed: string[] = []
    const lm = openManager(a, {}, { dataDirs: [a, b], onLogDirFailure: (d) => failed.push(d) })
    lm.create('t', 0)
    lm.create('t', 1)
    // A file in the way of one partition: that partition fails, the directory stays.
    mkdirSync(a, { recursive: true })
    writeFileSync(join(a, 't-2'), 'in the way')
    expect(() => lm.create('t', 2, {}, a)).toThrow(expect.objectContaining({ code: ErrorCode.KAFKA_STORAGE_ERROR }))
    expect(lm.offlineDirs.size).toBe(0)
    rmSync(b, { recursive: true, force: true })
    expect(lm.probeLogDirs()).toEqual([b])
    expect(failed).toEqual([b])
    expect(lm.get('t', 1)).toBeUndefined()
    expect(lm.offlineDirOf('t', 1)).toBe(b)
    expect(lm.create('t', 3).state().logDir).toBe(a)
    expect(isLogDirFailure(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }))).toBe(false)
    await lm.close()
  })

  it('believes EIO and, in a cluster, a full disk without a probe; a single broker only refuses the write on a full disk', async () => {
    const { a, b } = dirs()
    const enospc = new Error('KAFKA_STORAGE_ERROR: write to x.log failed: ENOSPC: no space left on device, write')
    const single = openManager(a, {}, { dataDirs: [a, b] })
    single.create('t', 0, {}, a)
    expect(single.failsLogDir(enospc)).toBe(false)
    expect(single.suspectLogDir(a, enospc)).toBe(false)
    // The directory is healthy (a probe would pass), yet EIO is the device's: offline.
    expect(single.suspectLogDir(a, Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }))).toBe(true)
    expect(single.offlineDirOf('t', 0)).toBe(a)
    await single.close()
    const failed: string[] = []
    const cluster = openManager(a, {}, { dataDirs: [a, b], diskFullFailsLogDir: true, cleanShutdown: false, onLogDirFailure: (d) => failed.push(d) })
    expect(cluster.failsLogDir(enospc)).toBe(true)
    expect(cluster.suspectLogDir(b, enospc)).toBe(true)
    expect(failed).toEqual([b])
    expect(cluster.get('t', 0)).toBeDefined()
    await cluster.close()
  })
})

const notRoot = process.getuid?.() !== 0

describe.skipIf(notRoot)(`data directories on two filesystems${notRoot ? ' (skipped: mounting a tmpfs needs root)' : ''}`, () => {
  function tmpfs(): string {
    const { dir, unmount } = mountTmpfs('skein-logdirs-fs-', '4m')
    cleanups.push(unmount)
    return dir
  }

  it('deletes and sets aside a partition of the second directory within it', async () => {
    const [a, b] = [tmpfs(), tmpfs()]
    const lm = open(a, b)
    try {
      lm.create('t', 0, {}, b)
      lm.create('t', 1, {}, b)
      lm.get('t', 0)!.append(makeBatch('x', 1), { leaderEpoch: 0, now: T0 })
      lm.delete('t', 0)
      const stray = await lm.moveAside('t', 1)
      expect(existsSync(join(b, stray))).toBe(true)
      await lm.removalsDone()
      expect(readdirSync(b).filter((n) => n.startsWith('t-'))).toEqual([stray])
      expect(readdirSync(a).filter((n) => n.startsWith('t-'))).toEqual([])
    } finally {
      await lm.close()
    }
  })
})
