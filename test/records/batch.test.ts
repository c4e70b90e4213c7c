import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import {
  BatchHeaderView,
  CRC_OFFSET,
  assignOffsetsInPlace,
  buildRecordBatch,
  checkBatchIntegrity,
  decodeRecords,
  iterateBatches,
  readInt64,
  validateProducerBatches,
  writeInt64,
} from '../../src/protocol/records/index.js'
import type { BatchValidationPolicy } from '../../src/protocol/records/index.js'

const crc = native.crc32c
const NOW = 1_700_000_000_000
const policy: BatchValidationPolicy = {
  maxMessageBytes: 1_000_000,
  timestampType: 'CreateTime',
  timestampBeforeMaxMs: 2 ** 63,
  timestampAfterMaxMs: 2 ** 63,
  now: NOW,
}

function batch(n = 3, opts: Parameters<typeof buildRecordBatch>[2] = {}): Buffer {
  const records = Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`value-${i}`), timestamp: NOW + i }))
  return buildRecordBatch(records, crc, opts)
}

/** Rewrites a header field and fixes the CRC, so only the rule under test fails. */
function patch(buf: Buffer, fn: (b: Buffer) => void): Buffer {
  fn(buf)
  buf.writeUInt32BE(crc(buf.subarray(21)), CRC_OFFSET)
  return buf
}

function codeOf(fn: () => unknown): number {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KafkaError)
    return (err as KafkaError).code
  }
  throw new Error('expected a KafkaError')
}

describe('RecordBatch v2 header', () => {
  it('builds a batch whose header view and records decode back', () => {
    const b = batch(3, { producerId: 42, producerEpoch: 7, baseSequence: 5 })
    const v = new BatchHeaderView(b, 0)
    expect(v.magic).toBe(2)
    expect(v.sizeInBytes).toBe(b.length)
    expect(v.recordCount).toBe(3)
    expect(v.lastOffsetDelta).toBe(2)
    expect(v.baseTimestamp).toBe(NOW)
    expect(v.maxTimestamp).toBe(NOW + 2)
    expect(v.producerId).toBe(42)
    expect(v.producerEpoch).toBe(7)
    expect(v.baseSequence).toBe(5)
    expect(v.crc).toBe(v.computeCrc(crc))
    const records = decodeRecords(b)
    expect(records.map((r) => r.value?.toString())).toEqual(['value-0', 'value-1', 'value-2'])
    expect(records.map((r) => r.timestamp)).toEqual([NOW, NOW + 1, NOW + 2])
    expect(checkBatchIntegrity(b, 0, b.length, crc)).toBeNull()
  })

  it('round-trips int64 values including -1 and large offsets', () => {
    const b = Buffer.alloc(8)
    for (const v of [0, -1, 1, 2 ** 32, 2 ** 40 + 12345, Number.MAX_SAFE_INTEGER, -(2 ** 35)]) {
      writeInt64(b, 0, v)
      expect(readInt64(b, 0)).toBe(v)
      expect(b.readBigInt64BE(0)).toBe(BigInt(v))
    }
  })

  it('iterates several batches back to back and stops at a partial tail', () => {
    const payload = Buffer.concat([batch(1), batch(2), batch(3)])
    const seen = [...iterateBatches(payload)].map((b) => b.recordCount)
    expect(seen).toEqual([1, 2, 3])
    const torn = payload.subarray(0, payload.length - 5)
    expect([...iterateBatches(torn)].map((b) => b.recordCount)).toEqual([1, 2])
  })
})

describe('validateProducerBatches', () => {
  it('accepts several batches and reports their positions', () => {
    const a = batch(2)
    const b = batch(5)
    const out = validateProducerBatches(Buffer.concat([a, b]), policy, crc)
    expect(out).toEqual([
      { position: 0, size: a.length, recordCount: 2, maxTimestamp: NOW + 1 },
      { position: a.length, size: b.length, recordCount: 5, maxTimestamp: NOW + 4 },
    ])
  })

  it('rejects an empty payload with INVALID_RECORD', () => {
    expect(codeOf(() => validateProducerBatches(Buffer.alloc(0), policy, crc))).toBe(ErrorCode.INVALID_RECORD)
  })

  it('rejects magic 0 and 1 with INVALID_RECORD, other magic with CORRUPT_MESSAGE', () => {
    for (const magic of [0, 1]) {
      const b = batch()
      b.writeInt8(magic, 16)
      expect(codeOf(() => validateProducerBatches(b, policy, crc))).toBe(ErrorCode.INVALID_RECORD)
    }
    for (const magic of [3, -1, 99]) {
      const b = batch()
      b.writeInt8(magic, 16)
      expect(codeOf(() => validateProducerBatches(b, policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
    }
  })

  it('rejects trailing partial bytes, short headers and lengths out of range with CORRUPT_MESSAGE', () => {
    const full = batch()
    expect(codeOf(() => validateProducerBatches(Buffer.concat([full, full.subarray(0, 30)]), policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect(codeOf(() => validateProducerBatches(Buffer.concat([full, Buffer.alloc(3)]), policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect(codeOf(() => validateProducerBatches(full.subarray(0, full.length - 1), policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
    const short = Buffer.from(full)
    short.writeInt32BE(48, 8)
    expect(codeOf(() => validateProducerBatches(short, policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
    const negative = Buffer.from(full)
    negative.writeInt32BE(-5, 8)
    expect(codeOf(() => validateProducerBatches(negative, policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
    const huge = Buffer.from(full)
    huge.writeInt32BE(0x7fffffff, 8)
    expect(codeOf(() => validateProducerBatches(huge, policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
  })

  it('rejects a CRC mismatch with CORRUPT_MESSAGE', () => {
    const b = batch()
    b[b.length - 1]! ^= 0xff
    expect(codeOf(() => validateProducerBatches(b, policy, crc))).toBe(ErrorCode.CORRUPT_MESSAGE)
  })

  it('rejects bad record counts and offset deltas with INVALID_RECORD', () => {
    expect(codeOf(() => validateProducerBatches(patch(batch(3), (b) => b.writeInt32BE(5, 23)), policy, crc))).toBe(ErrorCode.INVALID_RECORD)
    expect(codeOf(() => validateProducerBatches(patch(batch(3), (b) => b.writeInt32BE(-1, 57)), policy, crc))).toBe(ErrorCode.INVALID_RECORD)
    const empty = buildRecordBatch([], crc, { baseTimestamp: NOW })
    expect(codeOf(() => validateProducerBatches(empty, policy, crc))).toBe(ErrorCode.INVALID_RECORD)
    // A tiny uncompressed batch cannot hold two billion records.
    const liar = patch(batch(1), (b) => {
      b.writeInt32BE(2_000_000_000, 57)
      b.writeInt32BE(1_999_999_999, 23)
    })
    expect(codeOf(() => validateProducerBatches(liar, policy, crc))).toBe(ErrorCode.INVALID_RECORD)
  })

  it('rejects control batches from producers with INVALID_RECORD', () => {
    expect(codeOf(() => validateProducerBatches(batch(1, { control: true }), policy, crc))).toBe(ErrorCode.INVALID_RECORD)
  })

  it('rejects an unknown compression codec', () => {
    const b = patch(batch(), (x) => x.writeInt16BE(6, 21))
    expect(codeOf(() => validateProducerBatches(b, policy, crc))).toBe(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
  })

  it('compares each batch to max.message.bytes (MESSAGE_TOO_LARGE)', () => {
    const b = batch(3)
    expect(codeOf(() => validateProducerBatches(b, { ...policy, maxMessageBytes: b.length - 1 }, crc))).toBe(ErrorCode.MESSAGE_TOO_LARGE)
    expect(validateProducerBatches(Buffer.concat([b, batch(3)]), { ...policy, maxMessageBytes: b.length }, crc)).toHaveLength(2)
  })

  it('checks timestamps (INVALID_TIMESTAMP)', () => {
    const backwards = patch(batch(3), (b) => writeInt64(b, 35, NOW - 1))
    expect(codeOf(() => validateProducerBatches(backwards, policy, crc))).toBe(ErrorCode.INVALID_TIMESTAMP)
    const negative = patch(batch(3), (b) => writeInt64(b, 27, -7))
    expect(codeOf(() => validateProducerBatches(negative, policy, crc))).toBe(ErrorCode.INVALID_TIMESTAMP)
    const future = { ...policy, timestampAfterMaxMs: 1 }
    expect(codeOf(() => validateProducerBatches(batch(3), future, crc))).toBe(ErrorCode.INVALID_TIMESTAMP)
    const past = { ...policy, now: NOW + 10_000, timestampBeforeMaxMs: 5_000 }
    expect(codeOf(() => validateProducerBatches(batch(3), past, crc))).toBe(ErrorCode.INVALID_TIMESTAMP)
    // LogAppendTime topics ignore producer timestamps' distance from now.
    expect(validateProducerBatches(batch(3), { ...past, timestampType: 'LogAppendTime' }, crc)).toHaveLength(1)
    // No timestamps at all (-1) is legal.
    const none = buildRecordBatch([{ value: Buffer.from('x') }], crc, { baseTimestamp: -1 })
    expect(validateProducerBatches(none, { ...policy, timestampAfterMaxMs: 0, timestampBeforeMaxMs: 0 }, crc)).toHaveLength(1)
  })

  it('does not modify the payload', () => {
    const b = batch(4)
    const copy = Buffer.from(b)
    validateProducerBatches(b, policy, crc)
    expect(b.equals(copy)).toBe(true)
  })
})

describe('assignOffsetsInPlace', () => {
  it('rewrites base offsets and leader epoch without touching the CRC', () => {
    const payload = Buffer.concat([batch(2), batch(3)])
    const batches = validateProducerBatches(payload, policy, crc)
    const crcs = batches.map((b) => payload.readUInt32BE(b.position + CRC_OFFSET))
    const out = assignOffsetsInPlace(payload, batches, 2 ** 33, 9, -1, crc)
    expect(out).toEqual({ baseOffset: 2 ** 33, lastOffset: 2 ** 33 + 4, maxTimestamps: [NOW + 1, NOW + 2] })
    const views = batches.map((b) => new BatchHeaderView(payload, b.position))
    expect(views.map((v) => v.baseOffset)).toEqual([2 ** 33, 2 ** 33 + 2])
    expect(views.map((v) => v.lastOffset)).toEqual([2 ** 33 + 1, 2 ** 33 + 4])
    expect(views.map((v) => v.partitionLeaderEpoch)).toEqual([9, 9])
    expect(views.map((v) => v.crc)).toEqual(crcs)
    for (const v of views) expect(v.computeCrc(crc)).toBe(v.crc)
    expect(decodeRecords(payload, batches[1]!.position).map((r) => r.offset)).toEqual([2 ** 33 + 2, 2 ** 33 + 3, 2 ** 33 + 4])
  })

  it('sets LogAppendTime and recomputes the CRC', () => {
    const payload = batch(3)
    const batches = validateProducerBatches(payload, policy, crc)
    const out = assignOffsetsInPlace(payload, batches, 10, 1, NOW + 500, crc)
    const v = new BatchHeaderView(payload, 0)
    expect(v.isLogAppendTime).toBe(true)
    expect(v.maxTimestamp).toBe(NOW + 500)
    expect(out.maxTimestamps).toEqual([NOW + 500])
    expect(v.computeCrc(crc)).toBe(v.crc)
    expect(checkBatchIntegrity(payload, 0, payload.length, crc)).toBeNull()
    expect(validateProducerBatches(payload, policy, crc)).toHaveLength(1)
  })
})

describe('checkBatchIntegrity', () => {
  it('names what is wrong with a stored batch', () => {
    const b = batch(2)
    expect(checkBatchIntegrity(b, 0, 40, crc)).toBe('truncated-header')
    expect(checkBatchIntegrity(b, 0, b.length - 1, crc)).toBe('truncated-batch')
    const badLen = Buffer.from(b)
    badLen.writeInt32BE(10, 8)
    expect(checkBatchIntegrity(badLen, 0, badLen.length, crc)).toBe('bad-length')
    const badMagic = Buffer.from(b)
    badMagic.writeInt8(1, 16)
    expect(checkBatchIntegrity(badMagic, 0, badMagic.length, crc)).toBe('bad-magic')
    const badCrc = Buffer.from(b)
    badCrc[70]! ^= 1
    expect(checkBatchIntegrity(badCrc, 0, badCrc.length, crc)).toBe('bad-crc')
  })
})
