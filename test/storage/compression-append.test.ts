// The append path with compression.type and compaction: batches whose codec differs from the topic's
// are rebuilt with it (records, producer fields and timestamps kept, offsets assigned), 'producer'
// stores the bytes as sent, and a compacted topic refuses records without a key. Bombs and lies inside
// compressed batches are INVALID_RECORD and write nothing.
import { gzipSync } from 'node:zlib'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { ATTRIBUTES_OFFSET, COMPRESSION_MASK, CRC_OFFSET, CompressionType, RECORD_BATCH_OVERHEAD } from '../../src/protocol/records/batch.js'
import { buildRecordBatch, type RecordInput } from '../../src/protocol/records/builder.js'
import { deflateBatch, inflateBatch } from '../../src/protocol/records/inflate.js'
import type { CompressionTypeConfig } from '../../src/storage/index.js'
import { decodeBatches } from '../harness/index.js'
import { T0, openManager, regionBytes, tempDir } from './helpers.js'

let dir: { path: string; cleanup: () => void }
beforeEach(() => {
  dir = tempDir()
})
afterEach(() => dir.cleanup())

const CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD] as const
const TYPE_OF_CODEC: CompressionTypeConfig[] = ['uncompressed', 'gzip', 'snappy', 'lz4', 'zstd']

function recordsOf(tag: string, n: number, keyed = true): RecordInput[] {
  return Array.from({ length: n }, (_, i) => ({
    key: keyed ? Buffer.from(`${tag}-key-${i % 5}`) : null,
    value: Buffer.from(JSON.stringify({ tag, i, body: 'x'.repeat(20 + i) })),
    timestamp: T0 + i * 10,
    headers: [{ key: 'trace', value: Buffer.from(`t${i}`) }],
  }))
}

/** A producer batch compressed with codec; with producerId, an idempotent producer's (epoch 1). */
function producerBatch(records: RecordInput[], codec: number, opts: { producerId?: number; baseSequence?: number } = {}): Buffer {
  const idempotent = opts.producerId !== undefined
  const plain = buildRecordBatch(records, native.crc32c, {
    producerId: opts.producerId ?? -1,
    producerEpoch: idempotent ? 1 : -1,
    baseSequence: idempotent ? opts.baseSequence ?? 0 : -1,
  })
  const inflated = inflateBatch(plain, 1 << 20)
  return deflateBatch(inflated.header, inflated.records, codec as CompressionType)
}

function stored(m: ReturnType<typeof openManager>, log: ReturnType<ReturnType<typeof openManager>['create']>): Buffer {
  const r = log.read(log.logStartOffset, 1 << 30)
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  return bytes
}

function appendError(fn: () => unknown): KafkaError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KafkaError)
    return err as KafkaError
  }
  throw new Error('append did not throw')
}

describe('compression.type on append', () => {
  for (const target of TYPE_OF_CODEC) {
    it(`stores every producer codec as ${target}, records intact`, async () => {
      const m = openManager(dir.path, { compressionType: target })
      const log = m.create('t', 0)
      const sent: RecordInput[][] = []
      const sequences: number[] = []
      let sequence = 0
      for (const codec of CODECS) {
        const recs = recordsOf(`c${codec}`, 3 + codec)
        sent.push(recs)
        sequences.push(sequence)
        const res = log.append(producerBatch(recs, codec, { producerId: 7, baseSequence: sequence }), { leaderEpoch: 2 })
        sequence += recs.length
        expect(res.recordCount).toBe(recs.length)
      }
      const batches = decodeBatches(stored(m, log))
      expect(batches.map((b) => b.compression)).toEqual(CODECS.map(() => (target === 'uncompressed' ? 'none' : target)))
      let offset = 0
      batches.forEach((b, i) => {
        expect(b.baseOffset).toBe(offset)
        expect(b.records.map((r) => [r.offset, r.key, r.value, r.timestamp, r.headers])).toEqual(
          sent[i]!.map((r, j) => [offset + j, r.key, r.value, r.timestamp, r.headers]),
        )
        offset += sent[i]!.length
      })
      // Producer fields survive the rebuild; offsets and leader epoch are the broker's.
      const raw = stored(m, log)
      let pos = 0
      for (let i = 0; i < CODECS.length; i++) {
        const h = inflateBatch(raw.subarray(pos), 1 << 24).header
        expect(h).toMatchObject({ producerId: 7, producerEpoch: 1, baseSequence: sequences[i], partitionLeaderEpoch: 2, recordCount: sent[i]!.length })
        expect(h.maxTimestamp).toBe(T0 + (sent[i]!.length - 1) * 10)
        pos += 12 + raw.readInt32BE(pos + 8)
      }
      expect(log.logEndOffset).toBe(offset)
      await m.close()
    })
  }

  it("'producer' stores the producer's bytes untouched (only offset and epoch rewritten)", async () => {
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    const batches = CODECS.map((c) => producerBatch(recordsOf(`p${c}`, 4), c))
    const copies = batches.map((b) => Buffer.from(b))
    for (const b of batches) log.append(b, { leaderEpoch: 0 })
    const raw = stored(m, log)
    let pos = 0
    copies.forEach((c) => {
      const got = raw.subarray(pos, pos + c.length)
      expect(got.subarray(16).equals(c.subarray(16))).toBe(true) // from magic on: identical, CRC included
      pos += c.length
    })
    expect(pos).toBe(raw.length)
    await m.close()
  })

  it('LogAppendTime with recompression: rebuilt batch stamped and its CRC valid', async () => {
    const m = openManager(dir.path, { compressionType: 'zstd', messageTimestampType: 'LogAppendTime' })
    const log = m.create('t', 0)
    const res = log.append(producerBatch(recordsOf('lat', 5), CompressionType.GZIP), { leaderEpoch: 0, now: T0 + 999 })
    expect(res.logAppendTime).toBe(T0 + 999)
    const raw = stored(m, log)
    expect(raw.readUInt32BE(CRC_OFFSET)).toBe(native.crc32c(raw.subarray(ATTRIBUTES_OFFSET)))
    const [b] = decodeBatches(raw)
    expect(b!.compression).toBe('zstd')
    expect(b!.logAppendTime).toBe(true)
    expect(b!.records.every((r) => r.timestamp === T0 + 999)).toBe(true)
    await m.close()
  })

  it('takes a config change to compression.type on the next append', async () => {
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    log.append(producerBatch(recordsOf('a', 2), CompressionType.NONE), { leaderEpoch: 0 })
    log.updateConfig({ compressionType: 'lz4' })
    log.append(producerBatch(recordsOf('b', 2), CompressionType.NONE), { leaderEpoch: 0 })
    expect(decodeBatches(stored(m, log)).map((b) => b.compression)).toEqual(['none', 'lz4'])
    await m.close()
  })

  it('answers MESSAGE_TOO_LARGE when the recompressed batch exceeds max.message.bytes', async () => {
    const m = openManager(dir.path, { compressionType: 'uncompressed', maxMessageBytes: 2000 })
    const log = m.create('t', 0)
    const recs = Array.from({ length: 50 }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.alloc(100, 0x61), timestamp: T0 }))
    const gz = producerBatch(recs, CompressionType.GZIP)
    expect(gz.length).toBeLessThan(2000)
    expect(appendError(() => log.append(gz, { leaderEpoch: 0 })).code).toBe(ErrorCode.MESSAGE_TOO_LARGE)
    expect(log.logEndOffset).toBe(0)
    await m.close()
  })

  it('rejects a compressed batch whose record count or offsets lie, and a gzip bomb, writing nothing', async () => {
    const m = openManager(dir.path, { compressionType: 'lz4' })
    const log = m.create('t', 0)
    // recordCount says 3, the records are 4 (header fields are CRC-covered: recompute it).
    const liar = producerBatch(recordsOf('x', 4), CompressionType.GZIP)
    liar.writeInt32BE(3, 57)
    liar.writeInt32BE(2, 23)
    liar.writeUInt32BE(native.crc32c(liar.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
    // Structure faults found by the record walk are CORRUPT_MESSAGE (issue 30).
    expect(appendError(() => log.append(liar, { leaderEpoch: 0 })).code).toBe(ErrorCode.CORRUPT_MESSAGE)
    // offsetDeltas 0, 2: not numbered from 0 consecutively.
    const plain = buildRecordBatch(recordsOf('y', 2), native.crc32c)
    const inflated = inflateBatch(plain, 1 << 20)
    inflated.records[1]!.offsetDelta = 2
    const gapped = deflateBatch({ ...inflated.header, lastOffsetDelta: 1 }, inflated.records, CompressionType.SNAPPY)
    expect(appendError(() => log.append(gapped, { leaderEpoch: 0 })).message).toMatch(/offsetDelta/)
    // A one-record batch whose gzip body inflates to 64 MiB of zeros (limit: 16 MiB for 1 MiB max.message.bytes).
    const bomb = Buffer.concat([plain.subarray(0, RECORD_BATCH_OVERHEAD), gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 })])
    bomb.writeInt32BE(bomb.length - 12, 8)
    bomb.writeInt16BE(CompressionType.GZIP, ATTRIBUTES_OFFSET)
    bomb.writeUInt32BE(native.crc32c(bomb.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
    const before = process.memoryUsage().rss
    // Zeros are no record (length 0): the walk stops at the first chunk.
    expect(appendError(() => log.append(bomb, { leaderEpoch: 0 })).message).toMatch(/past the limit|bad length/)
    expect((process.memoryUsage().rss - before) / 1024 / 1024).toBeLessThan(64)
    expect(log.logEndOffset).toBe(0)
    expect(stored(m, log).length).toBe(0)
    await m.close()
  })
})

describe('compacted topics', () => {
  for (const policy of ['compact', 'compact,delete'] as const) {
    it(`${policy}: keyless records are INVALID_RECORD, keyed ones are stored (any codec)`, async () => {
      const m = openManager(dir.path, { cleanupPolicy: policy })
      const log = m.create('t', 0)
      for (const codec of CODECS) {
        const mixed = recordsOf('m', 3)
        mixed[1] = { ...mixed[1]!, key: null }
        const err = appendError(() => log.append(producerBatch(mixed, codec), { leaderEpoch: 0 }))
        expect(err.code).toBe(ErrorCode.INVALID_RECORD)
        expect(err.message).toMatch(/without key in topic partition t-0/)
        log.append(producerBatch(recordsOf(`k${codec}`, 3), codec), { leaderEpoch: 0 })
      }
      const batches = decodeBatches(stored(m, log))
      // Keys were checked, codecs left as produced ('producer').
      expect(batches.map((b) => b.compression)).toEqual(['none', 'gzip', 'snappy', 'lz4', 'zstd'])
      expect(batches.flatMap((b) => b.records).every((r) => r.key !== null)).toBe(true)
      expect(log.logEndOffset).toBe(15)
      await m.close()
    })
  }

  it('a payload with one keyless batch among keyed ones writes nothing', async () => {
    const m = openManager(dir.path, { cleanupPolicy: 'compact', compressionType: 'zstd' })
    const log = m.create('t', 0)
    const payload = Buffer.concat([
      producerBatch(recordsOf('a', 2), CompressionType.NONE),
      producerBatch(recordsOf('b', 2, false), CompressionType.GZIP),
    ])
    expect(appendError(() => log.append(payload, { leaderEpoch: 0 })).code).toBe(ErrorCode.INVALID_RECORD)
    expect(log.logEndOffset).toBe(0)
    const ok = Buffer.concat([producerBatch(recordsOf('a', 2), CompressionType.NONE), producerBatch(recordsOf('b', 2), CompressionType.GZIP)])
    expect(log.append(ok, { leaderEpoch: 0 })).toMatchObject({ baseOffset: 0, lastOffset: 3 })
    const raw = stored(m, log)
    expect(decodeBatches(raw).map((b) => [b.baseOffset, b.compression])).toEqual([[0, 'zstd'], [2, 'zstd']])
    expect(raw.readInt16BE(ATTRIBUTES_OFFSET) & COMPRESSION_MASK).toBe(CompressionType.ZSTD)
    await m.close()
  })
})
