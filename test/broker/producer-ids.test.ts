// Producer id blocks (src/broker/producer-ids.ts): the first block is reserved when the broker starts, as
// Kafka's PIDManager does, so the first InitProducerId does not wait for the metadata store. Unit tests
// with a counting block source, and a real broker whose producer-id-block file is written at start-up.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ProducerIdManager } from '../../src/broker/producer-ids.js'
import { PRODUCER_ID_BLOCK_FILE } from '../../src/cluster/embedded-store.js'
import { startTestBroker } from '../harness/index.js'

describe('ProducerIdManager.reserveFirstBlock', () => {
  it('reserves one block ahead; the ids that follow come from it without asking the store again', async () => {
    const asked: number[] = []
    const ids = new ProducerIdManager(async (size) => {
      asked.push(size)
      return { firstProducerId: 3000, lastProducerId: 3000 + size - 1 }
    }, 10)
    await ids.reserveFirstBlock()
    expect(asked).toEqual([10])
    // A second call, once reserved, asks nothing.
    await ids.reserveFirstBlock()
    expect(await ids.nextProducerId()).toBe(3000)
    expect(await ids.nextProducerId()).toBe(3001)
    expect(asked).toEqual([10])
  })

  it('a refused reservation is reported and tried again by the first InitProducerId', async () => {
    let calls = 0
    const ids = new ProducerIdManager(async (size) => {
      if (++calls === 1) throw new Error('store not ready')
      return { firstProducerId: 0, lastProducerId: size - 1 }
    }, 5)
    await expect(ids.reserveFirstBlock()).rejects.toThrow(/cannot reserve producer ids: store not ready/)
    expect(await ids.initProducerId(null)).toEqual({ producerId: 0, producerEpoch: 0 })
    expect(calls).toBe(2)
  })
})

describe('a broker at start-up', () => {
  it('has reserved its first producer id block before any InitProducerId', async () => {
    const tb = await startTestBroker()
    try {
      const file = join(tb.dataDir, PRODUCER_ID_BLOCK_FILE)
      // The reservation runs in the background of the start: wait for it (bounded), nobody asked for an id.
      for (let i = 0; i < 600 && !existsSync(file); i++) await new Promise((r) => setTimeout(r, 50))
      expect(existsSync(file)).toBe(true)
      // The block handed out is the one the first producer gets.
      expect(readFileSync(file, 'utf8')).toMatch(/^\d+\n1000\n$/)
      expect(await tb.broker.producerIds.initProducerId(null)).toEqual({ producerId: 0, producerEpoch: 0 })
      expect(readFileSync(file, 'utf8')).toMatch(/^\d+\n1000\n$/)
    } finally {
      await tb.stop()
    }
  })
})
