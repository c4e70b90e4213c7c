// `skein bench disk`: the data directory's raw sequential write and read bandwidth and its fsync rate, so
// that broker figures can be compared with what the disk itself does. Write: --size-mb of --block-kb
// blocks, then fdatasync (the time includes it). Read: the same file with O_DIRECT when the filesystem
// allows it (bypassing the page cache, which would otherwise serve the just-written file); otherwise a
// buffered read, reported as such. Fsync: --fsyncs rounds of a 4 KiB write followed by fdatasync, as a
// broker with flush.messages=1 would do.
import { closeSync, constants, fdatasyncSync, mkdirSync, openSync, readSync, rmSync, statSync, writeSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { UsageError, type CommandSpec } from './args.js'
import { runCommand } from './common.js'
import { LatencyRecorder, MB, round } from './stats.js'

const SPEC: CommandSpec = {
  command: 'skein bench disk',
  usage: 'skein bench disk [--dir DIR] [--size-mb N] [--block-kb N] [--fsyncs N] [--json]',
  summary: "Measures a data directory's sequential write and read bandwidth and its fsync rate.",
  options: [
    { name: 'dir', value: 'DIR', desc: 'Directory to test (default ./data, created if missing); a temporary file is written and removed' },
    { name: 'size-mb', value: 'N', desc: 'Size of the test file in MiB (default 256)' },
    { name: 'block-kb', value: 'N', desc: 'Size of each write and read in KiB (default 1024)' },
    { name: 'fsyncs', value: 'N', desc: 'Rounds of 4 KiB write + fdatasync (default 200)' },
    { name: 'json', desc: 'Print one JSON object with the results' },
  ],
}

export interface DiskBenchResult {
  dir: string
  sizeBytes: number
  blockBytes: number
  writeMBps: number
  readMBps: number
  /** 'direct' when O_DIRECT bypassed the page cache; 'buffered' when it was not possible (figure may be the cache's). */
  readMode: 'direct' | 'buffered'
  fsyncsPerSec: number
  fsyncLatencyMs: { avg: number; p50: number; p99: number; max: number }
}

export function runBenchDisk(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const dir = resolve(args.get('dir') ?? './data')
    const sizeMb = args.int('size-mb', { min: 1, max: 1024 * 1024 }) ?? 256
    const blockKb = args.int('block-kb', { min: 4, max: 64 * 1024 }) ?? 1024
    const fsyncs = args.int('fsyncs', { min: 1, max: 1_000_000 }) ?? 200
    if (blockKb % 4 !== 0) throw new UsageError('--block-kb must be a multiple of 4')
    const r = benchDisk(dir, sizeMb * MB, blockKb * 1024, fsyncs)
    if (args.has('json')) {
      process.stdout.write(JSON.stringify(r) + '\n')
      return 0
    }
    process.stdout.write(
      `Disk benchmark of ${r.dir} (${sizeMb} MiB file, ${blockKb} KiB blocks)\n` +
        `  sequential write: ${r.writeMBps.toFixed(1)} MB/sec (fdatasync included)\n` +
        `  sequential read:  ${r.readMBps.toFixed(1)} MB/sec (${r.readMode === 'direct' ? 'O_DIRECT, page cache bypassed' : 'buffered: O_DIRECT unavailable here, the page cache may have served it'})\n` +
        `  fsync:            ${r.fsyncsPerSec.toFixed(1)} fdatasync/sec of 4 KiB writes (${r.fsyncLatencyMs.avg.toFixed(2)} ms avg, ${r.fsyncLatencyMs.p50.toFixed(2)} ms 50th, ${r.fsyncLatencyMs.p99.toFixed(2)} ms 99th, ${r.fsyncLatencyMs.max.toFixed(2)} ms max)\n`,
    )
    return 0
  })
}

export function benchDisk(dir: string, size: number, block: number, fsyncs: number): DiskBenchResult {
  try {
    mkdirSync(dir, { recursive: true })
    if (!statSync(dir).isDirectory()) throw new Error('not a directory')
  } catch (err) {
    throw new UsageError(`cannot use ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  const file = join(dir, `.skein-bench-disk-${process.pid}.tmp`)
  const blocks = Math.max(1, Math.floor(size / block))
  const total = blocks * block
  try {
    // Write.
    const data = Buffer.alloc(block)
    for (let i = 0; i < block; i++) data[i] = (i * 31 + 7) & 0xff
    let fd = openSync(file, 'w')
    const w0 = performance.now()
    for (let i = 0; i < blocks; i++) writeSync(fd, data, 0, block, i * block)
    fdatasyncSync(fd)
    const writeMs = performance.now() - w0
    closeSync(fd)
    // Read.
    const read = readFile(file, block, blocks)
    // Fsync rate.
    fd = openSync(file, 'r+')
    const lat = new LatencyRecorder(fsyncs, 1)
    const small = data.subarray(0, 4096)
    const f0 = performance.now()
    for (let i = 0; i < fsyncs; i++) {
      const t = performance.now()
      writeSync(fd, small, 0, small.length, total + i * 4096)
      fdatasyncSync(fd)
      lat.record(performance.now() - t)
    }
    const fsyncMs = performance.now() - f0
    closeSync(fd)
    const [p50, p99] = lat.percentiles([0.5, 0.99])
    return {
      dir,
      sizeBytes: total,
      blockBytes: block,
      writeMBps: round(total / MB / (writeMs / 1000)),
      readMBps: round(total / MB / (read.ms / 1000)),
      readMode: read.mode,
      fsyncsPerSec: round(fsyncs / (fsyncMs / 1000)),
      fsyncLatencyMs: { avg: round(lat.avg), p50: round(p50!), p99: round(p99!), max: round(lat.max) },
    }
  } finally {
    rmSync(file, { force: true })
  }
}

/**
 * Reads the file sequentially. O_DIRECT needs a buffer address aligned to the device's block size, which
 * JavaScript cannot ask for: a larger buffer is allocated and sub-views at each 512-byte step are tried
 * until the kernel accepts one (EINVAL otherwise). Filesystems without O_DIRECT (tmpfs) fall back to a
 * buffered read.
 */
function readFile(file: string, block: number, blocks: number): { ms: number; mode: 'direct' | 'buffered' } {
  const O_DIRECT = (constants as Record<string, number>).O_DIRECT
  if (O_DIRECT !== undefined) {
    let fd: number | null = null
    try {
      fd = openSync(file, constants.O_RDONLY | O_DIRECT)
    } catch {
      fd = null
    }
    if (fd !== null) {
      try {
        const raw = Buffer.allocUnsafeSlow(block + 4096)
        let buf: Buffer | null = null
        for (let off = 0; off < 4096 && buf === null; off += 512) {
          const candidate = raw.subarray(off, off + block)
          try {
            readSync(fd, candidate, 0, block, 0)
            buf = candidate
          } catch {
            // EINVAL: not aligned; try the next offset.
          }
        }
        if (buf !== null) {
          const t0 = performance.now()
          for (let i = 0; i < blocks; i++) readSync(fd, buf, 0, block, i * block)
          return { ms: performance.now() - t0, mode: 'direct' }
        }
      } finally {
        closeSync(fd)
      }
    }
  }
  const fd = openSync(file, 'r')
  try {
    const buf = Buffer.allocUnsafe(block)
    const t0 = performance.now()
    for (let i = 0; i < blocks; i++) readSync(fd, buf, 0, block, i * block)
    return { ms: performance.now() - t0, mode: 'buffered' }
  } finally {
    closeSync(fd)
  }
}
