// `skein bench compression`: records cut from a file, batched as the producer batches them, each codec
// and level measured with a checked round trip; the table, the text chart, the SVG and the JSON output.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compressorFor, cutBatches, cutRecords, measure, parseLevels, svgChart, textChart, type CompressionResult } from '../../src/cli/bench-compression.js'
import { CompressionType, RECORD_BATCH_OVERHEAD } from '../../src/protocol/records/batch.js'
import { compress, decompress } from '../../src/protocol/records/compression.js'
import { decodeAllRecords } from '../harness/index.js'
import { oneLine, skein } from './helpers.js'

let dir: string
let file: string
const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, user: `user-${i % 97}`, action: ['view', 'click', 'buy'][i % 3], path: `/items/${(i * 7919) % 1000}` }))

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'skein-bench-compression-'))
  file = join(dir, 'events.jsonl')
  writeFileSync(file, lines.join('\n') + '\n')
})

afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

describe('records and batches', () => {
  it('cuts lines (or a delimiter) and fixed-size pieces', () => {
    expect(cutRecords(Buffer.from('a\nbb\n\nc'), { delimiter: Buffer.from('\n') }).map(String)).toEqual(['a', 'bb', '', 'c'])
    expect(cutRecords(Buffer.from('a|b|'), { delimiter: Buffer.from('|') }).map(String)).toEqual(['a', 'b'])
    expect(cutRecords(Buffer.from('abcdefg'), { recordSize: 3 }).map(String)).toEqual(['abc', 'def', 'g'])
  })

  it('fills batches up to batch.size as the producer does, each a valid RecordBatch holding the records in order', () => {
    const records = lines.map((l) => Buffer.from(l))
    const batches = cutBatches(records, 4096)
    expect(batches.length).toBeGreaterThan(10)
    for (const b of batches) expect(b.length).toBeLessThanOrEqual(4096)
    const decoded = batches.flatMap((b) => decodeAllRecords(b))
    expect(decoded.map((r) => r.value?.toString())).toEqual(lines)
    // A record bigger than batch.size gets a batch of its own.
    const big = cutBatches([Buffer.alloc(10_000, 1), Buffer.from('x')], 4096)
    expect(big.map((b) => b.readInt32BE(57))).toEqual([1, 1])
  })
})

describe('codecs and levels', () => {
  it('levels parse as lists and ranges within each codec\'s range', () => {
    expect(parseLevels(['gzip=1-3,9', 'zstd=19'])).toEqual({ gzip: [1, 2, 3, 9], zstd: [19] })
    expect(() => parseLevels(['gzip=0'])).toThrow('gzip level 0 is outside 1..9')
    expect(() => parseLevels(['lz4=3'])).toThrow('lz4 has no levels')
    expect(() => parseLevels(['brotli=3'])).toThrow("unknown codec 'brotli'")
  })

  it('gzip 6 and zstd 3 are what the broker and producer write; every output decodes with the bounded decoder', () => {
    const data = Buffer.from(lines.join('\n'))
    expect(compressorFor('gzip', 6)(data).equals(compress(CompressionType.GZIP, data))).toBe(true)
    for (const [codec, id] of [['zstd', CompressionType.ZSTD], ['gzip', CompressionType.GZIP]] as const) {
      for (const level of codec === 'zstd' ? [1, 3, 19] : [1, 9]) expect(decompress(id, compressorFor(codec, level)(data), data.length).equals(data)).toBe(true)
    }
  })

  it('measures ratio over whole batches and MB/s per core', () => {
    const batches = cutBatches(lines.map((l) => Buffer.from(l)), 16384)
    const none = measure(batches, 'none', null, 0)
    expect(none).toMatchObject({ ratio: 1, compressMBps: null, decompressMBps: null, records: 2000 })
    expect(none.bytesIn).toBe(batches.reduce((n, b) => n + b.length, 0))
    const fast = measure(batches, 'gzip', 1, 0)
    const small = measure(batches, 'gzip', 9, 0)
    expect(fast.ratio).toBeGreaterThan(2)
    expect(small.bytesOut).toBeLessThanOrEqual(fast.bytesOut)
    expect(fast.bytesOut).toBeGreaterThan(batches.length * RECORD_BATCH_OVERHEAD)
    for (const r of [fast, small, measure(batches, 'snappy', null, 0), measure(batches, 'lz4', null, 0), measure(batches, 'zstd', 3, 0)]) {
      expect(r.compressMBps).toBeGreaterThan(0)
      expect(r.decompressMBps).toBeGreaterThan(0)
      expect(r.ratio).toBeGreaterThan(1)
    }
  })

  it('charts: bars scaled to the largest value of each panel, in text and SVG', () => {
    const results: CompressionResult[] = [
      { codec: 'none', level: null, batches: 1, records: 1, bytesIn: 100, bytesOut: 100, ratio: 1, compressMBps: null, decompressMBps: null },
      { codec: 'zstd', level: 3, batches: 1, records: 1, bytesIn: 100, bytesOut: 25, ratio: 4, compressMBps: 200, decompressMBps: 800 },
    ]
    const text = textChart(results, 8)
    expect(text).toContain('  none   ██       1.00x\n')
    expect(text).toContain('  zstd 3 ████████ 4.00x\n')
    expect(text).toContain('Compress MB/s per core\n  zstd 3 ████████ 200\n')
    const svg = svgChart(results, 'a <title> & more')
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true)
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true)
    expect(svg).toContain('a &lt;title&gt; &amp; more')
    // The background, none's ratio bar (its speeds are '-'), zstd's three bars.
    expect(svg.match(/<rect /g)?.length).toBe(5)
  })
})

describe('skein bench compression', () => {
  it('prints the table and chart for every codec and default level, and writes the SVG', async () => {
    const svg = join(dir, 'chart.svg')
    const r = await skein(['bench', 'compression', '--file', file, '--duration-ms', '20', '--svg', svg])
    expect(r.code, r.stderr).toBe(0)
    const outLines = r.out.split('\n')
    expect(outLines[0]).toMatch(/^Compression of 2000 records of .*events\.jsonl \(\d+ bytes\) in \d+ batches of batch\.size 16384$/)
    const header = outLines.findIndex((l) => l.startsWith('CODEC'))
    expect(outLines[header]!.split(/\s+/)).toEqual(['CODEC', 'LEVEL', 'BATCHES', 'RECORDS', 'BYTES-IN', 'BYTES-OUT', 'RATIO', 'COMPRESS-MB/S', 'DECOMPRESS-MB/S'])
    const rows = outLines.slice(header + 1, header + 10).map((l) => l.split(/\s+/))
    expect(rows.map((c) => `${c[0]} ${c[1]}`)).toEqual(['none -', 'gzip 1', 'gzip 6', 'gzip 9', 'snappy -', 'lz4 -', 'zstd 1', 'zstd 3', 'zstd 9'])
    for (const c of rows) expect(c[3]).toBe('2000')
    expect(r.out).toContain('Compression ratio (higher is smaller)\n')
    expect(r.out).toContain('Decompress MB/s per core\n')
    expect(r.out).toContain(`Chart written to ${svg}`)
    expect(readFileSync(svg, 'utf8')).toContain('>zstd 9</text>')
  })

  it('without --svg the chart goes to results/ under the current directory, never beside the user\'s files', async () => {
    const cwd = mkdtempSync(join(dir, 'cwd-'))
    const r = await skein(['bench', 'compression', '--file', file, '--codecs', 'lz4', '--duration-ms', '0'], { cwd })
    expect(r.code, r.stderr).toBe(0)
    expect(r.out).toContain(`Chart written to ${join('results', 'skein-bench-compression.svg')}`)
    expect(readdirSync(cwd)).toEqual(['results'])
    expect(readFileSync(join(cwd, 'results', 'skein-bench-compression.svg'), 'utf8')).toContain('>lz4</text>')
  })

  it('an explicit --svg path is used as given, its folder created when missing', async () => {
    const cwd = mkdtempSync(join(dir, 'cwd-'))
    const r = await skein(['bench', 'compression', '--file', file, '--codecs', 'lz4', '--duration-ms', '0', '--svg', join('charts', 'mine.svg')], { cwd })
    expect(r.code, r.stderr).toBe(0)
    expect(r.out).toContain(`Chart written to ${join('charts', 'mine.svg')}`)
    expect(readdirSync(cwd)).toEqual(['charts'])
    expect(existsSync(join(cwd, 'charts', 'mine.svg'))).toBe(true)
  })

  it('--json, --record-size, --batch-size, --codecs and --levels', async () => {
    const r = await skein(['bench', 'compression', '--file', file, '--record-size', '100', '--batch-size', '1024', '--codecs', 'lz4,zstd', '--levels', 'zstd=2', '--duration-ms', '0', '--json'])
    expect(r.code, r.stderr).toBe(0)
    const j = JSON.parse(r.out) as { records: number; batchSize: number; results: CompressionResult[] }
    expect(j.records).toBe(Math.ceil(readFileSync(file).length / 100))
    expect(j.batchSize).toBe(1024)
    expect(j.results.map((x) => [x.codec, x.level])).toEqual([['lz4', null], ['zstd', 2]])
    expect(existsSync(join(process.cwd(), 'skein-bench-compression.svg'))).toBe(false)
  })

  it('usage errors are one line', async () => {
    const empty = join(dir, 'empty')
    writeFileSync(empty, '')
    const cases: [string[], string][] = [
      [[], 'skein bench compression: --file is required'],
      [['--file', join(dir, 'missing')], `skein bench compression: cannot read ${join(dir, 'missing')}: ENOENT`],
      [['--file', empty], `skein bench compression: ${empty} holds no records`],
      [['--file', file, '--codecs', 'gzip,brotli'], "skein bench compression: --codecs: unknown codec 'brotli' (none, gzip, snappy, lz4, zstd)"],
      [['--file', file, '--codecs', 'gzip', '--levels', 'zstd=3'], 'skein bench compression: --levels zstd=...: zstd is not in --codecs'],
      [['--file', file, '--record-size', '10', '--delimiter', ','], 'skein bench compression: --record-size and --delimiter cannot be used together'],
    ]
    for (const [args, message] of cases) {
      const r = await skein(['bench', 'compression', ...args])
      expect(r.code, args.join(' ')).toBe(1)
      expect(oneLine(r.stderr)).toBe(message)
    }
  })
})
