// What Streams needs of the consumer, against a real broker: a custom assignor that carries userData
// both ways, the rebalance listener around eager rebalances, enforceRebalance, and pause/resume.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, Producer, type AssignorMember, type GroupAssignor, type MemberAssignment, type TopicPartition } from '../../src/client/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'

let broker: TestBroker
beforeAll(async () => {
  broker = await startTestBroker()
})
afterAll(async () => {
  await broker.stop()
})

/** Gives every partition to the member whose userData says 'taker', and echoes each member's userData back. */
function takerAssignor(seen: AssignorMember[][]): GroupAssignor {
  return {
    name: 'taker',
    subscriptionUserData: () => null,
    assign(members, counts) {
      seen.push([...members])
      const out = new Map<string, MemberAssignment>()
      for (const m of members) {
        const taker = m.userData?.toString() === 'taker'
        const partitions = new Map<string, number[]>()
        if (taker) for (const t of m.topics) partitions.set(t, Array.from({ length: counts.get(t) ?? 0 }, (_, i) => i))
        out.set(m.memberId, { partitions, userData: Buffer.from(`for:${m.userData?.toString() ?? ''}`) })
      }
      return out
    },
  }
}

describe('consumer hooks for stream processing', () => {
  it('a custom assignor sees userData and sends userData back; listeners run around rebalances', async () => {
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([{ name: 'hooks-t', numPartitions: 3, replicationFactor: 1 }])
    const seen: AssignorMember[][] = []
    const mk = (tag: string) => {
      const a = takerAssignor(seen)
      a.subscriptionUserData = () => Buffer.from(tag)
      return new Consumer({ bootstrapServers: broker.bootstrap, groupId: 'hooks-g', assignor: a, autoOffsetReset: 'earliest', heartbeatIntervalMs: 200, sessionTimeoutMs: 6000, rebalanceTimeoutMs: 10000 })
    }
    const c1 = mk('taker')
    const events: string[] = []
    c1.subscribe(['hooks-t'], {
      onPartitionsRevoked: async (tps: TopicPartition[]) => {
        events.push(`revoked ${tps.length}`)
      },
      onPartitionsAssigned: (tps: TopicPartition[]) => {
        events.push(`assigned ${tps.length}`)
      },
    })
    await c1.poll(100)
    expect(c1.assignment().length).toBe(3)
    expect(c1.assignmentUserData()?.toString()).toBe('for:taker')
    expect(events).toEqual(['assigned 3'])
    c1.enforceRebalance()
    await c1.poll(100)
    expect(events).toEqual(['assigned 3', 'revoked 3', 'assigned 3'])
    expect(seen.at(-1)!.map((m) => m.userData?.toString())).toEqual(['taker'])
    await c1.close()
    await admin.close()
  })

  it('pause keeps a partition from being fetched; resume brings its records', async () => {
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([{ name: 'hooks-p', numPartitions: 2, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: broker.bootstrap })
    for (let i = 0; i < 10; i++) await producer.send({ topic: 'hooks-p', partition: i % 2, value: `v${i}` })
    const c = new Consumer({ bootstrapServers: broker.bootstrap, autoOffsetReset: 'earliest' })
    c.assign([{ topic: 'hooks-p', partition: 0 }, { topic: 'hooks-p', partition: 1 }])
    c.pause([{ topic: 'hooks-p', partition: 1 }])
    expect(c.paused()).toEqual([{ topic: 'hooks-p', partition: 1 }])
    const got: number[] = []
    for (let i = 0; i < 5 && got.length < 5; i++) for (const r of await c.poll(200)) got.push(r.partition)
    expect(got).toEqual([0, 0, 0, 0, 0])
    expect(c.position('hooks-p', 1)).toBe(0)
    c.resume([{ topic: 'hooks-p', partition: 1 }])
    const later: number[] = []
    for (let i = 0; i < 10 && later.length < 5; i++) for (const r of await c.poll(200)) later.push(r.partition)
    expect(later).toEqual([1, 1, 1, 1, 1])
    await c.close()
    await producer.close()
    await admin.close()
  })
})
