// `skein topics --describe` prints the topic's real id (Kafka's base64 form), which changes when the topic
// is deleted and created again; it used to print the zero id (Metadata was answered at v9, before ids).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZERO_UUID } from '../../src/protocol/primitives/types.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { skein } from './helpers.js'

let tb: TestBroker
let b: string[]
beforeAll(async () => {
  tb = await startTestBroker()
  b = ['--bootstrap-server', tb.bootstrap]
})
afterAll(async () => {
  await tb?.stop()
})

describe('skein topics --describe', () => {
  it("shows the topic's id, a new one after the topic is created again", async () => {
    const idShown = async (): Promise<string> => {
      const d = await skein(['topics', ...b, '--describe', '--topic', 'with-id'])
      expect(d.code).toBe(0)
      return /TopicId: (\S+)/.exec(d.out)![1]!
    }
    expect((await skein(['topics', ...b, '--create', '--topic', 'with-id', '--partitions', '2'])).code).toBe(0)
    const first = await idShown()
    expect(first).toBe(tb.broker.topics.get('with-id')!.topicId)
    expect(first).not.toBe(ZERO_UUID)
    expect((await skein(['topics', ...b, '--delete', '--topic', 'with-id'])).code).toBe(0)
    expect((await skein(['topics', ...b, '--create', '--topic', 'with-id', '--partitions', '1'])).code).toBe(0)
    const second = await idShown()
    expect(second).toBe(tb.broker.topics.get('with-id')!.topicId)
    expect(second).not.toBe(first)
  })
})
