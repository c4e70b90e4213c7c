// murmur2 partitioning: Kafka's published Utils.murmur2 vectors (UtilsTest.testMurmur2), and where
// librdkafka (kcat -X partitioner=murmur2_random, Kafka's default partitioner) puts keys compared with
// where the Skein producer puts them, on a real broker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Consumer, Producer, murmur2, partitionForKey, toPositive } from '../../src/client/index.js'
import { hasKcat, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

describe('murmur2', () => {
  it('matches the values in Kafka UtilsTest.testMurmur2', () => {
    const cases: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ]
    for (const [key, expected] of cases) expect(murmur2(Buffer.from(key)), key).toBe(expected)
  })

  it('toPositive clears the sign bit rather than negating', () => {
    expect(toPositive(-1)).toBe(0x7fffffff)
    expect(toPositive(-2147483648)).toBe(0)
    expect(toPositive(5)).toBe(5)
    expect(partitionForKey(Buffer.from('21'), 7)).toBe((-973932308 & 0x7fffffff) % 7)
    expect(() => partitionForKey(Buffer.from('x'), 0)).toThrow(RangeError)
  })

  it('handles every tail length and empty keys', () => {
    // Values fixed by the reference vectors above cover lengths 2, 3, 6, 24, 26, 48 (tails 2, 3, 2, 0, 2, 0);
    // lengths with a tail of 1 must differ from their prefix.
    expect(murmur2(Buffer.from('a'))).not.toBe(murmur2(Buffer.alloc(0)))
    expect(Number.isInteger(murmur2(Buffer.from('abcde')))).toBe(true)
  })
})

describe.skipIf(!hasKcat())('keys land where librdkafka puts them', () => {
  let tb: TestBroker
  beforeAll(async () => {
    tb = await startTestBroker()
  })
  afterAll(async () => {
    await tb?.stop()
  })

  it('kcat (murmur2_random) and the Skein producer agree for 40 keys on 7 partitions', async () => {
    const { Admin } = await import('../../src/client/index.js')
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    await admin.createTopics([{ name: 'by-kcat', numPartitions: 7, replicationFactor: 1 }, { name: 'by-skein', numPartitions: 7, replicationFactor: 1 }])
    await admin.close()
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}-${'x'.repeat(i % 5)}`)
    await runOk('kcat', ['-b', tb.bootstrap, '-P', '-t', 'by-kcat', '-K', ':', '-X', 'partitioner=murmur2_random'], { input: keys.map((k) => `${k}:v`).join('\n') + '\n' })
    const producer = new Producer({ bootstrapServers: tb.bootstrap })
    const placed = new Map<string, number>()
    for (const k of keys) placed.set(k, (await producer.send({ topic: 'by-skein', key: k, value: 'v' })).partition)
    await producer.close()

    const consumer = new Consumer({ bootstrapServers: tb.bootstrap, autoOffsetReset: 'earliest' })
    consumer.assign(Array.from({ length: 7 }, (_, partition) => ({ topic: 'by-kcat', partition })))
    const seen = new Map<string, number>()
    const deadline = Date.now() + 15000
    while (seen.size < keys.length && Date.now() < deadline) {
      for (const r of await consumer.poll(200)) seen.set(r.key!.toString(), r.partition)
    }
    await consumer.close()
    expect(seen.size).toBe(keys.length)
    for (const k of keys) {
      expect(seen.get(k), k).toBe(placed.get(k))
      expect(placed.get(k)).toBe(partitionForKey(Buffer.from(k), 7))
    }
    // The keys did spread: not everything on one partition.
    expect(new Set(placed.values()).size).toBeGreaterThan(3)
  })
})
