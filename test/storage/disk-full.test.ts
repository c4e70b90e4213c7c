// A full disk under a real filesystem (a 1 MiB tmpfs, so root only): in a cluster (diskFullFailsLogDir)
// the first ENOSPC of an append takes the data directory offline, as Kafka's LogDirFailureChannel does;
// for a single broker it only refuses the writes that do not fit and takes them again once space returns.
// Either way no part of a refused batch stays in the log, and a torn tail found at the next open is cut.
// The log cleaner's I/O errors count as the directory's too. With log.dir.failure.retry.interval.ms (the
// router's logDirFailureRetryIntervalMs) a cluster's directory offline for lack of space comes back once
// space returns, its partitions recovered; one failed otherwise (EIO from an ext4 on a loop device that is
// shut down, or a directory removed) does not.
import { execFileSync } from 'node:child_process'
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { buildRecordBatch } from '../../src/protocol/records/index.js'
import type { ShardRouter } from '../../src/shard/index.js'
import { fillFilesystem, mountTmpfs } from '../harness/disk.js'
import { spreadPartitions, startRouter } from '../shard/helpers.js'
import { makeBatch, openManager, readAll } from './helpers.js'

const notRoot = process.getuid?.() !== 0
// Mounting a tmpfs needs root (CI runs as root); elsewhere the test says why it skipped.
const reason = notRoot ? ' (skipped: mounting a tmpfs needs root)' : ''

let cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.reverse()) c()
  cleanups = []
})

function smallDisk(): string {
  const { dir, unmount } = mountTmpfs('skein-diskfull-', '1m')
  cleanups.push(unmount)
  return dir
}

/** Fills the filesystem of dir with a file, page by page, until ENOSPC; returns its path. */
function fill(dir: string): string {
  const path = join(dir, 'filler')
  fillFilesystem(path)
  return path
}

const BIG = 16 * 1024

function logFileBytes(partitionDir: string): number {
  return readdirSync(partitionDir).filter((n) => n.endsWith('.log')).reduce((sum, n) => sum + statSync(join(partitionDir, n)).size, 0)
}

async function appendUntilRefused(router: ShardRouter, acked: Buffer[]): Promise<number> {
  for (let i = 0; i < 64; i++) {
    const records = makeBatch(`full-${i}`, 1, Date.now(), BIG)
    const [r] = await router.append([{ topic: 't', partition: 0, records, leaderEpoch: 0 }])
    if (!r!.ok) return r!.errorCode
    acked.push(records)
  }
  throw new Error('the disk never filled')
}

describe.skipIf(notRoot)(`a full disk${reason}`, () => {
  it('takes the log dir offline in a cluster; the next open has every acknowledged batch and no partial one', async () => {
    const dir = smallDisk()
    const failed: string[] = []
    const router = await startRouter(dir, 0, { diskFullFailsLogDir: true, onLogDirFailure: (d) => failed.push(d), logDirProbeIntervalMs: 0 })
    const acked: Buffer[] = []
    try {
      await router.createPartitions([{ topic: 't', partition: 0 }])
      for (let i = 0; i < 3; i++) {
        const records = makeBatch(`before-${i}`, 2, Date.now(), 100)
        const [r] = await router.append([{ topic: 't', partition: 0, records, leaderEpoch: 0 }])
        expect(r!.ok).toBe(true)
        acked.push(records)
      }
      const filler = fill(dir)
      expect(await appendUntilRefused(router, acked)).toBe(ErrorCode.KAFKA_STORAGE_ERROR)
      // The router looks at its shards' directories after a storage error (or now, when asked).
      await router.checkLogDirs()
      await vi.waitFor(() => expect(failed).toEqual([dir]))
      expect(router.offlineDirs.has(dir)).toBe(true)
      // Without a retry interval (Kafka's behaviour) it is not counted as one that may come back: a broker
      // whose every dir is offline so halts.
      expect(router.offlineForSpace.size).toBe(0)
      expect(await router.retryFullLogDirs()).toEqual([])
      // Offline for good, even with space back: only a restart brings the directory back (Kafka).
      rmSync(filler)
      const [after] = await router.append([{ topic: 't', partition: 0, records: makeBatch('after', 1), leaderEpoch: 0 }])
      expect(after).toMatchObject({ ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
    } finally {
      await router.close()
    }
    const partitionDir = join(dir, 't-0')
    const ackedBytes = acked.reduce((s, b) => s + b.length, 0)
    expect(logFileBytes(partitionDir)).toBe(ackedBytes)
    // A torn tail (the first half of a batch, as a crash in the middle of a write leaves) is cut at the next open.
    const torn = makeBatch('torn', 1, Date.now(), 1000)
    appendFileSync(join(partitionDir, '00000000000000000000.log'), torn.subarray(0, torn.length >> 1))
    const lm = openManager(dir, {}, { cleanShutdown: false })
    try {
      const log = lm.get('t', 0)!
      const values = readAll(lm, log).map((r) => r.value?.toString().split('.')[0])
      expect(values.filter((v) => v!.startsWith('before-'))).toEqual(['before-0-0', 'before-0-1', 'before-1-0', 'before-1-1', 'before-2-0', 'before-2-1'])
      expect(values.length).toBe(6 + acked.length - 3)
      expect(log.logEndOffset).toBe(values.length)
      expect(logFileBytes(partitionDir)).toBe(ackedBytes)
    } finally {
      await lm.close()
    }
  })

  it('refuses writes on a single broker and takes them again once space returns, leaving nothing of a refused batch', async () => {
    const dir = smallDisk()
    const failed: string[] = []
    const router = await startRouter(dir, 0, { onLogDirFailure: (d) => failed.push(d), logDirProbeIntervalMs: 0 })
    const acked: Buffer[] = []
    try {
      await router.createPartitions([{ topic: 't', partition: 0 }])
      const filler = fill(dir)
      expect(await appendUntilRefused(router, acked)).toBe(ErrorCode.KAFKA_STORAGE_ERROR)
      await router.checkLogDirs()
      expect(router.offlineDirs.size).toBe(0)
      rmSync(filler)
      const records = makeBatch('after', 1, Date.now(), BIG)
      const [r] = await router.append([{ topic: 't', partition: 0, records, leaderEpoch: 0 }])
      expect(r!.ok).toBe(true)
      acked.push(records)
      expect(failed).toEqual([])
    } finally {
      await router.close()
    }
    expect(logFileBytes(join(dir, 't-0'))).toBe(acked.reduce((s, b) => s + b.length, 0))
    const lm = openManager(dir)
    try {
      const values = readAll(lm, lm.get('t', 0)!).map((v) => v.value?.toString().split('.')[0])
      expect(values.at(-1)).toBe('after-0')
      expect(values.length).toBe(acked.length)
    } finally {
      await lm.close()
    }
  })
  it('on a single broker, a roll that finds the disk full refuses the append and leaves the old segment active; writes resume once space returns', async () => {
    const dir = smallDisk()
    const router = await startRouter(dir, 0, { logDirProbeIntervalMs: 0 })
    const acked: Buffer[] = []
    try {
      await router.createPartitions([{ topic: 't', partition: 0, overrides: { segmentBytes: 24 * 1024 } }])
      const first = makeBatch('first', 1, Date.now(), 10_000)
      expect((await router.append([{ topic: 't', partition: 0, records: first, leaderEpoch: 0 }]))[0]!.ok).toBe(true)
      acked.push(first)
      const filler = fill(dir)
      // Over segment.bytes: the append rolls, and the old segment's index files find no space (before the
      // fix this answered UNKNOWN_SERVER_ERROR; background roll work could also fail the partition for good).
      const [refused] = await router.append([{ topic: 't', partition: 0, records: makeBatch('rolled', 1, Date.now(), BIG), leaderEpoch: 0 }])
      expect(refused).toMatchObject({ ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
      rmSync(filler)
      const after = makeBatch('after', 1, Date.now(), 1000)
      const [r] = await router.append([{ topic: 't', partition: 0, records: after, leaderEpoch: 0 }])
      expect(r).toMatchObject({ ok: true })
      acked.push(after)
    } finally {
      await router.close()
    }
    const lm = openManager(dir)
    try {
      const values = readAll(lm, lm.get('t', 0)!).map((v) => v.value?.toString().split('.')[0])
      expect(values).toEqual(['first-0', 'after-0'])
    } finally {
      await lm.close()
    }
  })
  it('takes the log dir offline in a cluster when the log cleaner finds the disk full', async () => {
    const dir = smallDisk()
    const failed: string[] = []
    const router = await startRouter(dir, 0, { diskFullFailsLogDir: true, onLogDirFailure: (d) => failed.push(d), logDirProbeIntervalMs: 0, cleaner: { enable: true, backoffMs: 50 } })
    try {
      await router.createPartitions([{ topic: 'c', partition: 0, overrides: { cleanupPolicy: 'compact', segmentBytes: 16 * 1024, minCleanableDirtyRatio: 0, minCompactionLagMs: 0 } }])
      // Never cleaned yet, so every segment but the active one is dirty; their keys are all different, so a
      // pass has to write them all again.
      for (let i = 0; i < 8; i++) {
        const records = buildRecordBatch(Array.from({ length: 4 }, (_, j) => ({ key: Buffer.from(`k${i}-${j}`), value: Buffer.alloc(1000, i), timestamp: Date.now() })), native.crc32c)
        expect((await router.append([{ topic: 'c', partition: 0, records, leaderEpoch: 0 }]))[0]).toMatchObject({ ok: true })
      }
      fill(dir)
      // The router looks at its shards' directories after a storage error, or when asked.
      await vi.waitFor(async () => {
        await router.checkLogDirs()
        expect(failed).toEqual([dir])
      }, { timeout: 10_000 })
      expect(router.offlineDirs.has(dir)).toBe(true)
    } finally {
      await router.close()
    }
  })
  it('on a single broker, a roll whose background snapshot and checkpoint find the disk full does not fail the partition', async () => {
    const dir = smallDisk()
    const router = await startRouter(dir, 0, { logDirProbeIntervalMs: 0 })
    try {
      await router.createPartitions([{ topic: 't', partition: 0, overrides: { segmentBytes: 24 * 1024 } }])
      expect((await router.append([{ topic: 't', partition: 0, records: makeBatch('first', 1, Date.now(), 10_000), leaderEpoch: 0 }]))[0]).toMatchObject({ ok: true })
      const filler = fill(dir)
      // Room for the roll itself (the old segment's two index files, a page each) and the new batch (five
      // pages), none for the producer snapshot and leader-epoch checkpoint the roll writes in the background.
      truncateSync(filler, statSync(filler).size - 7 * 4096)
      expect((await router.append([{ topic: 't', partition: 0, records: makeBatch('rolled', 1, Date.now(), BIG), leaderEpoch: 0 }]))[0]).toMatchObject({ ok: true })
      await new Promise((r) => setTimeout(r, 200))
      rmSync(filler)
      expect((await router.append([{ topic: 't', partition: 0, records: makeBatch('after', 1, Date.now(), 1000), leaderEpoch: 0 }]))[0]).toMatchObject({ ok: true })
    } finally {
      await router.close()
    }
    const lm = openManager(dir)
    try {
      expect(readAll(lm, lm.get('t', 0)!).map((v) => v.value?.toString().split('.')[0])).toEqual(['first-0', 'rolled-0', 'after-0'])
    } finally {
      await lm.close()
    }
  })

  it('in a cluster with a retry interval, brings a full dir back once space returns: partitions recovered on every shard, a torn tail cut, writes taken again', async () => {
    const dir = smallDisk()
    const failed: string[] = []
    const recovered: string[] = []
    // The retry runs when the test asks (retryFullLogDirs), so that the torn tail is in place before it.
    const router = await startRouter(dir, 2, {
      diskFullFailsLogDir: true, onLogDirFailure: (d) => failed.push(d), onLogDirRecovered: (d) => recovered.push(d), logDirProbeIntervalMs: 0,
      logDirFailureRetryIntervalMs: 3_600_000, logDirFailureRetryMinFreeBytes: 256 * 1024,
    })
    const acked = new Map<number, string[]>()
    const partitions = spreadPartitions(router, 't', 2)
    try {
      await router.createPartitions(partitions.map((partition) => ({ topic: 't', partition })))
      for (const partition of partitions) {
        acked.set(partition, [])
        for (let i = 0; i < 3; i++) {
          const [r] = await router.append([{ topic: 't', partition, records: makeBatch(`before-${partition}-${i}`, 1, Date.now(), 100), leaderEpoch: 0 }])
          expect(r!.ok).toBe(true)
          acked.get(partition)!.push(`before-${partition}-${i}-0`)
        }
      }
      const filler = fill(dir)
      const bufs: Buffer[] = []
      expect(await appendUntilRefused(router, bufs)).toBe(ErrorCode.KAFKA_STORAGE_ERROR)
      for (let i = 0; i < bufs.length; i++) acked.get(0)!.push(`full-${i}-0`)
      await router.checkLogDirs()
      await vi.waitFor(() => expect(failed).toEqual([dir]))
      expect(router.offlineForSpace.has(dir)).toBe(true)
      // Still full: it stays offline.
      expect(await router.retryFullLogDirs()).toEqual([])
      const [refused] = await router.append([{ topic: 't', partition: partitions[1]!, records: makeBatch('refused', 1), leaderEpoch: 0 }])
      expect(refused).toMatchObject({ ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
      rmSync(filler)
      // What a write cut short by a crash would leave: half a batch at the end of a segment.
      const torn = makeBatch('torn', 1, Date.now(), 1000)
      const active = join(dir, `t-${partitions[1]}`, '00000000000000000000.log')
      appendFileSync(active, torn.subarray(0, torn.length >> 1))
      expect(await router.retryFullLogDirs()).toEqual([dir])
      expect(recovered).toEqual([dir])
      expect(router.offlineDirs.size).toBe(0)
      expect(router.offlineForSpace.size).toBe(0)
      for (const partition of partitions) {
        const [r] = await router.append([{ topic: 't', partition, records: makeBatch(`after-${partition}`, 1), leaderEpoch: 0 }])
        expect(r).toMatchObject({ ok: true })
        acked.get(partition)!.push(`after-${partition}-0`)
      }
    } finally {
      await router.close()
    }
    const lm = openManager(dir)
    try {
      for (const partition of partitions) {
        expect(readAll(lm, lm.get('t', partition)!).map((v) => v.value?.toString().split('.')[0])).toEqual(acked.get(partition))
      }
    } finally {
      await lm.close()
    }
  })
})

/** A 32 MiB ext4 on a loop device, which shutDown makes answer EIO to everything (a failing disk). */
function ext4Disk(): { dir: string; shutDown: () => void } {
  const image = join(mkdtempSync(join(tmpdir(), 'skein-eio-img-')), 'disk.img')
  execFileSync('truncate', ['-s', '32M', image])
  execFileSync('mkfs.ext4', ['-q', '-F', image])
  const dir = mkdtempSync(join(tmpdir(), 'skein-eio-'))
  execFileSync('mount', ['-o', 'loop', image, dir])
  cleanups.push(() => {
    execFileSync('umount', [dir])
    rmdirSync(dir)
    rmSync(dirname(image), { recursive: true, force: true })
  })
  // EXT4_IOC_SHUTDOWN (the xfstests "godown"), NOLOGFLUSH: from now on every I/O of the filesystem is EIO.
  const shutDown = (): void => {
    execFileSync('/usr/bin/python3', ['-c', 'import os,sys,fcntl,struct; fd=os.open(sys.argv[1], os.O_RDONLY); fcntl.ioctl(fd, 0x8004587D, struct.pack("I", 2))', dir])
  }
  return { dir, shutDown }
}

/** A cluster's router on dir (a failed dir goes offline) that retries full dirs every 20 ms. */
async function retryingRouter(dir: string): Promise<{ router: ShardRouter; failed: string[]; recovered: string[] }> {
  const failed: string[] = []
  const recovered: string[] = []
  const router = await startRouter(dir, 0, {
    diskFullFailsLogDir: true, onLogDirFailure: (d) => failed.push(d), onLogDirRecovered: (d) => recovered.push(d), logDirProbeIntervalMs: 0,
    logDirFailureRetryIntervalMs: 20, logDirFailureRetryMinFreeBytes: 0,
  })
  return { router, failed, recovered }
}

/** Retries of full dirs do not bring dir back, and its partition still refuses writes. */
async function expectOfflineForGood(router: ShardRouter, dir: string, recovered: string[]): Promise<void> {
  await new Promise((r) => setTimeout(r, 200))
  expect(await router.retryFullLogDirs()).toEqual([])
  expect(recovered).toEqual([])
  expect(router.offlineDirs.has(dir)).toBe(true)
  const [r] = await router.append([{ topic: 't', partition: 0, records: makeBatch('after', 1), leaderEpoch: 0 }])
  expect(r).toMatchObject({ ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
}

// The failing disk is an ext4 image on a loop device: it needs e2fsprogs (.ci/run installs it) and loop devices.
const noLoopExt4 = !existsSync('/dev/loop-control') || !['/sbin/mkfs.ext4', '/usr/sbin/mkfs.ext4'].some((p) => existsSync(p))
const failingDiskReason = notRoot ? reason : noLoopExt4 ? ' (skipped: needs mkfs.ext4 from e2fsprogs and /dev/loop-control)' : ''

describe.skipIf(notRoot || noLoopExt4)(`a failing disk${failingDiskReason}`, () => {
  it('takes the log dir offline for good in a cluster with a retry interval: EIO is not a full disk', async () => {
    const { dir, shutDown } = ext4Disk()
    const { router, failed, recovered } = await retryingRouter(dir)
    try {
      await router.createPartitions([{ topic: 't', partition: 0 }])
      expect((await router.append([{ topic: 't', partition: 0, records: makeBatch('before', 1), leaderEpoch: 0 }]))[0]).toMatchObject({ ok: true })
      shutDown()
      await vi.waitFor(async () => {
        await router.append([{ topic: 't', partition: 0, records: makeBatch('refused', 1, Date.now(), BIG), leaderEpoch: 0 }])
        await router.checkLogDirs(true)
        expect(failed).toEqual([dir])
      }, { timeout: 10_000 })
      expect(router.offlineForSpace.size).toBe(0)
      await expectOfflineForGood(router, dir, recovered)
    } finally {
      await router.close().catch(() => {})
    }
  })
})

describe('a log dir failed by anything but a full disk', () => {
  it('stays offline with a retry interval, even once it is usable again (only a restart brings it back)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-dirgone-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const { router, recovered } = await retryingRouter(dir)
    try {
      await router.createPartitions([{ topic: 't', partition: 0 }])
      rmSync(dir, { recursive: true, force: true })
      // The probe of a directory that is gone fails with ENOENT: a failed directory, not a full one.
      expect(await router.checkLogDirs(true)).toEqual([dir])
      expect(router.offlineForSpace.size).toBe(0)
      mkdirSync(dir)
      await expectOfflineForGood(router, dir, recovered)
    } finally {
      await router.close()
    }
  })
})
