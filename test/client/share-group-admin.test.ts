// The operator's side of share groups (KIP-932) against a real broker, with Skein's Admin: listing share
// groups (ListGroups v5 by type), describing them (ShareGroupDescribe), their start offsets and lag
// (DescribeShareGroupOffsets 90), resetting them (AlterShareGroupOffsets 91: NON_EMPTY_GROUP while a
// member is in, then the records above the new start offset come again), deleting a topic's state
// (DeleteShareGroupOffsets 92) and the group (DeleteGroups); errors for unknown groups and topics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, ErrorCode, KafkaError, Producer, ShareConsumer, type ShareConsumerRecord } from '../../src/client/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'

async function pollUntil(c: ShareConsumer, want: number, ms = 20_000): Promise<ShareConsumerRecord[]> {
  const got: ShareConsumerRecord[] = []
  const deadline = Date.now() + ms
  while (got.length < want && Date.now() < deadline) got.push(...(await c.poll(500)))
  return got
}

async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p
    return ErrorCode.NONE
  } catch (err) {
    if (err instanceof KafkaError) return err.code
    throw err
  }
}

describe('share group admin', () => {
  let tb: TestBroker
  let admin: Admin
  let producer: Producer
  const consumers: ShareConsumer[] = []
  const consumer = (groupId: string): ShareConsumer => {
    const c = new ShareConsumer({ bootstrapServers: tb.bootstrap, groupId })
    consumers.push(c)
    return c
  }

  beforeAll(async () => {
    tb = await startTestBroker()
    admin = new Admin({ bootstrapServers: tb.bootstrap })
    producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0 })
    await admin.createTopics([{ name: 'sa-t', numPartitions: 2, replicationFactor: 1 }, { name: 'sa-other', numPartitions: 1, replicationFactor: 1 }])
    for (let i = 0; i < 20; i++) await producer.send({ topic: 'sa-t', partition: i % 2, value: `v${i}` })
    await admin.alterConfigs({ type: 'group', name: 'sa-g' }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
  })

  afterAll(async () => {
    for (const c of consumers) await c.close().catch(() => {})
    await producer?.close()
    await admin?.close()
    await tb?.stop()
  })

  it('lists, describes and shows the offsets of a share group; alter and delete need it empty', async () => {
    const c = consumer('sa-g')
    c.subscribe(['sa-t'])
    expect(await pollUntil(c, 20)).toHaveLength(20)
    await c.commitSync()

    const [listed] = (await admin.listShareGroups()).filter((g) => g.groupId === 'sa-g')
    expect(listed).toEqual({ groupId: 'sa-g', state: 'Stable' })
    const [d] = await admin.describeShareGroups(['sa-g'])
    expect(d!.state).toBe('Stable')
    expect(d!.assignor).toBe('simple')
    expect(d!.members).toHaveLength(1)
    expect(d!.members[0]!.subscribedTopics).toEqual(['sa-t'])
    expect(d!.members[0]!.assignment.sort((a, b) => a.partition - b.partition)).toEqual([{ topic: 'sa-t', partition: 0 }, { topic: 'sa-t', partition: 1 }])
    expect(d!.coordinator?.nodeId).toBe(tb.broker.nodeId)

    const offsets = await admin.describeShareGroupOffsets('sa-g')
    expect([...offsets.values()].map((o) => [o.topic, o.partition, o.startOffset, o.lag]).sort()).toEqual([['sa-t', 0, 10, 0], ['sa-t', 1, 10, 0]])

    // A member is in: no reset, no delete.
    expect(await codeOf(admin.alterShareGroupOffsets('sa-g', [{ topic: 'sa-t', partition: 0, offset: 3 }]))).toBe(ErrorCode.NON_EMPTY_GROUP)
    expect(await codeOf(admin.deleteShareGroupOffsets('sa-g', ['sa-t']))).toBe(ErrorCode.NON_EMPTY_GROUP)
    expect(await codeOf(admin.deleteShareGroups(['sa-g']).then((m) => { if (m.get('sa-g')) throw m.get('sa-g') }))).toBe(ErrorCode.NON_EMPTY_GROUP)

    await c.close()
    expect((await admin.listShareGroups({ states: ['Empty'] })).map((g) => g.groupId)).toContain('sa-g')

    // Reset partition 0 to 3: 7 records to go again, and they come again to the next member.
    await admin.alterShareGroupOffsets('sa-g', [{ topic: 'sa-t', partition: 0, offset: 3 }])
    const after = await admin.describeShareGroupOffsets('sa-g', [{ topic: 'sa-t', partition: 0 }])
    expect(after.get('sa-t\u00000')).toMatchObject({ startOffset: 3, lag: 7 })
    const c2 = consumer('sa-g')
    c2.subscribe(['sa-t'])
    const again = await pollUntil(c2, 7)
    expect(again.map((r) => [r.partition, r.offset])).toEqual([3, 4, 5, 6, 7, 8, 9].map((o) => [0, o]))
    expect(again.every((r) => r.deliveryCount === 1)).toBe(true)
    await c2.close()

    // Delete the topic's state: nothing listed for it any more; an unknown topic is refused for itself.
    const deleted = await admin.deleteShareGroupOffsets('sa-g', ['sa-t', 'sa-nope'])
    expect(deleted.get('sa-t')).toBeNull()
    expect(deleted.get('sa-nope')?.code).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect((await admin.describeShareGroupOffsets('sa-g')).size).toBe(0)
    const named = await admin.describeShareGroupOffsets('sa-g', [{ topic: 'sa-t', partition: 1 }])
    expect(named.get('sa-t\u00001')).toMatchObject({ startOffset: null, lag: null })

    const gone = await admin.deleteShareGroups(['sa-g'])
    expect(gone.get('sa-g')).toBeNull()
    expect((await admin.listShareGroups()).map((g) => g.groupId)).not.toContain('sa-g')
  })

  it('answers Kafka errors for what is not a share group, an unknown topic or a bad offset', async () => {
    expect(await codeOf(admin.describeShareGroups(['sa-none']))).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    expect(await codeOf(admin.describeShareGroupOffsets('sa-none'))).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    expect(await codeOf(admin.alterShareGroupOffsets('sa-none', [{ topic: 'sa-t', partition: 0, offset: 0 }]))).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    expect(await codeOf(admin.describeShareGroupOffsets(''))).toBe(ErrorCode.INVALID_GROUP_ID)

    const c = consumer('sa-g2')
    c.subscribe(['sa-other'])
    await c.poll(500)
    await c.close()
    expect(await codeOf(admin.alterShareGroupOffsets('sa-g2', [{ topic: 'sa-nope', partition: 0, offset: 0 }]))).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect(await codeOf(admin.alterShareGroupOffsets('sa-g2', [{ topic: 'sa-other', partition: 5, offset: 0 }]))).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect(await codeOf(admin.alterShareGroupOffsets('sa-g2', [{ topic: 'sa-other', partition: 0, offset: -5 }]))).toBe(ErrorCode.INVALID_REQUEST)
    const named = await codeOf(admin.describeShareGroupOffsets('sa-g2', [{ topic: 'sa-nope', partition: 0 }]))
    expect(named).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  })
})
