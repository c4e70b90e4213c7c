// The append path against hostile producer batches (issue 30): the five batches that used to be
// stored and broke every consumer are CORRUPT_MESSAGE and write nothing (the bomb in bounded memory);
// good batches of every codec are stored byte for byte; records the header cannot tell about (a later
// record older than the first, a keyless record inside a compressed batch) are named as Kafka does.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError, RecordValidationError } from '../../src/domain/errors.js'
import { CompressionType, RECORD_BATCH_OVERHEAD } from '../../src/protocol/records/batch.js'
import { buildRecordBatch } from '../../src/protocol/records/builder.js'
import { compress } from '../../src/protocol/records/compression.js'
import { goodBatch, hostileBatches, withBody } from '../records/hostile-batches.js'
import { T0, openManager, regionBytes, tempDir } from './helpers.js'

let dir: { path: string; cleanup: () => void }
beforeEach(() => {
  dir = tempDir()
})
afterEach(() => dir.cleanup())

const CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD] as const

function appendError(fn: () => unknown): KafkaError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KafkaError)
    return err as KafkaError
  }
  throw new Error('append did not throw')
}

/** A batch of n keyed records stamped T0 + i, its records section compressed with codec. */
function batchOf(n: number, codec: number, tag = 'r'): Buffer {
  const plain = buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`${tag}${i}`), value: Buffer.from(`${tag}-value-${i}`.repeat(5)), timestamp: T0 + i })),
    native.crc32c,
  )
  return codec === 0 ? plain : withBody(plain, compress(codec, plain.subarray(RECORD_BATCH_OVERHEAD)), codec, n)
}

describe('produce validation on append', () => {
  const hostile = hostileBatches()
  for (const [name, batch] of Object.entries(hostile)) {
    it(`refuses ${name}: CORRUPT_MESSAGE, nothing stored`, async () => {
      const m = openManager(dir.path)
      const log = m.create('t', 0)
      log.append(goodBatch('before', T0), { leaderEpoch: 0 })
      const before = process.memoryUsage().rss
      const err = appendError(() => log.append(Buffer.from(batch), { leaderEpoch: 0, now: Date.now() }))
      expect(err.code).toBe(ErrorCode.CORRUPT_MESSAGE)
      expect((process.memoryUsage().rss - before) / 1024 / 1024).toBeLessThan(48)
      log.append(goodBatch('after', T0), { leaderEpoch: 0 })
      expect(log.logEndOffset).toBe(2)
      await m.close()
    })
  }

  it('stores good batches of every codec byte for byte (compression.type producer)', async () => {
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    const sent: Buffer[] = []
    for (const codec of CODECS) {
      const b = batchOf(20, codec)
      sent.push(Buffer.from(b))
      log.append(b, { leaderEpoch: 0 })
    }
    const r = log.read(0, 1 << 30)
    const stored = regionBytes(r)
    m.releaseLease(r.leaseId)
    let pos = 0
    for (const b of sent) {
      // Everything from the attributes on is the client's (offsets and epoch are assigned before it).
      expect(stored.subarray(pos + 21, pos + b.length).equals(b.subarray(21))).toBe(true)
      pos += b.length
    }
    expect(log.logEndOffset).toBe(100)
    await m.close()
  })

  it('names a later record older than message.timestamp.before.max.ms allows, though the header is in bounds', async () => {
    const m = openManager(dir.path, { messageTimestampBeforeMaxMs: 60_000 })
    const log = m.create('t', 0)
    for (const codec of CODECS) {
      const now = T0 + 10_000
      const plain = buildRecordBatch(
        [
          { key: Buffer.from('a'), value: Buffer.from('1'), timestamp: T0 },
          { key: Buffer.from('b'), value: Buffer.from('2'), timestamp: T0 - 3_600_000 },
        ],
        native.crc32c,
        { baseTimestamp: T0 },
      )
      const b = codec === 0 ? plain : withBody(plain, compress(codec, plain.subarray(RECORD_BATCH_OVERHEAD)), codec, 2)
      const err = appendError(() => log.append(b, { leaderEpoch: 0, now }))
      expect(err.code).toBe(ErrorCode.INVALID_TIMESTAMP)
      expect((err as RecordValidationError).recordErrors.map((e) => e.batchIndex)).toEqual([1])
    }
    expect(log.logEndOffset).toBe(0)
    await m.close()
  })

  it('refuses a keyless record inside a compressed batch on a compacted topic (INVALID_RECORD, named)', async () => {
    const m = openManager(dir.path, { cleanupPolicy: 'compact' })
    const log = m.create('t', 0)
    const plain = buildRecordBatch(
      [
        { key: Buffer.from('a'), value: Buffer.from('1'), timestamp: T0 },
        { key: null, value: Buffer.from('2'), timestamp: T0 },
      ],
      native.crc32c,
    )
    const b = withBody(plain, compress(CompressionType.ZSTD, plain.subarray(RECORD_BATCH_OVERHEAD)), CompressionType.ZSTD, 2)
    const err = appendError(() => log.append(b, { leaderEpoch: 0 }))
    expect(err.code).toBe(ErrorCode.INVALID_RECORD)
    expect((err as RecordValidationError).recordErrors).toEqual([{ batchIndex: 1, message: 'Compacted topic cannot accept message without key in topic partition t-0' }])
    expect(log.logEndOffset).toBe(0)
    await m.close()
  })

  it('refuses a compressed record set that decompresses to more than the records hold, however well it compresses', async () => {
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    const good = batchOf(3, CompressionType.NONE)
    const padded = Buffer.concat([good.subarray(RECORD_BATCH_OVERHEAD), Buffer.alloc(4096)])
    for (const codec of [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]) {
      const err = appendError(() => log.append(withBody(good, compress(codec, padded), codec, 3), { leaderEpoch: 0 }))
      expect(err.code).toBe(ErrorCode.CORRUPT_MESSAGE)
    }
    expect(log.logEndOffset).toBe(0)
    await m.close()
  })
})
