// A group coordinator on a ManualClock and an in-memory PartitionWriter, plus shorthands for the
// requests the state machine tests send.
import { GroupCoordinator, type ShareGroupStatePort } from '../../src/coordinator/group/group-coordinator.js'
import type { GroupCoordinatorConfig, JoinGroupInput, JoinGroupResult, TopicsView } from '../../src/coordinator/group/types.js'
import { ManualClock } from '../../src/coordinator/runtime/clock.js'
import { InMemoryPartitionWriter } from '../../src/coordinator/runtime/partition-writer.js'

export const quietLog = { info() {}, warn() {}, error() {} }

export const TEST_CONFIG: GroupCoordinatorConfig = {
  offsetsTopicPartitions: 1,
  offsetsRetentionMs: 60 * 60_000,
  offsetsRetentionCheckIntervalMs: 60_000,
  initialRebalanceDelayMs: 0,
  minSessionTimeoutMs: 6000,
  maxSessionTimeoutMs: 300_000,
  maxGroupSize: 100,
  offsetMetadataMaxBytes: 64,
}

/** A fixed 22-character base64url topic id per topic name (tests). */
export function topicIdOf(topic: string): string {
  return Buffer.from(topic.padEnd(16, '.').slice(0, 16)).toString('base64url')
}

/** Topic 't' with 6 partitions and 'u' with 2; offsets answered from `ends`. */
export function fakeTopics(ends = new Map<string, number>()): TopicsView {
  const counts = new Map([
    ['t', 6],
    ['u', 2],
  ])
  return {
    partitionCount: (topic) => counts.get(topic),
    topicId: (topic) => (counts.has(topic) ? topicIdOf(topic) : undefined),
    topicName: (topicId) => [...counts.keys()].find((t) => topicIdOf(t) === topicId),
    async offsets(partitions) {
      return partitions.map((p) => {
        const count = counts.get(p.topic)
        if (count === undefined || p.partition >= count) return null
        const end = ends.get(`${p.topic}-${p.partition}`) ?? 0
        return { logEndOffset: end, highWatermark: end }
      })
    },
  }
}

export interface Harness {
  clock: ManualClock
  writer: InMemoryPartitionWriter
  coordinator: GroupCoordinator
  /** Lets queued operations finish, fires timers due now, and lets their operations finish too. */
  settle(): Promise<void>
  /** Moves the clock, then settles. */
  advance(ms: number): Promise<void>
}

export async function harness(config: Partial<GroupCoordinatorConfig> = {}, opts: { writer?: InMemoryPartitionWriter; clock?: ManualClock; topics?: TopicsView; shareStates?: ShareGroupStatePort } = {}): Promise<Harness> {
  const clock = opts.clock ?? new ManualClock()
  const writer = opts.writer ?? new InMemoryPartitionWriter()
  const coordinator = new GroupCoordinator({ config: { ...TEST_CONFIG, ...config }, writer, topics: opts.topics ?? fakeTopics(), clock, log: quietLog, shareStates: opts.shareStates })
  await coordinator.loadAll()
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) {
      await coordinator.runtime.idle()
      clock.advance(0)
      await coordinator.runtime.idle()
      await new Promise((r) => setImmediate(r))
    }
  }
  return {
    clock,
    writer,
    coordinator,
    settle,
    async advance(ms) {
      await coordinator.runtime.idle()
      clock.advance(ms)
      await settle()
    },
  }
}

/** ConsumerProtocolSubscription v0 bytes for the topics (so the coordinator can see subscriptions). */
export function subscription(topics: string[]): Buffer {
  const parts: Buffer[] = [Buffer.from([0, 0])]
  const n = Buffer.alloc(4)
  n.writeInt32BE(topics.length)
  parts.push(n)
  for (const t of topics) {
    const len = Buffer.alloc(2)
    len.writeInt16BE(Buffer.byteLength(t))
    parts.push(len, Buffer.from(t))
  }
  parts.push(Buffer.from([0xff, 0xff, 0xff, 0xff]))
  return Buffer.concat(parts)
}

export function joinInput(groupId: string, over: Partial<JoinGroupInput> = {}): JoinGroupInput {
  return {
    groupId,
    memberId: '',
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: subscription(['t']) }],
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 30_000,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    requireKnownMemberId: false,
    ...over,
  }
}

/** Tracks a promise's settlement without awaiting it. */
export function track<T>(p: Promise<T>): { done: () => boolean; value: () => T; promise: Promise<T> } {
  let settled = false
  let v: T
  p.then((x) => {
    settled = true
    v = x
  })
  return { done: () => settled, value: () => v, promise: p }
}

export type { JoinGroupResult }
