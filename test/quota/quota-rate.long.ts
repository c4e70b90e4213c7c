// The measurement (`npm run test:quotas`, ~40 s): a kafkajs producer with producer_byte_rate
// 1 MB/s, measured over 20 s, stays within 10% of it, while an unthrottled producer on the same broker
// keeps the rate it has alone.
// Kafka's rate is measured over quota.window.num windows of quota.window.size.seconds, and a fast client
// is bursty within that period: it sends a period's worth of quota at once, is throttled, and bursts
// again when that window ages out (Kafka's brokers do the same with the same Rate). So the average is the
// quota over whole periods; the broker runs with 10 x 1 s windows (Kafka's default is 11) so that the 20 s
// are two whole periods, measured after a warm-up period (a young sensor is measured over samples - 1
// windows, Kafka's rule, which lets the first period's quota through at once).
import { Kafka, logLevel, type Producer } from 'kafkajs'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'

const QUOTA = 1024 * 1024
const SECONDS = Number(process.env.SKEIN_QUOTA_SECONDS ?? 20)

let tb: TestBroker
beforeAll(async () => {
  tb = await startTestBroker(['num.partitions=1', 'quota.window.num=10', 'quota.window.size.seconds=1'])
})
afterAll(async () => {
  await tb?.stop()
})

/**
 * Sends `payload`-sized messages with a few requests in flight (as a real producer keeps batches in
 * flight: one request at a time would also count its round trips against its rate); bytes acknowledged
 * per second of each phase.
 */
function pump(p: Producer, topic: string, payload: Buffer, inFlight = 4) {
  let bytes = 0
  let stop = false
  const loop = async (): Promise<void> => {
    while (!stop) {
      await p.send({ topic, acks: 1, messages: [{ value: payload }] })
      bytes += payload.length
    }
  }
  const done = Promise.all(Array.from({ length: inFlight }, loop))
  return {
    async measure(ms: number): Promise<number> {
      const b0 = bytes
      const t0 = Date.now()
      await new Promise((r) => setTimeout(r, ms))
      return (bytes - b0) / ((Date.now() - t0) / 1000)
    },
    async stop(): Promise<void> {
      stop = true
      await done
    },
  }
}

it(`holds a producer to producer_byte_rate=1 MB/s within 10% over ${SECONDS} s; an unthrottled one is unaffected`, async () => {
  const admin = new Admin({ bootstrapServers: [tb.bootstrap], clientId: 'quota-admin' })
  await admin.alterClientQuotas([{ entity: { 'client-id': 'throttled' }, ops: { producer_byte_rate: QUOTA } }])
  await admin.close()
  const make = (clientId: string): Producer => new Kafka({ brokers: [tb.bootstrap], clientId, logLevel: logLevel.NOTHING }).producer({ allowAutoTopicCreation: true })
  const free = make('free')
  const throttled = make('throttled')
  await Promise.all([free.connect(), throttled.connect()])
  const payload = Buffer.alloc(32 * 1024, 7)
  const freePump = pump(free, 'free-topic', payload)
  await freePump.measure(2000) // JIT warm-up
  const freeAlone = await freePump.measure(5000)
  const throttledPump = pump(throttled, 'throttled-topic', payload)
  await throttledPump.measure(10_000)
  const [throttledRate, freeBeside] = await Promise.all([throttledPump.measure(SECONDS * 1000), freePump.measure(SECONDS * 1000)])
  await Promise.all([freePump.stop(), throttledPump.stop()])
  await Promise.all([free.disconnect(), throttled.disconnect()])
  console.log(`throttled ${(throttledRate / QUOTA).toFixed(3)} MB/s (quota 1 MB/s); unthrottled ${(freeAlone / QUOTA).toFixed(1)} MB/s alone, ${(freeBeside / QUOTA).toFixed(1)} MB/s beside it`)
  expect(Math.abs(throttledRate - QUOTA) / QUOTA).toBeLessThan(0.1)
  expect(freeBeside).toBeGreaterThan(freeAlone * 0.7)
})
