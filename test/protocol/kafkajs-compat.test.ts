// Cross-check against a real client's hand-written encoders: bytes produced by kafkajs (npm)
// must decode with our generated codecs, and our encoding of the decoded message must be
// byte-identical.

import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import * as JoinGroup from '../../src/protocol/messages/11-join-group.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'

const require = createRequire(import.meta.url)
type KafkajsRequest = { apiKey: number; apiVersion: number; encode(): Promise<{ buffer: Buffer }> }
const kafkajs = (path: string): ((args: Record<string, unknown>) => KafkajsRequest) => require(`kafkajs/src/protocol/requests/${path}`)

describe('kafkajs request encodings', () => {
  it('Metadata v4, with topics and with null topics (all)', async () => {
    const v4 = await kafkajs('metadata/v4/request')({ topics: ['a', 'bb'], allowAutoTopicCreation: false }).encode()
    const decoded = Metadata.decodeMetadataRequest(new Reader(v4.buffer), 4)
    expect(decoded.topics?.map((t) => t.name)).toEqual(['a', 'bb'])
    expect(decoded.allowAutoTopicCreation).toBe(false)
    const w = new Writer()
    Metadata.encodeMetadataRequest(w, decoded, 4)
    expect(w.toBuffer().equals(v4.buffer)).toBe(true)

    // kafkajs asks for all topics with an empty list, which it writes as a null array (-1).
    const all = await kafkajs('metadata/v4/request')({ topics: [] }).encode()
    expect(Metadata.decodeMetadataRequest(new Reader(all.buffer), 4).topics).toBe(null)
  })

  it('JoinGroup v5 with protocol metadata bytes', async () => {
    const req = kafkajs('joinGroup/v5/request')({
      groupId: 'group',
      sessionTimeout: 30000,
      rebalanceTimeout: 60000,
      memberId: '',
      groupInstanceId: null,
      protocolType: 'consumer',
      groupProtocols: [{ name: 'RoundRobinAssigner', metadata: Buffer.from([0, 1, 2]) }],
    })
    const bytes = (await req.encode()).buffer
    const decoded = JoinGroup.decodeJoinGroupRequest(new Reader(bytes), 5)
    expect(decoded).toMatchObject({ groupId: 'group', sessionTimeoutMs: 30000, rebalanceTimeoutMs: 60000, memberId: '', groupInstanceId: null, protocolType: 'consumer' })
    expect(decoded.protocols).toEqual([{ name: 'RoundRobinAssigner', metadata: Buffer.from([0, 1, 2]) }])
    const w = new Writer()
    JoinGroup.encodeJoinGroupRequest(w, decoded, 5)
    expect(w.toBuffer().equals(bytes)).toBe(true)
  })
})
