// The validation benchmark's produce load (bench/lib/produce-load.ts) and batches
// (bench/lib/validation-batches.ts) against an in-process broker: the load counts only what the broker
// acknowledged and stored, and a refused batch fails the run with Kafka's error instead of being measured.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CompressionType } from '../../src/protocol/records/batch.js'
import { benchOnlySkipRecordWalk } from '../../src/protocol/records/validate.js'
import { ProduceLoad } from '../../bench/lib/produce-load.js'
import { producerBatch, RECORDS_PER_BATCH, trailingBytesBatch } from '../../bench/lib/validation-batches.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'
import { RawClient } from '../harness/raw-client.js'

describe('validation bench produce load', () => {
  let tb: TestBroker
  let admin: RawClient

  beforeAll(async () => {
    tb = await startTestBroker(['io.threads=0'])
    admin = await RawClient.connect('127.0.0.1', tb.port)
    expect((await admin.createTopic('load', 3)).errorCode).toBe(0)
    expect((await admin.createTopic('refused', 1)).errorCode).toBe(0)
  })

  afterAll(async () => {
    admin?.close()
    await tb?.stop()
  })

  it('counts acknowledged records, and the broker stored exactly those', async () => {
    const batch = producerBatch(CompressionType.LZ4)
    const load = await ProduceLoad.open({ port: tb.port, topic: 'load', partitions: 3, batch, recordsPerBatch: RECORDS_PER_BATCH, connections: 2, inFlight: 4 })
    try {
      let samples = 0
      const { window, before, after } = await load.run(50, 300, () => ++samples)
      expect([before, after]).toEqual([1, 2])
      expect(window.records).toBeGreaterThan(0)
      // Whole requests only: every response acknowledges one batch on each of the 3 partitions.
      expect(window.records % (3 * RECORDS_PER_BATCH)).toBe(0)
      expect(window.seconds).toBeGreaterThanOrEqual(0.29)
      expect(load.ackedRecords).toBeGreaterThanOrEqual(window.records)
      // A second run on the same connections continues from where the first stopped.
      await load.run(0, 100, () => 0)
      let stored = 0n
      for (let p = 0; p < 3; p++) stored += (await admin.listOffset('load', p, -1n)).offset
      expect(stored).toBe(BigInt(load.ackedRecords))
    } finally {
      load.close()
    }
  })

  it('fails the run with the error name when the broker refuses a batch', async () => {
    const load = await ProduceLoad.open({ port: tb.port, topic: 'refused', partitions: 1, batch: trailingBytesBatch(), recordsPerBatch: 1, connections: 1, inFlight: 2 })
    try {
      await expect(load.run(0, 200, () => 0)).rejects.toThrow(/refused-0 answered CORRUPT_MESSAGE \(2\)/)
      expect(load.ackedRecords).toBe(0)
      expect((await admin.listOffset('refused', 0, -1n)).offset).toBe(0n)
    } finally {
      load.close()
    }
  })

  it('the probe batch is refused by the record walk alone, so it tells the two variants apart', async () => {
    expect((await admin.createTopic('probe', 1)).errorCode).toBe(0)
    expect((await admin.produce('probe', 0, trailingBytesBatch(), 1)).errorCode).toBe(2) // CORRUPT_MESSAGE
    // io.threads=0: the partitions run in this process, where the bench-only switch is.
    benchOnlySkipRecordWalk(true)
    try {
      expect((await admin.produce('probe', 0, trailingBytesBatch(), 1)).errorCode).toBe(0)
    } finally {
      benchOnlySkipRecordWalk(false)
    }
    expect((await admin.listOffset('probe', 0, -1n)).offset).toBe(1n)
  })

  it('fails the run when a request names a partition the topic does not have', async () => {
    const load = await ProduceLoad.open({ port: tb.port, topic: 'load', partitions: 4, batch: producerBatch(CompressionType.NONE), recordsPerBatch: RECORDS_PER_BATCH, connections: 1, inFlight: 1 })
    try {
      await expect(load.run(0, 200, () => 0)).rejects.toThrow(/load-3 answered UNKNOWN_TOPIC_OR_PARTITION/)
    } finally {
      load.close()
    }
  })
})
