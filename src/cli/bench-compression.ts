// `skein bench compression`: how each of Kafka's codecs (none, gzip, snappy, lz4, zstd), at each level,
// does on the user's own data cut into Kafka record batches as Skein's producer cuts them (records
// appended until the next would pass batch.size uncompressed bytes): the compression ratio of whole
// batches (RecordBatch v2 header included, as stored and sent), and compress and decompress throughput
// in MB/s of uncompressed record bytes per core (the CPU time of the one thread doing the work, so other
// load on the machine does not lower the figure). Decompression is the bounded decoder brokers and
// clients use (src/protocol/records/compression.ts). Output: a table, a text bar chart, and an SVG chart
// in a file (under results/ unless --svg names one).
//
// The codecs come from the same libraries as the broker's: zlib (gzip levels 1-9), zstd-napi (zstd
// levels), snappy and lz4-napi, which have no levels (lz4-napi writes LZ4 frames in its one fast mode;
// Kafka's compression.lz4.level has no counterpart there).
import { readFileSync, openSync, readSync, closeSync, fstatSync } from 'node:fs'
import { createRequire } from 'node:module'
import { gzipSync } from 'node:zlib'
import { RecordBatchWriter } from '../client/record-batches.js'
import { CompressionType, RECORD_BATCH_OVERHEAD } from '../protocol/records/batch.js'
import { compress, decompress } from '../protocol/records/compression.js'
import { parseIntArg, UsageError, type CommandSpec } from './args.js'
import { formatTable, runCommand } from './common.js'
import { defaultResultPath, writeResultFile } from './results-dir.js'
import { MB } from './stats.js'

export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const
export type CodecName = (typeof CODECS)[number]

const CODEC_IDS: Record<CodecName, number> = { none: CompressionType.NONE, gzip: CompressionType.GZIP, snappy: CompressionType.SNAPPY, lz4: CompressionType.LZ4, zstd: CompressionType.ZSTD }
/** The levels each codec accepts here; null = the codec has none. */
const LEVEL_RANGES: Record<CodecName, [number, number] | null> = { none: null, gzip: [1, 9], snappy: null, lz4: null, zstd: [1, 22] }
/** Kafka's default levels (compression.gzip.level -1 is zlib's 6; compression.zstd.level 3) and a fast and a small one. */
export const DEFAULT_LEVELS: Record<CodecName, (number | null)[]> = { none: [null], gzip: [1, 6, 9], snappy: [null], lz4: [null], zstd: [1, 3, 9] }

export interface CodecLevel {
  codec: CodecName
  /** null for codecs without levels. */
  level: number | null
}

export interface CompressionResult extends CodecLevel {
  batches: number
  records: number
  /** Bytes of the batches uncompressed (header and records), as they would be stored without compression. */
  bytesIn: number
  /** Bytes of the same batches compressed (header and compressed records). */
  bytesOut: number
  ratio: number
  /** MB/s (MB = 1024 * 1024) of uncompressed record bytes per core; null for 'none'. */
  compressMBps: number | null
  decompressMBps: number | null
}

/** Records from raw data: fixed-size pieces, or pieces between delimiters (an empty last piece is dropped). */
export function cutRecords(data: Buffer, how: { recordSize: number } | { delimiter: Buffer }): Buffer[] {
  const out: Buffer[] = []
  if ('recordSize' in how) {
    for (let pos = 0; pos < data.length; pos += how.recordSize) out.push(data.subarray(pos, Math.min(data.length, pos + how.recordSize)))
    return out
  }
  let start = 0
  for (;;) {
    const at = data.indexOf(how.delimiter, start)
    if (at < 0) break
    out.push(data.subarray(start, at))
    start = at + how.delimiter.length
  }
  if (start < data.length) out.push(data.subarray(start))
  return out
}

/** Uncompressed RecordBatch v2 batches of keyless records, cut as the producer cuts them at batch.size. */
export function cutBatches(records: readonly Buffer[], batchSize: number, timestamp = Date.now()): Buffer[] {
  const batches: Buffer[] = []
  let writer = new RecordBatchWriter(batchSize)
  for (const value of records) {
    if (writer.tryAppend(timestamp, null, value)) continue
    batches.push(writer.build())
    writer = new RecordBatchWriter(batchSize)
    writer.tryAppend(timestamp, null, value)
  }
  if (writer.recordCount > 0) batches.push(writer.build())
  return batches
}

interface ZstdCompressor {
  setParameters(p: { compressionLevel?: number }): void
  compress(data: Uint8Array): Buffer
}

const require = createRequire(import.meta.url)

/** A compress function for a codec at a level (the codec's only mode when it has no levels). */
export function compressorFor(codec: CodecName, level: number | null): (data: Buffer) => Buffer {
  switch (codec) {
    case 'gzip':
      return (data) => gzipSync(data, { level: level ?? 6 })
    case 'zstd': {
      let zstd: { Compressor: new () => ZstdCompressor }
      try {
        zstd = require('zstd-napi') as typeof zstd
      } catch (err) {
        throw new Error(`zstd is unavailable: ${(err as Error).message.split('\n')[0]}`)
      }
      const c = new zstd.Compressor()
      c.setParameters({ compressionLevel: level ?? 3 })
      return (data) => c.compress(data)
    }
    default:
      return (data) => compress(CODEC_IDS[codec], data)
  }
}

/** CPU milliseconds (this process) of running fn until at least minMs of wall time passed, at least once. */
function timeCpu(fn: () => void, minMs: number): { cpuMs: number; passes: number } {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let passes = 0
  do {
    fn()
    passes++
  } while (performance.now() - t0 < minMs)
  const cpu = process.cpuUsage(cpu0)
  // A clock tick is the floor of what cpuUsage can tell apart.
  return { cpuMs: Math.max((cpu.user + cpu.system) / 1000, 0.001), passes }
}

/** Measures one codec and level over the batches; the round trip of every batch is checked first. */
export function measure(batches: readonly Buffer[], codec: CodecName, level: number | null, minMs: number): CompressionResult {
  const sections = batches.map((b) => b.subarray(RECORD_BATCH_OVERHEAD))
  const raw = sections.reduce((n, s) => n + s.length, 0)
  const records = batches.reduce((n, b) => n + b.readInt32BE(57), 0)
  const bytesIn = batches.reduce((n, b) => n + b.length, 0)
  const fn = compressorFor(codec, level)
  const id = CODEC_IDS[codec]
  const compressed = sections.map((s) => fn(s))
  compressed.forEach((z, i) => {
    const back = decompress(id, z, sections[i]!.length)
    if (!back.equals(sections[i]!)) throw new Error(`${codec}${level === null ? '' : ` level ${level}`} does not round-trip batch ${i}`)
  })
  const bytesOut = compressed.reduce((n, z) => n + RECORD_BATCH_OVERHEAD + z.length, 0)
  const result: CompressionResult = { codec, level, batches: batches.length, records, bytesIn, bytesOut, ratio: bytesIn / bytesOut, compressMBps: null, decompressMBps: null }
  if (codec === 'none') return result
  let sink = 0
  const c = timeCpu(() => {
    for (const s of sections) sink ^= fn(s).length
  }, minMs)
  const d = timeCpu(() => {
    for (let i = 0; i < compressed.length; i++) sink ^= decompress(id, compressed[i]!, sections[i]!.length).length
  }, minMs)
  if (sink === -1) process.stderr.write('') // keeps the work from being optimised away
  result.compressMBps = (raw * c.passes) / MB / (c.cpuMs / 1000)
  result.decompressMBps = (raw * d.passes) / MB / (d.cpuMs / 1000)
  return result
}

/** `--levels gzip=1,6,9 --levels zstd=1-5,19`: levels per codec over the defaults. */
export function parseLevels(items: readonly string[]): Partial<Record<CodecName, number[]>> {
  const out: Partial<Record<CodecName, number[]>> = {}
  for (const item of items.flatMap((i) => i.split(/\s+/)).filter((i) => i !== '')) {
    const m = /^([a-z0-9]+)=(.+)$/.exec(item)
    if (m === null) throw new UsageError(`--levels '${item}' is not CODEC=LEVEL[,LEVEL|FROM-TO]`)
    const codec = m[1] as CodecName
    if (!CODECS.includes(codec)) throw new UsageError(`--levels: unknown codec '${m[1]}' (${CODECS.join(', ')})`)
    const range = LEVEL_RANGES[codec]
    if (range === null) throw new UsageError(`--levels: ${codec} has no levels`)
    const levels: number[] = []
    for (const part of m[2]!.split(',')) {
      const r = /^(-?\d+)-(-?\d+)$/.exec(part.trim())
      const [from, to] = r === null ? [parseIntArg('levels', part), parseIntArg('levels', part)] : [Number(r[1]), Number(r[2])]
      for (let l = from; l <= to; l++) {
        if (l < range[0] || l > range[1]) throw new UsageError(`--levels: ${codec} level ${l} is outside ${range[0]}..${range[1]}`)
        if (!levels.includes(l)) levels.push(l)
      }
    }
    out[codec] = levels
  }
  return out
}

function codecLabel(r: CodecLevel): string {
  return r.level === null ? r.codec : `${r.codec} ${r.level}`
}

const mbps = (v: number | null): string => (v === null ? '-' : v >= 100 ? v.toFixed(0) : v.toFixed(1))

export function resultTable(results: readonly CompressionResult[]): string {
  return formatTable(
    ['CODEC', 'LEVEL', 'BATCHES', 'RECORDS', 'BYTES-IN', 'BYTES-OUT', 'RATIO', 'COMPRESS-MB/S', 'DECOMPRESS-MB/S'],
    results.map((r) => [r.codec, r.level === null ? '-' : String(r.level), String(r.batches), String(r.records), String(r.bytesIn), String(r.bytesOut), r.ratio.toFixed(2), mbps(r.compressMBps), mbps(r.decompressMBps)]),
  )
}

interface Panel {
  title: string
  value: (r: CompressionResult) => number | null
  format: (v: number) => string
}

const PANELS: Panel[] = [
  { title: 'Compression ratio (higher is smaller)', value: (r) => r.ratio, format: (v) => `${v.toFixed(2)}x` },
  { title: 'Compress MB/s per core', value: (r) => r.compressMBps, format: (v) => mbps(v) },
  { title: 'Decompress MB/s per core', value: (r) => r.decompressMBps, format: (v) => mbps(v) },
]

/** Horizontal bars, one panel per measure, scaled to the largest value of the panel. */
export function textChart(results: readonly CompressionResult[], width = 40): string {
  const labelWidth = Math.max(...results.map((r) => codecLabel(r).length))
  let out = ''
  for (const p of PANELS) {
    const rows = results.filter((r) => p.value(r) !== null)
    if (rows.length === 0) continue
    const max = Math.max(...rows.map((r) => p.value(r)!))
    out += `\n${p.title}\n`
    for (const r of rows) {
      const v = p.value(r)!
      const n = max > 0 ? Math.max(v > 0 ? 1 : 0, Math.round((v / max) * width)) : 0
      out += `  ${codecLabel(r).padEnd(labelWidth)} ${'█'.repeat(n)}${' '.repeat(width - n)} ${p.format(v)}\n`
    }
  }
  return out
}

const COLOURS: Record<CodecName, string> = { none: '#9e9e9e', gzip: '#4e79a7', snappy: '#f28e2b', lz4: '#59a14f', zstd: '#e15759' }

function xml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

/** The three panels side by side as an SVG document. */
export function svgChart(results: readonly CompressionResult[], title: string): string {
  const rowH = 22
  const labelW = 80
  const barW = 220
  const panelW = labelW + barW + 70
  const top = 64
  const height = top + results.length * rowH + 24
  const width = panelW * PANELS.length + 20
  const parts: string[] = []
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`)
  parts.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`)
  parts.push(`<text x="10" y="22" font-size="14" font-weight="bold">${xml(title)}</text>`)
  PANELS.forEach((p, i) => {
    const x0 = 10 + i * panelW
    parts.push(`<text x="${x0}" y="${top - 14}" font-weight="bold">${xml(p.title)}</text>`)
    const values = results.map((r) => p.value(r))
    const max = Math.max(0, ...values.map((v) => v ?? 0))
    results.forEach((r, j) => {
      const y = top + j * rowH
      parts.push(`<text x="${x0 + labelW - 6}" y="${y + 14}" text-anchor="end">${xml(codecLabel(r))}</text>`)
      const v = values[j]
      if (v === null || v === undefined) {
        parts.push(`<text x="${x0 + labelW}" y="${y + 14}" fill="#777777">-</text>`)
        return
      }
      const w = max > 0 ? Math.max(1, (v / max) * barW) : 0
      parts.push(`<rect x="${x0 + labelW}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowH - 6}" fill="${COLOURS[r.codec]}"/>`)
      parts.push(`<text x="${(x0 + labelW + w + 4).toFixed(1)}" y="${y + 14}">${xml(p.format(v))}</text>`)
    })
  })
  parts.push('</svg>')
  return parts.join('\n') + '\n'
}

/** Reads at most maxBytes of a file; says whether it was cut. */
function readHead(path: string, maxBytes: number): { data: Buffer; size: number } {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  try {
    const size = fstatSync(fd).size
    if (size <= maxBytes) return { data: readFileSync(fd), size }
    const data = Buffer.allocUnsafe(maxBytes)
    let got = 0
    while (got < maxBytes) {
      const n = readSync(fd, data, got, maxBytes - got, got)
      if (n === 0) break
      got += n
    }
    return { data: data.subarray(0, got), size }
  } finally {
    closeSync(fd)
  }
}

/** Shell-style escapes in a delimiter given on the command line ('\n', '\t', '\r', '\0', '\\'). */
function unescapeDelimiter(s: string): Buffer {
  return Buffer.from(s.replace(/\\([ntr0\\])/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r', '0': '\0', '\\': '\\' })[c]!))
}

const SPEC: CommandSpec = {
  command: 'skein bench compression',
  usage: 'skein bench compression --file FILE [--batch-size BYTES] [--record-size BYTES | --delimiter STR] [--codecs LIST] [--levels CODEC=LEVELS ...] [--svg FILE] [--json]',
  summary: "Compression ratio and speed of each codec and level on your own data, cut into Kafka record batches.",
  options: [
    { name: 'file', value: 'FILE', desc: 'The data: one record per line (or per --delimiter), or --record-size pieces (required)' },
    { name: 'batch-size', value: 'BYTES', desc: "Records per batch up to this many uncompressed bytes, as the producer's batch.size (default 16384)" },
    { name: 'record-size', value: 'BYTES', desc: 'Cut the file into records of this size instead of lines' },
    { name: 'delimiter', value: 'STR', desc: "Record delimiter instead of a newline ('\\n', '\\t', '\\0' understood)" },
    { name: 'codecs', value: 'LIST', desc: 'Codecs to measure, comma-separated (default none,gzip,snappy,lz4,zstd)' },
    { name: 'levels', value: 'CODEC=LEVELS', repeat: true, desc: 'Levels of a codec, e.g. gzip=1-9 or zstd=1,3,19 (default gzip=1,6,9 zstd=1,3,9)' },
    { name: 'max-mb', value: 'N', desc: 'Use at most the first N MiB of the file (default 64)' },
    { name: 'duration-ms', value: 'MS', desc: 'Time spent on each compress and decompress measurement, at least one pass (default 500)' },
    { name: 'svg', value: 'FILE', desc: 'Write the chart as SVG to FILE, its folder created if missing (default results/skein-bench-compression.svg under the current directory; not written with --json unless given)' },
    { name: 'json', desc: 'Print the results as one JSON object instead of the table and chart' },
  ],
  notes: `Columns: BYTES-IN are the batches uncompressed (61-byte RecordBatch header included), BYTES-OUT the
same batches compressed; RATIO = BYTES-IN / BYTES-OUT. COMPRESS-MB/S and DECOMPRESS-MB/S are MB (1024 x 1024)
of uncompressed record bytes per second of CPU time of the one thread doing the work: per core. Every
batch is decompressed and compared with its original before it is timed. gzip levels are zlib's (6 is
Kafka's default), zstd levels zstd's (3 is Kafka's default); snappy and lz4 have one mode each here.

Examples:
  skein bench compression --file events.jsonl
  skein bench compression --file app.log --batch-size 65536 --levels gzip=1-9 --levels zstd=1-19
  skein bench compression --file blob.bin --record-size 1024 --codecs lz4,zstd --svg blob.svg`,
}

export function runBenchCompression(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const file = args.require('file')
    const batchSize = args.int('batch-size', { min: 64, max: 1 << 30 }) ?? 16384
    const recordSize = args.int('record-size', { min: 1, max: 1 << 30 })
    if (recordSize !== undefined && args.has('delimiter')) throw new UsageError('--record-size and --delimiter cannot be used together')
    const maxBytes = (args.int('max-mb', { min: 1, max: 4096 }) ?? 64) * MB
    const minMs = args.int('duration-ms', { min: 0, max: 600_000 }) ?? 500
    const codecs = (args.get('codecs') ?? CODECS.join(',')).split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '')
    for (const c of codecs) if (!CODECS.includes(c as CodecName)) throw new UsageError(`--codecs: unknown codec '${c}' (${CODECS.join(', ')})`)
    const levels = parseLevels(args.all('levels'))
    for (const c of Object.keys(levels)) if (!codecs.includes(c)) throw new UsageError(`--levels ${c}=...: ${c} is not in --codecs`)

    const { data, size } = readHead(file, maxBytes)
    const records = cutRecords(data, recordSize !== undefined ? { recordSize } : { delimiter: unescapeDelimiter(args.get('delimiter') ?? '\n') })
    if (records.length === 0) throw new UsageError(`${file} holds no records`)
    const batches = cutBatches(records, batchSize)
    const json = args.has('json')
    const used = data.length < size ? `the first ${data.length} of ${size} bytes of ${file}` : `${file} (${size} bytes)`
    const title = `${records.length} records of ${used} in ${batches.length} batches of batch.size ${batchSize}`
    if (!json) process.stdout.write(`Compression of ${title}\n\n`)

    const results: CompressionResult[] = []
    for (const codec of codecs as CodecName[]) {
      for (const level of levels[codec] ?? DEFAULT_LEVELS[codec]) results.push(measure(batches, codec, level, minMs))
    }
    const svgPath = args.get('svg') ?? (json ? undefined : defaultResultPath('skein-bench-compression.svg'))
    if (svgPath !== undefined) writeResultFile(svgPath, svgChart(results, `skein bench compression: ${title}`))
    if (json) {
      process.stdout.write(JSON.stringify({ file, bytes: data.length, records: records.length, batches: batches.length, batchSize, results }) + '\n')
      return 0
    }
    process.stdout.write(resultTable(results) + textChart(results) + (svgPath === undefined ? '' : `\nChart written to ${svgPath}\n`))
    return 0
  })
}
