// Produce v8-v11 over raw frames: record errors (KIP-467) name the records that made the broker refuse a
// batch, with Kafka's messages; the batch is refused whole and nothing of it is written. v9 is flexible,
// v10-11 (KIP-951) carry the current leader with NOT_LEADER_OR_FOLLOWER (see handler-ports.test.ts for
// that case, which one broker cannot produce on demand).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { inflateBatch, deflateBatch } from '../../src/protocol/records/inflate.js'
import { batchOf, crc32c, decodeAllRecords, RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

const HOUR = 3_600_000

describe('Produce v8-v11', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    tb = await startTestBroker()
    raw = await RawClient.connect(tb.host, tb.port)
    expect((await raw.createTopic('compacted', 1, { 'cleanup.policy': 'compact' })).errorCode).toBe(0)
    expect((await raw.createTopic('strict-time', 1, { 'message.timestamp.after.max.ms': '60000', 'message.timestamp.before.max.ms': '60000' })).errorCode).toBe(0)
    expect((await raw.createTopic('plain', 1)).errorCode).toBe(0)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  const keyed = (i: number): { key: Buffer; value: Buffer } => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`) })
  const keyless = (i: number): { key: null; value: Buffer } => ({ key: null, value: Buffer.from(`v${i}`) })

  async function logEnd(topic: string): Promise<bigint> {
    return (await raw.listOffset(topic, 0, -1n)).offset
  }

  it('advertises Produce 0-11', async () => {
    const res = await raw.apiVersions()
    expect(res.apiKeys.find((k) => k.apiKey === 0)).toMatchObject({ minVersion: 0, maxVersion: 11 })
  })

  it('keyless records on a compacted topic: INVALID_RECORD with one record error each, nothing written', async () => {
    const batch = batchOf([keyed(0), keyless(1), keyed(2), keyless(3), keyless(4), keyless(5)])
    const tp = 'compacted-0'
    const msg = `Compacted topic cannot accept message without key in topic partition ${tp}`
    for (const v of [8, 9, 10, 11]) {
      const res = await raw.produce('compacted', 0, Buffer.from(batch), 1, v)
      expect(res.errorCode).toBe(ErrorCode.INVALID_RECORD)
      expect(res.recordErrors.map((e) => [e.batchIndex, e.batchIndexErrorMessage])).toEqual([[1, msg], [3, msg], [4, msg], [5, msg]])
      expect(res.errorMessage).toBe(
        'One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: ' +
          `[RecordError(batchIndex=1, message='${msg}'), RecordError(batchIndex=3, message='${msg}'), RecordError(batchIndex=4, message='${msg}')]`,
      )
      expect(res.baseOffset).toBe(-1n)
    }
    // v7 has no record errors: the code alone.
    const v7 = await raw.produce('compacted', 0, Buffer.from(batch), 1, 7)
    expect(v7.errorCode).toBe(ErrorCode.INVALID_RECORD)
    expect(v7.recordErrors).toEqual([])
    expect(await logEnd('compacted')).toBe(0n)

    // The same records gzip-compressed are decoded and answered the same way.
    const inflated = inflateBatch(batch, 1 << 20)
    const gz = deflateBatch(inflated.header, inflated.records, 1, crc32c)
    const res = await raw.produce('compacted', 0, gz, 1, 9)
    expect(res.errorCode).toBe(ErrorCode.INVALID_RECORD)
    expect(res.recordErrors.map((e) => e.batchIndex)).toEqual([1, 3, 4, 5])
    expect(await logEnd('compacted')).toBe(0n)

    // All keyed: written.
    const ok = await raw.produce('compacted', 0, batchOf([keyed(0), keyed(1)]), 1, 11)
    expect(ok).toMatchObject({ errorCode: 0, baseOffset: 0n, recordErrors: [], errorMessage: null })
  })

  it('records with timestamps out of range: INVALID_TIMESTAMP with the records named', async () => {
    const now = Date.now()
    const batch = batchOf([
      { value: Buffer.from('a'), timestamp: now },
      { value: Buffer.from('b'), timestamp: now + 2 * HOUR },
      { value: Buffer.from('c'), timestamp: now + 1000 },
      { value: Buffer.from('d'), timestamp: now + 3 * HOUR },
    ])
    const res = await raw.produce('strict-time', 0, batch, 1, 8)
    expect(res.errorCode).toBe(ErrorCode.INVALID_TIMESTAMP)
    expect(res.errorMessage).toBe('One or more records have been rejected due to invalid timestamp')
    expect(res.recordErrors.map((e) => e.batchIndex)).toEqual([1, 3])
    const m = /^Timestamp (\d+) of message with offset 1 is out of range\. The timestamp should be within \[(\d+), (\d+)\]$/.exec(res.recordErrors[0]!.batchIndexErrorMessage ?? '')
    expect(m).not.toBeNull()
    expect(Number(m![1])).toBe(now + 2 * HOUR)
    expect(Number(m![3]) - Number(m![2])).toBe(120_000)
    expect(await logEnd('strict-time')).toBe(0n)
  })

  it('v9-v11 (flexible) write and answer as v8 does', async () => {
    let expected = 0n
    for (const v of [8, 9, 10, 11]) {
      const res = await raw.produce('plain', 0, batchOf([keyed(v), keyed(v + 100)]), 1, v)
      expect(res).toMatchObject({ errorCode: 0, baseOffset: expected, logStartOffset: 0n, errorMessage: null, recordErrors: [] })
      expect(res.currentLeader).toEqual({ leaderId: -1, leaderEpoch: -1 })
      expected += 2n
    }
    const fetched = await raw.fetch('plain', 0, 0)
    expect(decodeAllRecords(fetched.records as Buffer).map((r) => r.key?.toString())).toEqual(['k8', 'k108', 'k9', 'k109', 'k10', 'k110', 'k11', 'k111'])
    // An unknown partition at v10+: the code, and no leader to point at.
    const unknown = await raw.produce('plain', 7, batchOf([keyed(0)]), 1, 11)
    expect(unknown.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect(unknown.currentLeader).toEqual({ leaderId: -1, leaderEpoch: -1 })
  })

  it('v11 acks=0 writes without an answer', async () => {
    const before = await logEnd('plain')
    await raw.produceNoAck('plain', 0, batchOf([keyed(1)]), 11)
    for (let i = 0; i < 50 && (await logEnd('plain')) === before; i++) await new Promise((r) => setTimeout(r, 20))
    expect(await logEnd('plain')).toBe(before + 1n)
    expect(Produce.ProduceApi.maxVersion).toBe(11)
  })
})
