// Bounded fuzzing of the record-batch parsers a producer's bytes reach on the broker: the produce
// validator (validateProducerBatches), the decoder of compressed and uncompressed batches (inflateBatch,
// with the broker's decompression budget) and the builder's record decoder. Valid batches (uncompressed,
// gzip, snappy, lz4; zstd where this Node has it) are mutated — random bytes flipped, truncated, varints
// overwritten, lengths set to extremes — and, half the time, given a fresh CRC so the mutation reaches
// the inner parsers instead of stopping at the checksum. Every input must be answered with a KafkaError
// (the tools' decodeRecords: a RangeError, its contract) or accepted; any other exception is a parser bug. A fixed seed makes a failure reproducible; the
// iterations are SKEIN_FUZZ_ITERATIONS (default 3,000 per codec here; `npm run test:fuzz` runs 100,000).
import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { KafkaError } from '../../src/domain/errors.js'
import {
  ATTRIBUTES_OFFSET, buildRecordBatch, CompressionType, CRC_OFFSET, decodeRecords, deflateBatch, inflateBatch, validateProducerBatches,
  type BatchValidationPolicy,
} from '../../src/protocol/records/index.js'

const ITERATIONS = Number(process.env.SKEIN_FUZZ_ITERATIONS ?? 3000)
const SEED = Number(process.env.SKEIN_FUZZ_SEED ?? 0x5eed)
const BUDGET = 1024 * 1024

/** xorshift32: small, fast and the same on every machine. */
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

const policy: BatchValidationPolicy = {
  maxMessageBytes: BUDGET,
  timestampType: 'CreateTime',
  timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER,
  timestampAfterMaxMs: Number.MAX_SAFE_INTEGER,
  now: Date.now(),
}

function validBatch(codec: CompressionType, rnd: () => number): Buffer | null {
  const n = 1 + Math.floor(rnd() * 20)
  const records = Array.from({ length: n }, (_, i) => ({
    key: rnd() < 0.2 ? null : Buffer.from(`key-${i}`),
    value: Buffer.alloc(Math.floor(rnd() * 200), i),
    headers: rnd() < 0.3 ? [{ key: 'h', value: Buffer.from('v') }] : [],
  }))
  const plain = buildRecordBatch(records, native.crc32c, { baseTimestamp: 1_700_000_000_000 })
  if (codec === CompressionType.NONE) return plain
  const inflated = inflateBatch(plain, BUDGET)
  try {
    return deflateBatch(inflated.header, inflated.records, codec)
  } catch {
    return null // a codec this Node cannot write (zstd before Node 22)
  }
}

function mutate(batch: Buffer, rnd: () => number): Buffer {
  let b = Buffer.from(batch)
  const kind = Math.floor(rnd() * 5)
  if (kind === 0) {
    for (let i = 0, flips = 1 + Math.floor(rnd() * 8); i < flips; i++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256)
  } else if (kind === 1) {
    b = b.subarray(0, Math.floor(rnd() * b.length))
  } else if (kind === 2) {
    // An extreme length or count somewhere past the header: varints of 0x7f / 0xff runs.
    const at = 61 + Math.floor(rnd() * Math.max(1, b.length - 61))
    b.fill(rnd() < 0.5 ? 0xff : 0x7f, at, Math.min(b.length, at + 1 + Math.floor(rnd() * 6)))
  } else if (kind === 3) {
    // The header's batchLength or recordCount set to an extreme.
    const field = rnd() < 0.5 ? 8 : 57
    if (b.length >= field + 4) b.writeInt32BE([0x7fffffff, -1, 0, 1 << 20][Math.floor(rnd() * 4)]!, field)
  } else {
    // Random bytes behind a plausible header.
    b = Buffer.concat([b.subarray(0, 61), Buffer.from(Array.from({ length: Math.floor(rnd() * 300) }, () => Math.floor(rnd() * 256)))])
    if (b.length >= 12) b.writeInt32BE(b.length - 12, 8)
  }
  if (rnd() < 0.5 && b.length >= 61) b.writeUInt32BE(native.crc32c(b.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
  return b
}

function expectKafkaErrorOrSuccess(what: string, input: Buffer, fn: () => unknown, alsoAllowed?: new (...args: never[]) => Error): void {
  try {
    fn()
  } catch (err) {
    if (!(err instanceof KafkaError) && !(alsoAllowed !== undefined && err instanceof alsoAllowed)) throw new Error(`${what} threw ${String(err)} on ${input.toString('hex').slice(0, 400)}`)
  }
}

describe('record-batch parsers under fuzzing', () => {
  const codecs = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]
  for (const codec of codecs) {
    it(`answers every mutated ${['uncompressed', 'gzip', 'snappy', 'lz4', 'zstd'][codec]} batch with a KafkaError or accepts it`, () => {
      const rnd = prng(SEED + codec)
      const seedBatch = validBatch(codec, rnd)
      if (seedBatch === null) return // said in the file header: zstd needs Node 22's zlib
      let rejected = 0
      for (let i = 0; i < ITERATIONS; i++) {
        const base = i % 50 === 0 ? validBatch(codec, rnd)! : seedBatch
        const input = mutate(base, rnd)
        let validated = false
        try {
          validateProducerBatches(input, policy, native.crc32c)
          validated = true
        } catch (err) {
          if (!(err instanceof KafkaError)) throw new Error(`validateProducerBatches threw ${String(err)} on ${input.toString('hex').slice(0, 400)}`)
          rejected++
        }
        expectKafkaErrorOrSuccess('inflateBatch', input, () => inflateBatch(input, BUDGET))
        // The tools' decoder (coordinator replay, tests) promises a RangeError on malformed records.
        if (validated && codec === CompressionType.NONE) expectKafkaErrorOrSuccess('decodeRecords', input, () => decodeRecords(input), RangeError)
      }
      // The mutations are not all harmless: most inputs are refused.
      expect(rejected).toBeGreaterThan(ITERATIONS / 2)
    })
  }
})
