// Legacy message sets (magic 0/1) for Produce v0-2 and Fetch v0-3: up-conversion to one RecordBatch v2
// (every codec an old producer may use), down-conversion of v2 batches to magic 0 and 1 (compressed,
// control and LogAppendTime batches, fetch offset inside a batch, the byte limit and minOneMessage), and
// the checks a hostile set meets before anything is allocated for it.
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { CompressionType, readInt64, writeInt64 } from '../../src/protocol/records/batch.js'
import { buildRecordBatch, decodeRecords } from '../../src/protocol/records/builder.js'
import { compress } from '../../src/protocol/records/compression.js'
import { deflateBatch, inflateBatch } from '../../src/protocol/records/inflate.js'
import {
  buildLegacyMessageSet,
  decodeLegacyMessageSet,
  downConvertBatches,
  encodeLegacyMessages,
  legacyCrc,
  upConvertMessageSet,
  type LegacyMagic,
} from '../../src/protocol/records/legacy-message-set.js'

const crc32c = native.crc32c
const policy = { maxMessageBytes: 1024 * 1024, timestampType: 'CreateTime' as const, crc32c }
const LEGACY_CODECS = [0, 1, 2, 3] as const
const rec = (i: number, timestamp?: number) => ({ key: i % 3 === 0 ? null : Buffer.from(`k${i}`), value: Buffer.from(`value-${i}`.repeat(1 + (i % 4))), timestamp })

function codeOf(fn: () => unknown): number | undefined {
  try {
    fn()
  } catch (err) {
    if (err instanceof KafkaError) return err.code
    throw err
  }
  return undefined
}

describe('upConvertMessageSet', () => {
  for (const magic of [0, 1] as const) {
    for (const codec of LEGACY_CODECS) {
      it(`magic ${magic}, codec ${codec}: one v2 batch with every record, producer id -1, codec kept`, () => {
        const now = 1_700_000_000_000
        const input = Array.from({ length: 25 }, (_, i) => rec(i, now + i * 10))
        const set = buildLegacyMessageSet(input, magic, codec)
        const up = upConvertMessageSet(set, policy)
        expect(up).toMatchObject({ recordCount: 25, magic, codec })
        const inflated = inflateBatch(up.batch, 1 << 24)
        expect(inflated.compression).toBe(codec)
        expect(inflated.header).toMatchObject({ producerId: -1, producerEpoch: -1, baseSequence: -1, recordCount: 25, lastOffsetDelta: 24, baseOffset: 0 })
        expect(inflated.header.attributes & 0x08).toBe(0)
        expect(up.batch.readUInt32BE(17)).toBe(crc32c(up.batch.subarray(21)))
        const ts = inflated.records.map((r) => inflated.header.baseTimestamp + r.timestampDelta)
        // Magic 0 has no timestamp: NO_TIMESTAMP (-1) in the v2 records, as Kafka's LogValidator writes them.
        expect(ts).toEqual(input.map((r) => (magic === 0 ? -1 : r.timestamp)))
        expect(inflated.header.maxTimestamp).toBe(magic === 0 ? -1 : now + 240)
        expect(inflated.records.map((r) => [r.offsetDelta, r.key?.toString() ?? null, r.value!.toString(), r.headers.length])).toEqual(
          input.map((r, i) => [i, r.key?.toString() ?? null, r.value.toString(), 0]),
        )
      })
    }
  }

  it('magic 1 compressed: the inner offsets may be anything (old clients), the LogAppendTime wrapper gives its timestamp', () => {
    const inner = encodeLegacyMessages([5, 9, 11].map((o, i) => ({ offset: o, magic: 1, attributes: 0, timestamp: 1000 + i, key: null, value: Buffer.from(`v${i}`) })))
    const wrapper = (attributes: number): Buffer => encodeLegacyMessages([{ offset: 2, magic: 1, attributes, timestamp: 5000, key: null, value: gzipSync(inner) }])
    const up = inflateBatch(upConvertMessageSet(wrapper(1), policy).batch, 1 << 20)
    expect(up.records.map((r) => [r.offsetDelta, up.header.baseTimestamp + r.timestampDelta])).toEqual([[0, 1000], [1, 1001], [2, 1002]])
    const lat = inflateBatch(upConvertMessageSet(wrapper(1 | 8), policy).batch, 1 << 20)
    expect(lat.records.map((r) => lat.header.baseTimestamp + r.timestampDelta)).toEqual([5000, 5000, 5000])
    // ... but not into a LogAppendTime topic (Kafka: "Producer should not set timestamp type to LogAppendTime").
    expect(codeOf(() => upConvertMessageSet(wrapper(1 | 8), { ...policy, timestampType: 'LogAppendTime' }))).toBe(ErrorCode.INVALID_TIMESTAMP)
    expect(codeOf(() => upConvertMessageSet(wrapper(1), { ...policy, timestampType: 'LogAppendTime' }))).toBeUndefined()
  })

  it('refuses hostile sets with Kafka codes, before building anything', () => {
    const good = buildLegacyMessageSet([rec(1, 1), rec(2, 2)], 1)
    // Truncated anywhere: CORRUPT_MESSAGE.
    for (const cut of [1, 5, 11, 12, 20, good.length - 1]) expect(codeOf(() => upConvertMessageSet(good.subarray(0, cut), policy)), `cut ${cut}`).toBe(ErrorCode.CORRUPT_MESSAGE)
    // A bad CRC.
    const badCrc = Buffer.from(good)
    badCrc[badCrc.length - 1]! ^= 1
    expect(codeOf(() => upConvertMessageSet(badCrc, policy))).toBe(ErrorCode.CORRUPT_MESSAGE)
    // Size fields: below the overhead, past the data, 2^31-1.
    for (const size of [0, 13, -1, good.length, 0x7fffffff]) {
      const b = Buffer.from(good)
      b.writeInt32BE(size, 8)
      expect(codeOf(() => upConvertMessageSet(b, policy)), `size ${size}`).toBe(ErrorCode.CORRUPT_MESSAGE)
    }
    // A key length that runs past the message (CRC fixed up so the length is what is judged).
    const badKey = Buffer.from(good)
    badKey.writeInt32BE(1 << 30, 26)
    badKey.writeUInt32BE(legacyCrc(badKey.subarray(16, 12 + badKey.readInt32BE(8))), 12)
    expect(codeOf(() => upConvertMessageSet(badKey, policy))).toBe(ErrorCode.CORRUPT_MESSAGE)
    // Larger than max.message.bytes.
    expect(codeOf(() => upConvertMessageSet(good, { ...policy, maxMessageBytes: 30 }))).toBe(ErrorCode.MESSAGE_TOO_LARGE)
    // Magic 2 (a v2 batch in a v0-2 request), unknown magic, mixed magic.
    expect(codeOf(() => upConvertMessageSet(buildRecordBatch([{ value: Buffer.from('x') }], crc32c), policy))).toBe(ErrorCode.INVALID_RECORD)
    const magic7 = Buffer.from(good)
    magic7[16] = 7
    expect(codeOf(() => upConvertMessageSet(magic7, policy))).toBe(ErrorCode.CORRUPT_MESSAGE)
    const mixed = Buffer.concat([buildLegacyMessageSet([rec(1)], 0), buildLegacyMessageSet([rec(2)], 1)])
    expect(codeOf(() => upConvertMessageSet(mixed, policy))).toBe(ErrorCode.INVALID_RECORD)
    // zstd (needs v2) and unknown codecs.
    for (const codec of [4, 5]) {
      const m = encodeLegacyMessages([{ offset: 0, magic: 1, attributes: codec, timestamp: 1, key: null, value: Buffer.from('x') }])
      expect(codeOf(() => upConvertMessageSet(m, policy))).toBe(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    }
    // Empty.
    expect(codeOf(() => upConvertMessageSet(Buffer.alloc(0), policy))).toBe(ErrorCode.INVALID_RECORD)
  })

  it('refuses bad wrappers: nested, not alone, null or empty value, undecodable, magic mismatch', () => {
    const inner = buildLegacyMessageSet([rec(1, 1), rec(2, 2)], 1, 1)
    // A wrapper inside a compressed set.
    const nested = encodeLegacyMessages([{ offset: 0, magic: 1, attributes: 1, timestamp: 1, key: null, value: gzipSync(inner) }])
    expect(codeOf(() => upConvertMessageSet(nested, policy))).toBe(ErrorCode.INVALID_RECORD)
    expect(codeOf(() => upConvertMessageSet(Buffer.concat([inner, inner]), policy))).toBe(ErrorCode.INVALID_RECORD)
    expect(codeOf(() => upConvertMessageSet(Buffer.concat([buildLegacyMessageSet([rec(1)], 1), inner]), policy))).toBe(ErrorCode.INVALID_RECORD)
    const wrap = (value: Buffer | null, magic: LegacyMagic = 1): Buffer => encodeLegacyMessages([{ offset: 0, magic, attributes: 1, timestamp: 1, key: null, value }])
    expect(codeOf(() => upConvertMessageSet(wrap(null), policy))).toBe(ErrorCode.INVALID_RECORD)
    expect(codeOf(() => upConvertMessageSet(wrap(gzipSync(Buffer.alloc(0))), policy))).toBe(ErrorCode.INVALID_RECORD)
    expect(codeOf(() => upConvertMessageSet(wrap(Buffer.from('not gzip at all')), policy))).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect(codeOf(() => upConvertMessageSet(wrap(gzipSync(buildLegacyMessageSet([rec(1)], 0))), policy))).toBe(ErrorCode.INVALID_RECORD)
    // An inner message with a bad CRC, and inner bytes that are not a whole message.
    const plain = buildLegacyMessageSet([rec(1, 1)], 1)
    const bad = Buffer.from(plain)
    bad[bad.length - 1]! ^= 1
    expect(codeOf(() => upConvertMessageSet(wrap(gzipSync(bad)), policy))).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect(codeOf(() => upConvertMessageSet(wrap(gzipSync(Buffer.concat([plain, Buffer.alloc(7)]))), policy))).toBe(ErrorCode.CORRUPT_MESSAGE)
  })

  it('a compression bomb stops at decodedSizeLimit(max.message.bytes) with CORRUPT_MESSAGE', () => {
    // 64 MiB of zeros in ~64 KiB of gzip; the limit for max.message.bytes 1 MiB is 16 MiB.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024))
    expect(bomb.length).toBeLessThan(1024 * 1024)
    for (const codec of [1, 3] as const) {
      const value = codec === 1 ? bomb : compress(codec, Buffer.alloc(64 * 1024 * 1024))
      const set = encodeLegacyMessages([{ offset: 0, magic: 1, attributes: codec, timestamp: 1, key: null, value }])
      const before = process.memoryUsage().arrayBuffers
      expect(codeOf(() => upConvertMessageSet(set, policy))).toBe(ErrorCode.CORRUPT_MESSAGE)
      expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(48 * 1024 * 1024)
    }
  })

  it('mutated sets (bytes flipped, cut, CRCs fixed up) are converted or refused with a KafkaError, never anything else', () => {
    let seed = 12345
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    const bases = LEGACY_CODECS.flatMap((codec) => [0, 1].map((magic) => buildLegacyMessageSet(Array.from({ length: 6 }, (_, i) => rec(i, 1000 + i)), magic as LegacyMagic, codec)))
    let refused = 0
    for (let i = 0; i < 3000; i++) {
      const b = Buffer.from(bases[i % bases.length]!)
      for (let k = 0, n = 1 + rand(4); k < n; k++) b[rand(b.length)] = rand(256)
      const set = rand(4) === 0 ? b.subarray(0, rand(b.length + 1)) : b
      // Half the time the CRC of the first message is made right again, so what follows it is judged.
      if (i % 2 === 0 && set.length >= 17) {
        const size = set.readInt32BE(8)
        if (size >= 14 && 12 + size <= set.length) set.writeUInt32BE(legacyCrc(set.subarray(16, 12 + size)), 12)
      }
      try {
        const up = upConvertMessageSet(set, policy)
        expect(inflateBatch(up.batch, 1 << 24).records.length).toBe(up.recordCount)
      } catch (err) {
        if (!(err instanceof KafkaError)) throw err
        refused++
      }
    }
    expect(refused).toBeGreaterThan(1000)
  })

  it('a magic 1 message with the LogAppendTime bit and no timestamp is INVALID_TIMESTAMP', () => {
    const m = encodeLegacyMessages([{ offset: 0, magic: 1, attributes: 8, timestamp: -1, key: null, value: Buffer.from('x') }])
    expect(codeOf(() => upConvertMessageSet(m, policy))).toBe(ErrorCode.INVALID_TIMESTAMP)
    const withTs = encodeLegacyMessages([{ offset: 0, magic: 1, attributes: 8, timestamp: 5, key: null, value: Buffer.from('x') }])
    expect(codeOf(() => upConvertMessageSet(withTs, policy))).toBeUndefined()
  })
})

describe('downConvertBatches', () => {
  const opts = { fetchOffset: 0, maxBytes: 1 << 20, minOneMessage: true, maxRecordBytes: 1 << 24 }
  const withOffset = (batch: Buffer, baseOffset: number): Buffer => {
    writeInt64(batch, 0, baseOffset)
    return batch
  }

  for (const toMagic of [0, 1] as const) {
    for (const codec of [0, 1, 2, 3, 4] as const) {
      it(`v2 (codec ${codec}) -> magic ${toMagic}: every record at its offset, headers dropped, parsed as legacy`, () => {
        const now = 1_700_000_000_000
        const records = Array.from({ length: 10 }, (_, i) => ({ ...rec(i, now + i), headers: [{ key: 'h', value: Buffer.from('x') }] }))
        const plain = withOffset(buildRecordBatch(records, crc32c), 100)
        const inflated = inflateBatch(plain, 1 << 20)
        const batch = codec === 0 ? plain : deflateBatch(inflated.header, inflated.records, codec as CompressionType, crc32c)
        const { set, count } = downConvertBatches(batch, { ...opts, toMagic })
        expect(count).toBe(10)
        const parsed = decodeLegacyMessageSet(set)
        expect(parsed.map((m) => [m.offset, m.magic, m.attributes, m.timestamp, m.key?.toString() ?? null, m.value!.toString()])).toEqual(
          records.map((r, i) => [100 + i, toMagic, 0, toMagic === 0 ? -1 : now + i, r.key?.toString() ?? null, r.value.toString()]),
        )
      })
    }
  }

  it('round trip: legacy -> up -> down gives the messages back (magic 1), offsets from the log', () => {
    const input = Array.from({ length: 7 }, (_, i) => rec(i, 50 + i))
    for (const codec of LEGACY_CODECS) {
      const up = withOffset(upConvertMessageSet(buildLegacyMessageSet(input, 1, codec), policy).batch, 40)
      const back = decodeLegacyMessageSet(downConvertBatches(up, { ...opts, toMagic: 1 }).set)
      expect(back.map((m) => [m.offset, m.timestamp, m.key?.toString() ?? null, m.value!.toString()])).toEqual(input.map((r, i) => [40 + i, r.timestamp, r.key?.toString() ?? null, r.value.toString()]))
    }
  })

  it('drops control batches, skips records below the fetch offset, stamps LogAppendTime batches', () => {
    const data = withOffset(buildRecordBatch([rec(0), rec(1), rec(2)], crc32c), 10)
    const control = withOffset(buildRecordBatch([{ key: Buffer.from([0, 0, 0, 0]), value: Buffer.from([0, 0, 0, 0, 0, 0]) }], crc32c, { control: true, transactional: true, producerId: 1 }), 13)
    const lat = withOffset(buildRecordBatch([rec(3, 1), rec(4, 2)], crc32c, { logAppendTime: true }), 14)
    // buildRecordBatch sets maxTimestamp from the records; the log writes the append time there.
    writeInt64(lat, 35, 999_999)
    lat.writeUInt32BE(crc32c(lat.subarray(21)), 17)
    const { set } = downConvertBatches(Buffer.concat([data, control, lat]), { ...opts, toMagic: 1, fetchOffset: 11 })
    const parsed = decodeLegacyMessageSet(set)
    expect(parsed.map((m) => [m.offset, m.attributes, m.timestamp])).toEqual([[11, 0, expect.any(Number)], [12, 0, expect.any(Number)], [14, 8, 999_999], [15, 8, 999_999]])
    // Magic 0 has no timestamp and no timestamp bit.
    expect(decodeLegacyMessageSet(downConvertBatches(lat, { ...opts, toMagic: 0 }).set).map((m) => [m.attributes, m.timestamp])).toEqual([[0, -1], [0, -1]])
  })

  it('cuts at a message boundary within maxBytes; the first message goes whole with minOneMessage', () => {
    const big = Buffer.alloc(1000, 1)
    const batch = buildRecordBatch([{ value: big }, { value: big }, { value: big }], crc32c)
    const one = 12 + 22 + 4 + 4 + 1000 - 8 // 12 log overhead + 22 overhead (key and value lengths counted in it)
    expect(downConvertBatches(batch, { ...opts, toMagic: 1, maxBytes: 2 * one + 10 })).toMatchObject({ count: 2 })
    expect(downConvertBatches(batch, { ...opts, toMagic: 1, maxBytes: 2 * one }).set.length).toBe(2 * one)
    expect(downConvertBatches(batch, { ...opts, toMagic: 1, maxBytes: 100 })).toMatchObject({ count: 1 })
    expect(downConvertBatches(batch, { ...opts, toMagic: 1, maxBytes: 100, minOneMessage: false })).toMatchObject({ count: 0 })
    // A trailing partial batch is ignored.
    expect(downConvertBatches(Buffer.concat([batch, batch.subarray(0, 70)]), { ...opts, toMagic: 0 }).count).toBe(3)
  })

  it('a stored batch that inflates past maxRecordBytes throws INVALID_RECORD without allocating it', () => {
    const records = [{ value: Buffer.alloc(8 * 1024 * 1024) }]
    const plain = buildRecordBatch(records, crc32c)
    const inflated = inflateBatch(plain, 1 << 24)
    const gz = deflateBatch(inflated.header, inflated.records, CompressionType.GZIP, crc32c)
    expect(codeOf(() => downConvertBatches(gz, { ...opts, toMagic: 1, maxRecordBytes: 1 << 20 }))).toBe(ErrorCode.INVALID_RECORD)
  })

  it('decodeRecords reads an up-converted uncompressed batch', () => {
    const up = upConvertMessageSet(buildLegacyMessageSet([rec(1, 7), rec(2, 8)], 1), policy)
    expect(decodeRecords(up.batch).map((r) => [r.offset, r.timestamp, r.value!.toString()])).toEqual([[0, 7, 'value-1value-1'], [1, 8, 'value-2value-2value-2']])
    expect(readInt64(up.batch, 35)).toBe(8)
  })
})
