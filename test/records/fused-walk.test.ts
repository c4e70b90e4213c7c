// The fused record walk of compressed batches (native/src/batch-walk.cc through walkCompressedRecords):
// one native call decompresses gzip, snappy (raw and xerial) and lz4 (independent and linked blocks)
// and walks the records. It must vouch for every sound batch, agree with the TypeScript path (chunked
// decompression and RecordSectionWalker) on the faults it reports, and hand everything else back:
// differential checks over hand-cut blocks, records straddling blocks (their length varints too), the
// hostile batches of issue 30 and fuzzed batches of every codec, with the fused walk on and off; and
// zstd's one-call decode of frames within one chunk.
import { createRequire } from 'node:module'
import { afterEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { KafkaError, RecordValidationError } from '../../src/domain/errors.js'
import {
  ATTRIBUTES_OFFSET, buildRecordBatch, compareOnlySkipFusedWalk, compress, CompressionType, CRC_OFFSET, decompressInChunks, deflateBatch,
  inflateBatch, RECORD_BATCH_OVERHEAD, validateProducerBatches, type BatchValidationPolicy, type RecordInput,
} from '../../src/protocol/records/index.js'
import { RecordSectionWalker, walkCompressedRecords, type RecordFault, type RecordWalkRules } from '../../src/protocol/records/record-walk.js'
import { hostileBatches } from './hostile-batches.js'

const T0 = 1_700_000_000_000
const MIB = 1024 * 1024
const LAX: RecordWalkRules = { requireKeys: false, checkTimestamps: false, low: 0, high: 0 }
/** Keys required, and a timestamp window that leaves some records of recordsOf outside. */
const STRICT: RecordWalkRules = { requireKeys: true, checkTimestamps: true, low: T0 - 5_000, high: T0 + 40_000 }

const lz4 = (() => {
  try {
    return createRequire(import.meta.url)('lz4') as { encode(b: Buffer, o?: object): Buffer }
  } catch {
    return undefined
  }
})()

afterEach(() => compareOnlySkipFusedWalk(false))

function recordsOf(n: number, valueBytes = (i: number) => 40 + ((i * 37) % 300)): RecordInput[] {
  return Array.from({ length: n }, (_, i) => ({
    key: i % 5 === 3 ? null : Buffer.from(`key-${i}`),
    value: Buffer.from(`{"id":${i},"text":"${'lorem ipsum '.repeat(40)}"}`.padEnd(valueBytes(i), '.').slice(0, valueBytes(i))),
    timestamp: T0 + (i % 7 === 6 ? 3_600_000 : i * 100),
    headers: i % 2 === 0 ? [{ key: 'h', value: Buffer.from(`v${i}`) }] : [],
  }))
}

function sectionOf(records: RecordInput[]): Buffer {
  return buildRecordBatch(records, native.crc32c, { baseTimestamp: T0 }).subarray(RECORD_BATCH_OVERHEAD)
}

type Verdict = { faults: RecordFault[] } | { error: string }

/** The TypeScript path's answer: chunked decompression into the TypeScript walker. */
function typeScriptVerdict(codec: number, data: Buffer, expected: number, rules: RecordWalkRules, maxBytes = 4 * MIB): Verdict {
  const walker = new RecordSectionWalker(expected, T0, rules)
  try {
    decompressInChunks(codec, data, maxBytes, (chunk) => walker.push(chunk))
    walker.finish()
    return { faults: walker.faults }
  } catch (err) {
    if (err instanceof KafkaError) return { error: err.message }
    throw err
  }
}

/** The fused walk's answer must be the TypeScript path's whenever it gives one; returns whether it did. */
function expectAgreement(codec: number, data: Buffer, expected: number, rules: RecordWalkRules, maxBytes = 4 * MIB): boolean {
  const fused = walkCompressedRecords(codec, data, maxBytes, expected, T0, rules)
  if (fused === null) return false
  expect(typeScriptVerdict(codec, data, expected, rules, maxBytes)).toEqual({ faults: fused })
  return true
}

/** Xerial's snappy framing around raw snappy blocks of data cut at `cuts`. */
function xerial(data: Buffer, cuts: number[]): Buffer {
  const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0, 0, 0, 0, 1, 0, 0, 0, 1])
  const parts: Buffer[] = [header]
  let from = 0
  for (const cut of [...cuts, data.length]) {
    const block = compress(CompressionType.SNAPPY, data.subarray(from, cut))
    const length = Buffer.alloc(4)
    length.writeInt32BE(block.length)
    parts.push(length, block)
    from = cut
  }
  return Buffer.concat(parts)
}

/** An lz4 frame (independent 64 KiB blocks) of data cut at `cuts`, each block stored uncompressed. */
function lz4StoredBlocks(data: Buffer, cuts: number[]): Buffer {
  const parts: Buffer[] = [Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82])]
  let from = 0
  for (const cut of [...cuts, data.length]) {
    const word = Buffer.alloc(4)
    word.writeUInt32LE(((cut - from) | 0x80000000) >>> 0)
    parts.push(word, data.subarray(from, cut))
    from = cut
  }
  parts.push(Buffer.alloc(4)) // EndMark
  return Buffer.concat(parts)
}

describe('walkCompressedRecords (the fused native walk)', () => {
  const records = recordsOf(120)
  const section = sectionOf(records)

  it('vouches for sound gzip, snappy and lz4 batches, with the faults the TypeScript walker finds', () => {
    const frames: [number, Buffer][] = [
      [CompressionType.GZIP, compress(CompressionType.GZIP, section)],
      [CompressionType.SNAPPY, compress(CompressionType.SNAPPY, section)],
      [CompressionType.SNAPPY, xerial(section, [1000, 9000])],
      [CompressionType.LZ4, compress(CompressionType.LZ4, section)],
    ]
    for (const [codec, data] of frames) {
      for (const rules of [LAX, STRICT]) {
        expect(expectAgreement(codec, data, records.length, rules), `codec ${codec}`).toBe(true)
      }
      const strict = walkCompressedRecords(codec, data, 4 * MIB, records.length, T0, STRICT)!
      expect(strict.filter((f) => f.kind === 'keyless').length).toBeGreaterThan(0)
      expect(strict.filter((f) => f.kind === 'timestamp').length).toBeGreaterThan(0)
      // A wrong count, a tight bomb limit: no verdict here, the TypeScript path names them.
      expect(walkCompressedRecords(codec, data, 4 * MIB, records.length + 1, T0, LAX)).toBeNull()
      expect(walkCompressedRecords(codec, data, 4 * MIB, records.length - 1, T0, LAX)).toBeNull()
      expect(walkCompressedRecords(codec, data, section.length - 1, records.length, T0, LAX)).toBeNull()
      expect(typeScriptVerdict(codec, data, records.length, LAX, section.length - 1)).toHaveProperty('error')
    }
    // zstd is not fused (its decoder lives in zstd-napi): always the TypeScript path.
    expect(walkCompressedRecords(CompressionType.ZSTD, compress(CompressionType.ZSTD, section), 4 * MIB, records.length, T0, LAX)).toBeNull()
  })

  it('walks records straddling blocks, cut at every byte of a record (its length varint too), xerial snappy and lz4', () => {
    // Records of 100-340 bytes: two-byte length varints. Cut twice around every byte of records 9 to 11.
    const start = section.indexOf(Buffer.from('{"id":9,')) - 20
    for (let cut = start; cut < start + 900; cut++) {
      for (const data of [xerial(section, [cut, cut + 1 + (cut % 5)]), lz4StoredBlocks(section, [cut, cut + 1 + (cut % 5)])]) {
        const codec = data[0] === 0x82 ? CompressionType.SNAPPY : CompressionType.LZ4
        expect(expectAgreement(codec, data, records.length, STRICT), `cut at ${cut}`).toBe(true)
      }
    }
    // One-byte blocks: every record is carried byte by byte.
    const bytes = Array.from({ length: 2000 }, (_, i) => i + 1)
    expect(expectAgreement(CompressionType.LZ4, lz4StoredBlocks(section.subarray(0, 2000), bytes.slice(0, -1)), 0, LAX)).toBe(false)
    const few = sectionOf(recordsOf(6))
    const all = Array.from({ length: few.length - 1 }, (_, i) => i + 1)
    expect(expectAgreement(CompressionType.SNAPPY, xerial(few, all), 6, STRICT)).toBe(true)
    expect(expectAgreement(CompressionType.LZ4, lz4StoredBlocks(few, all), 6, STRICT)).toBe(true)
  })

  it.skipIf(lz4 === undefined)('decodes linked lz4 blocks whose matches reach back across blocks into the 64 KiB window', () => {
    // ~420 KiB of records whose values repeat text from ~50 KiB earlier: matches cross block boundaries.
    let seed = 3
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32)
    const corpus = Buffer.from(Array.from({ length: 60_000 }, () => 97 + Math.floor(rand() * 26)))
    const big = Array.from({ length: 2000 }, (_, i) => ({
      key: Buffer.from(`k${i}`),
      value: corpus.subarray((i * 50_003) % 59_000, ((i * 50_003) % 59_000) + 100 + (i % 200)),
      timestamp: T0 + i,
    }))
    const data = sectionOf(big)
    expect(data.length).toBeGreaterThan(6 * 64 * 1024)
    for (const blockIndependence of [false, true]) {
      const frame = lz4!.encode(data, { blockIndependence, blockMaxSize: 64 * 1024 })
      expect((frame[4]! & 0x20) !== 0).toBe(blockIndependence)
      expect(expectAgreement(CompressionType.LZ4, frame, big.length, { ...STRICT, low: T0 + 10, high: T0 + 1990 })).toBe(true)
      // Flipping a byte in a late block breaks its matches or its records: never vouched for wrongly.
      for (let k = 0; k < 40; k++) {
        const bad = Buffer.from(frame)
        bad[frame.length - 5 - Math.floor(rand() * 60_000)] ^= 1 << Math.floor(rand() * 8)
        expectAgreement(CompressionType.LZ4, bad, big.length, LAX)
      }
    }
  })

  it.skipIf(lz4 === undefined)('leaves a record longer than it carries (1 MiB) across blocks to the TypeScript path, which accepts it', () => {
    const huge = [{ key: Buffer.from('k'), value: Buffer.alloc(1536 * 1024, 0x61), timestamp: T0 }, ...recordsOf(3).map((r) => ({ ...r, timestamp: T0 }))]
    const data = sectionOf(huge)
    const frame = lz4!.encode(data, { blockIndependence: false, blockMaxSize: 64 * 1024 })
    expect(walkCompressedRecords(CompressionType.LZ4, frame, 4 * MIB, huge.length, T0, LAX)).toBeNull()
    expect(typeScriptVerdict(CompressionType.LZ4, frame, huge.length, LAX)).toEqual({ faults: [] })
    // Batches after it start with empty carry and scratch kept small.
    expect(expectAgreement(CompressionType.LZ4, compress(CompressionType.LZ4, section), records.length, STRICT)).toBe(true)
  })
})

describe('zstd frames of at most one chunk (decoded in one call)', () => {
  const section = sectionOf(recordsOf(60))
  const frame = compress(CompressionType.ZSTD, section)

  it('hand over the whole section at once, and a failing frame gets the streamed decoder\'s own error', () => {
    const chunks: Buffer[] = []
    expect(decompressInChunks(CompressionType.ZSTD, frame, 4 * MIB, (c) => chunks.push(Buffer.from(c)))).toBe(section.length)
    expect(chunks.length).toBe(1)
    expect(chunks[0]!.equals(section)).toBe(true)
    // Truncated: the one-shot decode fails, the stream names it as before.
    expect(() => decompressInChunks(CompressionType.ZSTD, frame.subarray(0, frame.length - 3), 4 * MIB, () => {})).toThrow(/truncated zstd frame|corrupt zstd data/)
    let seed = 5
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32)
    for (let k = 0; k < 200; k++) {
      const bad = Buffer.from(frame)
      bad[6 + Math.floor(rand() * (bad.length - 6))] ^= 1 << Math.floor(rand() * 8)
      try {
        const parts: Buffer[] = []
        decompressInChunks(CompressionType.ZSTD, bad, 4 * MIB, (c) => parts.push(Buffer.from(c)))
        expect(Buffer.concat(parts).length).toBeLessThanOrEqual(4 * MIB)
      } catch (err) {
        expect(err).toBeInstanceOf(KafkaError)
      }
    }
    // The decoder is sound again afterwards.
    expect(decompressInChunks(CompressionType.ZSTD, frame, 4 * MIB, () => {})).toBe(section.length)
  })
})

/** validateProducerBatches' answer: the error's code and message (and record errors), or 'ok'. */
function validationAnswer(payload: Buffer, policy: BatchValidationPolicy, fused: boolean): string {
  compareOnlySkipFusedWalk(!fused)
  try {
    validateProducerBatches(payload, policy, native.crc32c)
    return 'ok'
  } catch (err) {
    if (!(err instanceof KafkaError)) throw err
    const records = err instanceof RecordValidationError ? JSON.stringify(err.recordErrors) : ''
    return `${err.code} ${err.message} ${records}`
  } finally {
    compareOnlySkipFusedWalk(false)
  }
}

/** xorshift32, as in fuzz.test.ts: a fixed seed makes a failure reproducible. */
function prng(seed: number): () => number {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    return x / 0x1_0000_0000
  }
}

describe('validateProducerBatches with and without the fused walk', () => {
  const now = Date.now()
  const lax: BatchValidationPolicy = {
    maxMessageBytes: MIB,
    timestampType: 'CreateTime',
    timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER,
    timestampAfterMaxMs: Number.MAX_SAFE_INTEGER,
    now,
  }
  const strict: BatchValidationPolicy = { ...lax, requireKeys: true, timestampBeforeMaxMs: 60_000, timestampAfterMaxMs: 60_000, topic: 't', partition: 0 }

  it('answers every hostile batch of issue 30 the same way', () => {
    for (const [name, batch] of Object.entries(hostileBatches())) {
      for (const policy of [lax, strict]) {
        const fused = validationAnswer(batch, policy, true)
        expect(fused, name).not.toBe('ok')
        expect(fused, name).toBe(validationAnswer(batch, policy, false))
      }
    }
  })

  it('names every record at fault, more than the addon reports at once (64), the same way', () => {
    const keyless = Array.from({ length: 150 }, (_, i) => ({ key: null, value: Buffer.from(`v${i}`), timestamp: now }))
    for (const codec of [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]) {
      const plain = buildRecordBatch(keyless, native.crc32c)
      const inflated = inflateBatch(plain, MIB)
      const batch = deflateBatch(inflated.header, inflated.records, codec)
      const answer = validationAnswer(batch, strict, true)
      expect(answer).toMatch(/150 record errors/)
      expect(answer).toBe(validationAnswer(batch, strict, false))
    }
  })

  const ITERATIONS = Number(process.env.SKEIN_FUZZ_ITERATIONS ?? 1500)
  for (const codec of [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]) {
    it(`answers fuzzed ${['', 'gzip', 'snappy', 'lz4', 'zstd'][codec]} batches the same way (differential)`, () => {
      const rnd = prng(0xf00d + codec)
      const valid = (): Buffer => {
        const n = 1 + Math.floor(rnd() * 30)
        const recs = Array.from({ length: n }, (_, i) => ({
          key: rnd() < 0.1 ? null : Buffer.from(`key-${i}`),
          value: Buffer.alloc(Math.floor(rnd() * 400), 97 + (i % 26)),
          timestamp: now + (rnd() < 0.1 ? 3_600_000 : i),
          headers: rnd() < 0.3 ? [{ key: 'h', value: Buffer.from('v') }] : [],
        }))
        const inflated = inflateBatch(buildRecordBatch(recs, native.crc32c), MIB)
        return deflateBatch(inflated.header, inflated.records, codec)
      }
      let vouched = 0
      let differentAnswers = 0
      for (let i = 0; i < ITERATIONS; i++) {
        let b = Buffer.from(valid())
        const kind = Math.floor(rnd() * 4)
        if (kind === 0) {
          for (let f = 0, flips = 1 + Math.floor(rnd() * 4); f < flips; f++) b[RECORD_BATCH_OVERHEAD + Math.floor(rnd() * (b.length - RECORD_BATCH_OVERHEAD))] = Math.floor(rnd() * 256)
        } else if (kind === 1) {
          b = b.subarray(0, RECORD_BATCH_OVERHEAD + Math.floor(rnd() * (b.length - RECORD_BATCH_OVERHEAD)))
          b.writeInt32BE(b.length - 12, 8)
        } else if (kind === 2) {
          b.writeInt32BE(b.readInt32BE(57) + (rnd() < 0.5 ? 1 : -1), 57) // recordCount
          b.writeInt32BE(b.readInt32BE(57) - 1, 23) // lastOffsetDelta follows it
        }
        // kind 3: left sound
        b.writeUInt32BE(native.crc32c(b.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
        for (const policy of [lax, strict]) {
          const fused = validationAnswer(b, policy, true)
          const plain = validationAnswer(b, policy, false)
          if (fused !== plain) differentAnswers++
          expect(fused, b.toString('hex').slice(0, 300)).toBe(plain)
        }
        const section = b.subarray(RECORD_BATCH_OVERHEAD)
        if (kind === 3 && walkCompressedRecords(codec, section, 4 * MIB, b.readInt32BE(57), b.readBigInt64BE(27) > 0n ? Number(b.readBigInt64BE(27)) : 0, LAX) !== null) vouched++
      }
      expect(differentAnswers).toBe(0)
      // The fused walk really runs: every sound batch of a fused codec is vouched for by it.
      if (codec === CompressionType.ZSTD) expect(vouched).toBe(0)
      else expect(vouched).toBeGreaterThan(ITERATIONS / 5)
    })
  }
})
