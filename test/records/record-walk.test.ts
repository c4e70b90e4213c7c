// The record walk of produced batches (record-walk.ts) and the chunked decompression that feeds it
// (compression.ts decompressInChunks): every valid records section passes however it is split into
// chunks, every structural fault is CORRUPT_MESSAGE however it is split, faults of content are
// collected, and decompression hands over bounded chunks, refusing bombs.
import { createRequire } from 'node:module'
import { compressFrameSync } from 'lz4-napi'
import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { CompressionType, RECORD_BATCH_OVERHEAD } from '../../src/protocol/records/batch.js'
import { buildRecordBatch, type RecordInput } from '../../src/protocol/records/builder.js'
import { compress, decompressInChunks } from '../../src/protocol/records/compression.js'
import { RecordSectionWalker, type RecordWalkRules } from '../../src/protocol/records/record-walk.js'
import { writeVarint } from '../../src/protocol/records/varint.js'
import { gzipOfZeros } from './hostile-batches.js'

const T0 = 1_700_000_000_000
const LAX: RecordWalkRules = { requireKeys: false, checkTimestamps: false, low: 0, high: 0 }

function recordsOf(n: number): RecordInput[] {
  return Array.from({ length: n }, (_, i) => ({
    key: i % 3 === 0 ? null : Buffer.from(`key-${i}`),
    value: i % 4 === 1 ? null : Buffer.alloc(i * 37, 0x61 + (i % 26)),
    // Deltas both ways and one beyond 2^27 ms (a varlong longer than 4 bytes).
    timestamp: T0 + (i === 2 ? 2 ** 35 : i % 2 === 0 ? i * 1000 : -i * 7),
    headers: i % 2 === 0 ? [{ key: 'h', value: Buffer.from(`v${i}`) }, { key: 'null', value: null }] : [],
  }))
}

function sectionOf(records: RecordInput[]): Buffer {
  return buildRecordBatch(records, native.crc32c, { baseTimestamp: T0 }).subarray(RECORD_BATCH_OVERHEAD)
}

/** Walks section cut at the given positions; returns the walker or the KafkaError it threw. */
function walk(section: Buffer, expected: number, cuts: number[], rules = LAX): RecordSectionWalker | KafkaError {
  const walker = new RecordSectionWalker(expected, T0, rules)
  try {
    let from = 0
    for (const cut of [...cuts, section.length]) {
      walker.push(section, from, cut)
      from = cut
    }
    walker.finish()
    return walker
  } catch (err) {
    if (err instanceof KafkaError) return err
    throw err
  }
}

/** Every way of cutting section in two, and in one-byte chunks. */
function splits(section: Buffer): number[][] {
  const out: number[][] = [[]]
  for (let i = 1; i < section.length; i++) out.push([i])
  out.push(Array.from({ length: section.length - 1 }, (_, i) => i + 1))
  return out
}

function expectCorrupt(section: Buffer, expected: number, message: RegExp): void {
  for (const cuts of splits(section)) {
    const result = walk(section, expected, cuts)
    expect(result, `cut at ${cuts.slice(0, 3).join(',')}`).toBeInstanceOf(KafkaError)
    expect((result as KafkaError).code).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect((result as KafkaError).message).toMatch(message)
  }
}

describe('RecordSectionWalker', () => {
  it('accepts every valid records section however it is cut into chunks', () => {
    const section = sectionOf(recordsOf(9))
    for (const cuts of splits(section)) {
      const result = walk(section, 9, cuts)
      expect(result).toBeInstanceOf(RecordSectionWalker)
      expect((result as RecordSectionWalker).count).toBe(9)
    }
  })

  it('refuses bytes after the last record, a truncated record and a wrong record count', () => {
    const section = sectionOf(recordsOf(4))
    expectCorrupt(Buffer.concat([section, Buffer.from([2, 0, 0])]), 4, /more|length|truncated|runs past/)
    expectCorrupt(section.subarray(0, section.length - 3), 4, /truncated|runs past/)
    expectCorrupt(section, 5, /declares 5 records but holds 4/)
    expectCorrupt(section, 3, /declares 3 records but holds more/)
    expectCorrupt(Buffer.alloc(64), 1, /bad length 0/)
  })

  it('refuses offset deltas other than 0..n-1', () => {
    const records = recordsOf(3)
    const section = Buffer.from(sectionOf(records))
    // The second record's offsetDelta byte: after its length, attributes and timestampDelta.
    const first = section[0]! / 2 + 1
    const tsLen = section.subarray(first + 2).findIndex((b) => (b & 0x80) === 0) + 1
    const at = first + 2 + tsLen
    expect(section[at]).toBe(2) // zig-zag 1
    section[at] = 4 // zig-zag 2
    expectCorrupt(section, 3, /offsetDelta 2/)
  })

  it('refuses fields that run past their record, varints too long and bad lengths', () => {
    const rec = (bytes: number[]): Buffer => {
      const b = Buffer.alloc(bytes.length + 5)
      const p = writeVarint(b, 0, bytes.length)
      Buffer.from(bytes).copy(b, p)
      return b.subarray(0, p + bytes.length)
    }
    // attributes, ts 0, offset 0, key len 10 (zig-zag 20) with 1 byte left.
    expectCorrupt(rec([0, 0, 0, 20, 0, 0, 0]), 1, /key of 10 bytes runs past/)
    // a null header key.
    expectCorrupt(rec([0, 0, 0, 1, 1, 2, 1, 0]), 1, /header key length -1/)
    // a key length of -2.
    expectCorrupt(rec([0, 0, 0, 3, 1, 0, 0]), 1, /key length -2/)
    // fields that end before the record does.
    expectCorrupt(rec([0, 0, 0, 1, 1, 0, 0, 0]), 1, /after its last field|declares 8 bytes/)
    // an offsetDelta varint of six bytes.
    expectCorrupt(rec([0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0, 1, 1, 0]), 1, /longer than 5 bytes/)
    // a header count past what the record could hold.
    expectCorrupt(rec([0, 0, 0, 1, 1, 40, 0, 0]), 1, /bad header count 20/)
  })

  it('gives the same answer in one chunk (the addon walks it) as in one-byte chunks (TypeScript only), for mutated sections', () => {
    let seed = 3
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32)
    const rules: RecordWalkRules = { requireKeys: true, checkTimestamps: true, low: T0 - 10, high: T0 + 4000 }
    const clean = sectionOf(recordsOf(12))
    const answer = (r: RecordSectionWalker | KafkaError): string =>
      r instanceof KafkaError ? `error ${r.code}` : `${r.count} ${r.faults.map((f) => `${f.index}:${f.kind}:${f.timestamp}`).join(',')}`
    for (let k = 0; k < 3000; k++) {
      const section = Buffer.from(clean)
      for (let m = 1 + Math.floor(rand() * 3); m > 0; m--) section[Math.floor(rand() * section.length)] = rand() < 0.5 ? Math.floor(rand() * 256) : 0x80 | Math.floor(rand() * 128)
      const cut = rand() < 0.3 ? section.subarray(0, Math.floor(rand() * section.length)) : section
      const whole = walk(cut, 12, [], rules)
      const bytes = walk(cut, 12, Array.from({ length: Math.max(0, cut.length - 1) }, (_, i) => i + 1), rules)
      expect(answer(bytes), `mutation ${k}`).toBe(answer(whole))
    }
  })

  it('collects keyless records and timestamps out of bounds as faults, in any chunking', () => {
    const records = recordsOf(6)
    const section = sectionOf(records)
    const rules: RecordWalkRules = { requireKeys: true, checkTimestamps: true, low: T0 - 10, high: T0 + 4000 }
    for (const cuts of splits(section)) {
      const w = walk(section, 6, cuts, rules) as RecordSectionWalker
      expect(w.faults.map((f) => `${f.index}:${f.kind}`)).toEqual(['0:keyless', '2:timestamp', '3:keyless', '5:timestamp'])
    }
  })
})

describe('decompressInChunks', () => {
  const data = sectionOf(recordsOf(40))
  for (const codec of [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]) {
    it(`codec ${codec}: hands over the decompressed bytes in order`, () => {
      const parts: Buffer[] = []
      const n = decompressInChunks(codec, compress(codec, data), 1 << 20, (c) => parts.push(Buffer.from(c)))
      expect(n).toBe(data.length)
      expect(Buffer.concat(parts).equals(data)).toBe(true)
    })
  }

  it('streams gzip in 64 KiB chunks and stops a bomb at the limit, in bounded memory', () => {
    const bomb = gzipOfZeros(256 * 1024 * 1024)
    let largest = 0
    let seen = 0
    const before = process.memoryUsage().rss
    expect(() =>
      decompressInChunks(CompressionType.GZIP, bomb, 16 * 1024 * 1024, (c) => {
        largest = Math.max(largest, c.length)
        seen += c.length
      }),
    ).toThrow(/past the limit of 16777216/)
    expect(largest).toBeLessThanOrEqual(64 * 1024)
    expect(seen).toBeLessThanOrEqual(16 * 1024 * 1024)
    expect((process.memoryUsage().rss - before) / 1024 / 1024).toBeLessThan(16)
    // The engine is usable again after the failure.
    const parts: Buffer[] = []
    decompressInChunks(CompressionType.GZIP, compress(CompressionType.GZIP, data), 1 << 20, (c) => parts.push(Buffer.from(c)))
    expect(Buffer.concat(parts).equals(data)).toBe(true)
  })

  it('decodes snappy blocks of every shape as the snappy package does, and survives corrupted ones', () => {
    let seed = 7
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32)
    for (const size of [0, 1, 59, 60, 61, 255, 256, 4096, 65_535, 65_536, 70_000, 300_000]) {
      // Runs of repeats (copies, overlapping ones too) between random literals.
      const data = Buffer.alloc(size)
      for (let i = 0; i < size; i++) data[i] = rand() < 0.3 ? Math.floor(rand() * 256) : i > 3 ? data[i - 1 - Math.floor(rand() * 3)]! : 0
      const block = compress(CompressionType.SNAPPY, data)
      const parts: Buffer[] = []
      decompressInChunks(CompressionType.SNAPPY, block, 1 << 20, (c) => parts.push(Buffer.from(c)))
      expect(Buffer.concat(parts).equals(data), `size ${size}`).toBe(true)
      for (let k = 0; k < 50 && block.length > 2; k++) {
        const bad = Buffer.from(block)
        bad[1 + Math.floor(rand() * (bad.length - 1))] ^= 1 << Math.floor(rand() * 8)
        try {
          const n = decompressInChunks(CompressionType.SNAPPY, bad, 1 << 20, () => {})
          expect(n).toBe(size)
        } catch (err) {
          expect(err).toBeInstanceOf(KafkaError)
        }
      }
    }
  })

  it('decodes lz4 frames of independent and linked blocks as lz4-napi does, and survives corrupted ones', () => {
    let lz4: { encode(b: Buffer, o?: object): Buffer } | undefined
    try {
      lz4 = createRequire(import.meta.url)('lz4') as typeof lz4
    } catch {
      console.warn('[skein tests] the lz4 package does not load: linked lz4 blocks are not checked')
    }
    let seed = 11
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32)
    for (const size of [0, 1, 15, 16, 300, 65_536, 200_000, 700_000]) {
      const data = Buffer.alloc(size)
      for (let i = 0; i < size; i++) data[i] = rand() < 0.2 ? Math.floor(rand() * 256) : i > 70_000 && rand() < 0.5 ? data[i - 65_000]! : i > 3 ? data[i - 1 - Math.floor(rand() * 3)]! : 0
      const frames = [compressFrameSync(data)]
      if (lz4 !== undefined && size > 0) {
        for (const blockIndependence of [true, false]) frames.push(lz4.encode(data, { blockIndependence, blockMaxSize: 64 * 1024 }))
      }
      for (const frame of frames) {
        const parts: Buffer[] = []
        decompressInChunks(CompressionType.LZ4, frame, 1 << 20, (c) => parts.push(Buffer.from(c)))
        expect(Buffer.concat(parts).equals(data), `size ${size}, FLG ${frame[4]}`).toBe(true)
        for (let k = 0; k < 30 && frame.length > 16; k++) {
          const bad = Buffer.from(frame)
          bad[7 + Math.floor(rand() * (bad.length - 7))] ^= 1 << Math.floor(rand() * 8)
          try {
            decompressInChunks(CompressionType.LZ4, bad, 1 << 20, () => {})
          } catch (err) {
            expect(err).toBeInstanceOf(KafkaError)
          }
        }
      }
    }
  })

  it('refuses data that is not of its codec and zstd and lz4 frames declaring too much', () => {
    for (const codec of [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]) {
      expect(() => decompressInChunks(codec, Buffer.from('not compressed at all, not at all'), 1 << 20, () => {})).toThrow(KafkaError)
    }
    const big = Buffer.alloc(2 * 1024 * 1024)
    expect(() => decompressInChunks(CompressionType.ZSTD, compress(CompressionType.ZSTD, big), 1 << 20, () => {})).toThrow(/declares 2097152 bytes/)
    expect(() => decompressInChunks(CompressionType.LZ4, compress(CompressionType.LZ4, big), 1 << 20, () => {})).toThrow(/past the limit|too small/)
    // A chunk sink that throws ends the decompression with its own error.
    expect(() =>
      decompressInChunks(CompressionType.ZSTD, compress(CompressionType.ZSTD, big), 4 << 20, () => {
        throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, 'stop')
      }),
    ).toThrow(/stop/)
  })
})
