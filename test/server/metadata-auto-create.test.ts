// Metadata's auto-creation (auto.create.topics.enable) under concurrent requests, as librdkafka sends
// them (its 0002_unkpart test saw "Topic already exists" as a produce error): every request for a
// topic that another request is creating answers the topic, or LEADER_NOT_AVAILABLE while its
// partitions get leaders, as Kafka does; never TOPIC_ALREADY_EXISTS, which Metadata does not answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

describe('Metadata auto-creation', () => {
  let tb: TestBroker
  const clients: RawClient[] = []

  beforeAll(async () => {
    tb = await startTestBroker()
    for (let i = 0; i < 8; i++) clients.push(await RawClient.connect(tb.host, tb.port))
  })

  afterAll(async () => {
    for (const c of clients) c.close()
    await tb?.stop()
  })

  it('concurrent requests creating one topic all answer it or LEADER_NOT_AVAILABLE', async () => {
    for (let round = 0; round < 5; round++) {
      const name = `auto-race-${round}`
      const answers = await Promise.all(clients.map((c) => c.metadata([name], true)))
      for (const res of answers) {
        const topic = res.topics.find((t) => t.name === name)!
        expect([ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE]).toContain(topic.errorCode)
        if (topic.errorCode === ErrorCode.NONE) expect(topic.partitions.length).toBeGreaterThan(0)
      }
      // Once created, every connection sees it whole.
      const after = await clients[0]!.metadata([name], false)
      expect(after.topics[0]!.errorCode).toBe(ErrorCode.NONE)
    }
  })
})
