// The Go clients' smoke (in npm test): Debian's sarama 1.22.1, built with Debian's Go, creates a topic
// through its ClusterAdmin, produces with an idempotent acks=all producer and reads everything back from
// one broker. The full run (sarama, kafka-go, confluent-kafka-go and Burrow against three brokers and a
// ZooKeeper) is npm run test:compat-go (go-clients.compat.ts); results in RESULTS.md.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestBroker, type TestBroker } from '../../harness/index.js'
import { buildProgram, runProgram } from './go-programs.js'

describe('Go clients (smoke): sarama on one broker', () => {
  let broker: TestBroker
  beforeAll(async () => {
    broker = await startTestBroker(['num.partitions=1'])
  })
  afterAll(async () => {
    await broker?.stop()
  })

  it('sarama creates a topic, produces idempotently with acks=all and consumes it all', async () => {
    const sarama = await buildProgram('sarama')
    console.log(`[go smoke] sarama ${sarama.built ? 'built' : 'reused'} in ${sarama.ms} ms`)
    const r = await runProgram(sarama.path, ['-brokers', broker.bootstrap, '-topic', 'go-smoke', '-partitions', '2', '-replicas', '1', '-expect-brokers', '1', '-messages', '20', '-checks', 'metadata,create_topic,produce_idempotent,consume'], 60_000)
    for (const name of ['metadata', 'create_topic', 'produce_idempotent', 'consume']) {
      expect(r.checks.get(name), r.output).toMatchObject({ ok: true })
    }
    expect(r.checks.get('consume')!.detail).toBe('read=20 missing=0 duplicated=0')
    expect(r.code, r.output).toBe(0)
  }, 240_000) // a cold build of sarama takes about 35 s on a loaded 2-core machine, the test itself seconds
})
