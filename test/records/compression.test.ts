// Codecs and batch inflate/deflate: round trips for every codec, the framings real clients write
// (raw and xerial snappy, lz4 frames with and without content size, linked and uncompressed blocks,
// checksums), and bounded decompression: bombs and lying length fields end in INVALID_RECORD without
// the process allocating what they claim.
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { gzipSync, deflateRawSync } from 'node:zlib'
import { compressFrameSync } from 'lz4-napi'
import { compressSync as snappyCompressSync } from 'snappy'
import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { CompressionType, COMPRESSION_MASK, CRC_OFFSET, ATTRIBUTES_OFFSET } from '../../src/protocol/records/batch.js'
import { buildRecordBatch } from '../../src/protocol/records/builder.js'
import { compress, decompress, isXerialSnappy, targetCodec } from '../../src/protocol/records/compression.js'
import { decodedSizeLimit, deflateBatch, inflateBatch, type InflatedRecord } from '../../src/protocol/records/inflate.js'
import { decodeBatches } from '../harness/index.js'

const require = createRequire(import.meta.url)
const CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD] as const
const MiB = 1024 * 1024

/** Realistic record data: JSON events. */
function jsonEvents(n: number): Buffer {
  const lines: string[] = []
  for (let i = 0; i < n; i++) {
    lines.push(JSON.stringify({ id: i, user: `user-${i % 97}`, action: ['click', 'view', 'buy'][i % 3], ts: 1_700_000_000_000 + i * 17, path: `/items/${i * 31 % 1000}` }))
  }
  return Buffer.from(lines.join('\n'))
}

function expectKafkaError(fn: () => unknown, code: number): KafkaError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KafkaError)
    expect((err as KafkaError).code).toBe(code)
    return err as KafkaError
  }
  throw new Error('expected a KafkaError')
}

/** RSS growth (MiB) while fn runs; fn must not keep what it allocates. */
function rssGrowthMiB(fn: () => void): number {
  const before = process.memoryUsage().rss
  let peak = before
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss)
  }, 1)
  try {
    fn()
  } finally {
    clearInterval(timer)
  }
  peak = Math.max(peak, process.memoryUsage().rss)
  return (peak - before) / MiB
}

/** An xerial-framed snappy stream (what snappy-java's SnappyOutputStream writes): 32 KiB blocks. */
function xerial(data: Buffer, blockSize = 32 * 1024): Buffer {
  const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1])
  const parts: Buffer[] = [header]
  for (let pos = 0; pos < data.length; pos += blockSize) {
    const block = snappyCompressSync(data.subarray(pos, pos + blockSize))
    const len = Buffer.alloc(4)
    len.writeInt32BE(block.length)
    parts.push(len, block)
  }
  return Buffer.concat(parts)
}

describe('compress / decompress', () => {
  const inputs: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from('x')],
    ['json events (~200 KiB, several lz4 blocks)', jsonEvents(2000)],
    ['random (incompressible)', randomBytes(100_000)],
  ]
  for (const codec of CODECS) {
    for (const [name, data] of inputs) {
      it(`round trips ${name} with codec ${codec}`, () => {
        const z = compress(codec, data)
        const back = decompress(codec, z, data.length)
        expect(back.equals(data)).toBe(true)
        if (codec !== 0 && name.startsWith('json')) expect(z.length).toBeLessThan(data.length / 3)
      })
    }
  }

  it('maps compression.type names to codecs', () => {
    expect(targetCodec('producer')).toBeNull()
    expect(targetCodec('uncompressed')).toBe(0)
    expect(['gzip', 'snappy', 'lz4', 'zstd'].map((n) => targetCodec(n as 'gzip'))).toEqual([1, 2, 3, 4])
  })

  it('answers UNSUPPORTED_COMPRESSION_TYPE for codecs 5-7', () => {
    for (const c of [5, 6, 7]) {
      expectKafkaError(() => decompress(c, Buffer.from('abc'), 100), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
      expectKafkaError(() => compress(c, Buffer.from('abc')), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    }
  })

  it('rejects output one byte over maxBytes for every codec, and accepts it at exactly maxBytes', () => {
    const data = jsonEvents(500)
    for (const codec of CODECS) {
      const z = compress(codec, data)
      expect(decompress(codec, z, data.length).length).toBe(data.length)
      expectKafkaError(() => decompress(codec, z, data.length - 1), ErrorCode.INVALID_RECORD)
    }
  })

  it('turns corrupt input into INVALID_RECORD for every compressed codec', () => {
    const data = jsonEvents(300)
    for (const codec of CODECS.slice(1)) {
      const z = Buffer.from(compress(codec, data))
      // Truncation, garbage and a flipped byte in the middle.
      expectKafkaError(() => decompress(codec, z.subarray(0, z.length >> 1), 10 * MiB), ErrorCode.INVALID_RECORD)
      expectKafkaError(() => decompress(codec, randomBytes(200), 10 * MiB), ErrorCode.INVALID_RECORD)
      expectKafkaError(() => decompress(codec, Buffer.alloc(0), 10 * MiB), ErrorCode.INVALID_RECORD)
    }
  })

  describe('snappy framings', () => {
    it('decodes xerial framing with several blocks (snappy-java, librdkafka)', () => {
      const data = jsonEvents(3000)
      const framed = xerial(data)
      expect(isXerialSnappy(framed)).toBe(true)
      expect(framed.readInt32BE(16)).toBeGreaterThan(0)
      expect(decompress(CompressionType.SNAPPY, framed, data.length).equals(data)).toBe(true)
      expectKafkaError(() => decompress(CompressionType.SNAPPY, framed, data.length - 1), ErrorCode.INVALID_RECORD)
      // A block length running past the data.
      const bad = Buffer.from(framed)
      bad.writeInt32BE(0x7fff0000, 16)
      expectKafkaError(() => decompress(CompressionType.SNAPPY, bad, 10 * MiB), ErrorCode.INVALID_RECORD)
    })

    it("decodes kafkajs-snappy's output (snappyjs, raw blocks) and kafkajs-snappy decodes ours", async () => {
      const codec = require('kafkajs-snappy')() as { compress(e: { buffer: Buffer }): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> }
      const data = jsonEvents(1000)
      const fromKafkajs = Buffer.from(await codec.compress({ buffer: data }))
      expect(isXerialSnappy(fromKafkajs)).toBe(false)
      expect(decompress(CompressionType.SNAPPY, fromKafkajs, data.length).equals(data)).toBe(true)
      expect(Buffer.from(await codec.decompress(compress(CompressionType.SNAPPY, data))).equals(data)).toBe(true)
      // kafkajs-snappy also reads xerial framing: what Kafka's Java broker would have written.
      expect(Buffer.from(await codec.decompress(xerial(data))).equals(data)).toBe(true)
    })

    it('refuses a raw block claiming a huge length before allocating it', () => {
      // varint 0xfffffff0 (~4 GiB) followed by a few literal bytes.
      const block = Buffer.from([0xf0, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x41])
      let err: KafkaError | undefined
      const growth = rssGrowthMiB(() => {
        err = expectKafkaError(() => decompress(CompressionType.SNAPPY, block, 1024 * MiB * 2), ErrorCode.INVALID_RECORD)
      })
      expect(err!.message).toMatch(/cannot hold|past the limit/)
      expect(growth).toBeLessThan(64)
      // The same lie inside xerial framing, and a length past maxBytes.
      const framed = Buffer.concat([xerial(Buffer.from('ok')).subarray(0, 16), Buffer.from([0, 0, 0, block.length]), block])
      expectKafkaError(() => decompress(CompressionType.SNAPPY, framed, 2048 * MiB), ErrorCode.INVALID_RECORD)
      const big = snappyCompressSync(Buffer.alloc(100_000))
      expect(decompress(CompressionType.SNAPPY, big, 100_000).length).toBe(100_000)
      expect(expectKafkaError(() => decompress(CompressionType.SNAPPY, big, 99_999), ErrorCode.INVALID_RECORD).message).toMatch(/declares 100000/)
    })
  })

  describe('lz4 frames', () => {
    const data = jsonEvents(4000) // ~360 KiB: several 64 KiB blocks

    it('decodes frames with block and content checksums', () => {
      const f = compressFrameSync(data, { blockChecksums: true, contentChecksum: true })
      expect(f[4]! & 0x14).toBe(0x14)
      expect(decompress(CompressionType.LZ4, f, data.length).equals(data)).toBe(true)
    })

    it("decodes the lz4 package's frames (kafkajs-lz4), linked blocks included", () => {
      let lz4: { encode(b: Buffer, o?: object): Buffer }
      try {
        lz4 = require('lz4')
      } catch (err) {
        console.warn(`[skein tests] the lz4 package does not load (${(err as Error).message.split('\n')[0]}): its frames are not checked`)
        return
      }
      for (const blockIndependence of [true, false]) {
        const f = lz4.encode(data, { blockIndependence, blockMaxSize: 64 * 1024 })
        expect(((f[4]! & 0x20) !== 0)).toBe(blockIndependence)
        expect(decompress(CompressionType.LZ4, f, data.length).equals(data)).toBe(true)
      }
    })

    it('decodes uncompressed blocks and a declared content size; refuses a content size over maxBytes', () => {
      // FLG: version 01, independent blocks, content size present; BD: 64 KiB. HC is not checked.
      const payload = Buffer.from('stored as is')
      const header = Buffer.alloc(4 + 2 + 8 + 1)
      header.writeUInt32LE(0x184d2204, 0)
      header[4] = 0x68
      header[5] = 0x40
      header.writeUInt32LE(payload.length, 6)
      const blockHeader = Buffer.alloc(4)
      blockHeader.writeUInt32LE((0x80000000 | payload.length) >>> 0)
      const frame = Buffer.concat([header, blockHeader, payload, Buffer.alloc(4)])
      expect(decompress(CompressionType.LZ4, frame, 100).toString()).toBe('stored as is')
      expectKafkaError(() => decompress(CompressionType.LZ4, frame, payload.length - 1), ErrorCode.INVALID_RECORD)
      // Declares 1 TiB.
      const lying = Buffer.from(frame)
      lying.writeUInt32LE(256, 10)
      expect(expectKafkaError(() => decompress(CompressionType.LZ4, lying, 16 * MiB), ErrorCode.INVALID_RECORD).message).toMatch(/declares/)
    })

    it('stops a 1 GiB lz4 bomb at the limit without allocating it', () => {
      // One 4 MiB frame of zeros, whose ~64 KiB blocks are repeated to claim 1 GiB (no content size).
      const one = compressFrameSync(Buffer.alloc(4 * MiB))
      const blocks = one.subarray(7, one.length - 4) // after magic+FLG+BD+HC, before EndMark
      const bomb = Buffer.concat([one.subarray(0, 7), ...Array.from({ length: 256 }, () => blocks), Buffer.alloc(4)])
      expect(bomb.length).toBeLessThan(8 * MiB)
      const growth = rssGrowthMiB(() => {
        expectKafkaError(() => decompress(CompressionType.LZ4, bomb, 16 * MiB), ErrorCode.INVALID_RECORD)
      })
      expect(growth).toBeLessThan(100)
    })
  })

  it('stops a 1 GiB gzip bomb (16 members of 64 MiB zeros, ~1 MiB) at the limit', () => {
    const member = gzipSync(Buffer.alloc(64 * MiB), { level: 9 })
    const bomb = Buffer.concat(Array.from({ length: 16 }, () => member))
    expect(bomb.length).toBeLessThan(2 * MiB)
    const growth = rssGrowthMiB(() => {
      expect(expectKafkaError(() => decompress(CompressionType.GZIP, bomb, 16 * MiB), ErrorCode.INVALID_RECORD).message).toMatch(/past the limit/)
    })
    expect(growth).toBeLessThan(100)
    // Not gzip at all (a raw deflate stream).
    expectKafkaError(() => decompress(CompressionType.GZIP, deflateRawSync(Buffer.from('abc')), 100), ErrorCode.INVALID_RECORD)
  })

  it('stops a 1 GiB zstd bomb (streamed, no content size) and refuses a declared size over the limit', () => {
    const binding = require('zstd-napi/binding')
    const cctx = new binding.CCtx()
    cctx.setParameter(binding.CParameter.compressionLevel, 1)
    const zeros = Buffer.alloc(MiB)
    const out = Buffer.alloc(binding.cStreamOutSize())
    const parts: Buffer[] = []
    for (let i = 0; i < 1024; i++) {
      let src = zeros
      const end = i === 1023
      for (;;) {
        const [remaining, written, consumed] = cctx.compressStream2(out, src, end ? binding.EndDirective.end : binding.EndDirective.continue)
        parts.push(Buffer.from(out.subarray(0, written)))
        src = src.subarray(consumed)
        if (src.length === 0 && (!end || remaining === 0)) break
      }
    }
    const bomb = Buffer.concat(parts)
    expect(bomb.length).toBeLessThan(MiB)
    expect(binding.getFrameContentSize(bomb)).toBeNull()
    const growth = rssGrowthMiB(() => {
      expect(expectKafkaError(() => decompress(CompressionType.ZSTD, bomb, 16 * MiB), ErrorCode.INVALID_RECORD).message).toMatch(/past the limit/)
    })
    expect(growth).toBeLessThan(100)
    // One-shot compression records the content size: refused before decoding.
    const declared = compress(CompressionType.ZSTD, Buffer.alloc(32 * MiB))
    expect(expectKafkaError(() => decompress(CompressionType.ZSTD, declared, 16 * MiB), ErrorCode.INVALID_RECORD).message).toMatch(/declares/)
    // The decoder is still usable after those failures, on declared-size and streamed frames.
    const data = jsonEvents(3000)
    expect(decompress(CompressionType.ZSTD, compress(CompressionType.ZSTD, data), data.length).equals(data)).toBe(true)
    const streamed: Buffer[] = []
    for (let pos = 0; pos < data.length; pos += 10_000) {
      const end = pos + 10_000 >= data.length
      let src = data.subarray(pos, pos + 10_000)
      for (;;) {
        const [remaining, written, consumed] = cctx.compressStream2(out, src, end ? binding.EndDirective.end : binding.EndDirective.continue)
        streamed.push(Buffer.from(out.subarray(0, written)))
        src = src.subarray(consumed)
        if (src.length === 0 && (!end || remaining === 0)) break
      }
    }
    const frame = Buffer.concat(streamed)
    expect(binding.getFrameContentSize(frame)).toBeNull()
    expect(decompress(CompressionType.ZSTD, frame, data.length).equals(data)).toBe(true)
    expectKafkaError(() => decompress(CompressionType.ZSTD, frame, data.length - 1), ErrorCode.INVALID_RECORD)
    expectKafkaError(() => decompress(CompressionType.ZSTD, frame.subarray(0, frame.length - 3), data.length), ErrorCode.INVALID_RECORD)
  })
})

describe('inflateBatch / deflateBatch', () => {
  const records = [
    { key: Buffer.from('k1'), value: Buffer.from('v1'), timestamp: 1_700_000_000_000, headers: [{ key: 'h', value: Buffer.from('x') }, { key: 'n', value: null }] },
    { key: null, value: null, timestamp: 1_700_000_000_005 },
    { key: Buffer.from('k3'), value: jsonEvents(50), timestamp: 1_699_999_999_000 },
  ]
  const plain = buildRecordBatch(records, native.crc32c, { producerId: 42, producerEpoch: 3, baseSequence: 7, transactional: true, partitionLeaderEpoch: 5 })

  it('decodes an uncompressed batch: header fields and records relative to it', () => {
    const b = inflateBatch(plain, MiB)
    expect(b.compression).toBe(0)
    expect(b.sizeInBytes).toBe(plain.length)
    expect(b.header).toEqual({
      baseOffset: 0, partitionLeaderEpoch: 5, attributes: 0x10, lastOffsetDelta: 2, baseTimestamp: 1_700_000_000_000,
      maxTimestamp: 1_700_000_000_005, producerId: 42, producerEpoch: 3, baseSequence: 7, recordCount: 3,
    })
    expect(b.records.map((r) => [r.offsetDelta, r.timestampDelta, r.key?.toString() ?? null])).toEqual([[0, 0, 'k1'], [1, 5, null], [2, -1000, 'k3']])
    expect(b.records[0]!.headers).toEqual([{ key: Buffer.from('h'), value: Buffer.from('x') }, { key: Buffer.from('n'), value: null }])
    expect(b.records[2]!.value!.equals(records[2]!.value!)).toBe(true)
  })

  it('deflates to every codec and back; codec 0 reproduces the builder byte for byte', () => {
    const inflated = inflateBatch(plain, MiB)
    for (const codec of CODECS) {
      const out = deflateBatch(inflated.header, inflated.records, codec)
      expect(out.readInt16BE(ATTRIBUTES_OFFSET) & COMPRESSION_MASK).toBe(codec)
      expect(out.readUInt32BE(CRC_OFFSET)).toBe(native.crc32c(out.subarray(ATTRIBUTES_OFFSET)))
      const back = inflateBatch(out, MiB)
      expect(back.compression).toBe(codec)
      expect(back.records).toEqual(inflated.records)
      expect({ ...back.header, attributes: back.header.attributes & ~COMPRESSION_MASK }).toEqual(inflated.header)
      if (codec === 0) expect(out.equals(plain)).toBe(true)
      // The test harness's independent decoder (CRC check and per-codec inflate) agrees.
      const [decoded] = decodeBatches(out)
      expect(decoded!.records.map((r) => r.value)).toEqual(records.map((r) => r.value))
    }
  })

  it('keeps offset gaps, a given lastOffsetDelta and maxTimestamp (what the cleaner needs)', () => {
    const inflated = inflateBatch(plain, MiB)
    const kept: InflatedRecord[] = [inflated.records[0]!, inflated.records[2]!]
    const out = deflateBatch({ ...inflated.header, lastOffsetDelta: 5, maxTimestamp: undefined }, kept, CompressionType.ZSTD)
    const back = inflateBatch(out, MiB)
    expect(back.header.recordCount).toBe(2)
    expect(back.header.lastOffsetDelta).toBe(5)
    expect(back.records.map((r) => r.offsetDelta)).toEqual([0, 2])
    expect(back.header.maxTimestamp).toBe(1_700_000_000_000)
    const empty = deflateBatch({ ...inflated.header, lastOffsetDelta: 2, maxTimestamp: undefined }, [], CompressionType.NONE)
    expect(inflateBatch(empty, MiB).header).toMatchObject({ recordCount: 0, lastOffsetDelta: 2, maxTimestamp: -1 })
    // LogAppendTime batches must say their maxTimestamp.
    expect(() => deflateBatch({ ...inflated.header, attributes: 0x08, maxTimestamp: undefined }, kept, 0)).toThrow(RangeError)
    const lat = deflateBatch({ ...inflated.header, attributes: 0x08, maxTimestamp: 123 }, kept, 0)
    expect(inflateBatch(lat, MiB).header.maxTimestamp).toBe(123)
  })

  it('bounds the decompressed records by maxRecordBytes', () => {
    const inflated = inflateBatch(plain, MiB)
    const gz = deflateBatch(inflated.header, inflated.records, CompressionType.GZIP)
    const size = plain.length - 61 // the records section
    expect(inflateBatch(gz, size).records.length).toBe(3)
    expectKafkaError(() => inflateBatch(gz, size - 1), ErrorCode.INVALID_RECORD)
    expect(decodedSizeLimit(1048588)).toBe(16 * MiB)
    expect(decodedSizeLimit(10 * MiB)).toBe(40 * MiB)
    expect(decodedSizeLimit(2 ** 31 - 1)).toBe(512 * MiB)
  })

  it('rejects malformed records with INVALID_RECORD', () => {
    // recordCount larger than the records present, and a count no bytes could hold.
    const more = Buffer.from(plain)
    more.writeInt32BE(4, 57)
    expectKafkaError(() => inflateBatch(more, MiB), ErrorCode.INVALID_RECORD)
    more.writeInt32BE(0x7fffffff, 57)
    expectKafkaError(() => inflateBatch(more, MiB), ErrorCode.INVALID_RECORD)
    // Fewer: trailing bytes after the declared records.
    const fewer = Buffer.from(plain)
    fewer.writeInt32BE(2, 57)
    expectKafkaError(() => inflateBatch(fewer, MiB), ErrorCode.INVALID_RECORD)
    // A record length that disagrees with its fields.
    const badLen = Buffer.from(plain)
    badLen[61] = badLen[61]! + 2
    expectKafkaError(() => inflateBatch(badLen, MiB), ErrorCode.INVALID_RECORD)
    // Compressed garbage.
    const inflated = inflateBatch(plain, MiB)
    const lz = deflateBatch(inflated.header, inflated.records, CompressionType.LZ4)
    lz.fill(0x55, 70, 90)
    expectKafkaError(() => inflateBatch(lz, MiB), ErrorCode.INVALID_RECORD)
    // Truncated batch and an unknown codec.
    expectKafkaError(() => inflateBatch(plain.subarray(0, plain.length - 1), MiB), ErrorCode.INVALID_RECORD)
    const codec7 = Buffer.from(plain)
    codec7.writeInt16BE(7, ATTRIBUTES_OFFSET)
    expectKafkaError(() => inflateBatch(codec7, MiB), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
  })

  it('survives random corruption of compressed batches without throwing anything but KafkaError', () => {
    const inflated = inflateBatch(plain, MiB)
    for (const codec of CODECS.slice(1)) {
      const good = deflateBatch(inflated.header, inflated.records, codec)
      for (let i = 0; i < 200; i++) {
        const bad = Buffer.from(good)
        const n = 1 + (i % 4)
        for (let j = 0; j < n; j++) bad[61 + Math.floor(Math.random() * (bad.length - 61))] = Math.floor(Math.random() * 256)
        try {
          inflateBatch(bad, MiB)
        } catch (err) {
          expect(err, `codec ${codec}: ${(err as Error).message}`).toBeInstanceOf(KafkaError)
        }
      }
    }
  })
})
