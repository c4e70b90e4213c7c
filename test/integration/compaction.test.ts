// Log compaction seen by real clients. A topic with cleanup.policy=compact gets many updates per key from
// kafkajs's producer; the broker's own cleaner timer (log.cleaner.backoff.ms) compacts it; kafkajs's
// Fetch path and kcat (librdkafka) read back the latest value of every key at its original offset, across
// the gaps, including from an offset that was compacted away. Then __consumer_offsets stays small under a
// long commit loop, and the compacted commits replay correctly after a restart.
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as OffsetCommit from '../../src/protocol/messages/08-offset-commit.gen.js'
import { hasKcat, RawClient, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const kafkajs = require('kafkajs') as any
const { Kafka, logLevel } = kafkajs
const KjsCluster = require('kafkajs/src/cluster') as any
const { createLogger, LEVELS } = require('kafkajs/src/loggers') as any
const LoggerConsole = require('kafkajs/src/loggers/console') as any
const defaultSocketFactory = require('kafkajs/src/network/socketFactory') as any

const KCAT = hasKcat()
const OVERRIDES = ['log.cleaner.backoff.ms=100', 'offsets.topic.num.partitions=1', 'offsets.topic.segment.bytes=8192']
let tb: TestBroker
let kafka: any
let admin: any
let producer: any
let cluster: any

function newCluster(bootstrap: string): any {
  return new KjsCluster({
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: LoggerConsole }),
    socketFactory: defaultSocketFactory(),
    brokers: [bootstrap],
    clientId: 'skein-compaction-fetch',
    connectionTimeout: 3000,
    requestTimeout: 15000,
    enforceRequestTimeout: true,
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
    retry: { retries: 3, initialRetryTime: 100 },
  })
}

/** Records from fromOffset to the high watermark through kafkajs's Fetch v11 and its batch decoder. */
async function kjsFetchFrom(topic: string, fromOffset: number): Promise<{ records: any[]; highWatermark: number; firstResponseOffsets: number[] }> {
  await cluster.addTargetTopic(topic)
  await cluster.refreshMetadata()
  const leader = cluster.findTopicPartitionMetadata(topic).find((p: any) => p.partitionId === 0).leader
  const broker = await cluster.findBroker({ nodeId: String(leader) })
  const records: any[] = []
  let offset = fromOffset
  let highWatermark = -1
  let firstResponseOffsets: number[] = []
  for (let round = 0; round < 200; round++) {
    const res = await broker.fetch({
      replicaId: -1, isolationLevel: 0, maxWaitTime: 20, minBytes: 0, maxBytes: 4 * 1024 * 1024,
      topics: [{ topic, partitions: [{ partition: 0, fetchOffset: String(offset), maxBytes: 2048 }] }],
    })
    const p = res.responses[0].partitions[0]
    expect(p.errorCode).toBe(0)
    highWatermark = Number(p.highWatermark)
    if (round === 0) firstResponseOffsets = p.messages.map((m: any) => Number(m.offset))
    let last = offset - 1
    for (const m of p.messages) {
      if (Number(m.offset) >= offset) records.push(m)
      last = Math.max(last, Number(m.offset))
    }
    // A batch can end in a gap (its last record compacted away): move past what was returned.
    offset = last + 1
    if (offset >= highWatermark) break
  }
  return { records, highWatermark, firstResponseOffsets }
}

beforeAll(async () => {
  tb = await startTestBroker(OVERRIDES)
  kafka = new Kafka({ clientId: 'skein-compaction', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 3000, requestTimeout: 15000, retry: { retries: 3, initialRetryTime: 100 } })
  admin = kafka.admin()
  await admin.connect()
  producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  cluster = newCluster(tb.bootstrap)
  await cluster.connect()
})

afterAll(async () => {
  await producer?.disconnect()
  await admin?.disconnect()
  await cluster?.disconnect()
  await tb?.stop()
})

/** Waits until the partition's size drops below bytes (the broker's cleaner timer at work). */
async function waitForSize(topic: string, partition: number, below: number, timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const [state] = await tb.broker.router.states([{ topic, partition }])
    if (state !== undefined && state.sizeBytes < below) return state.sizeBytes
    if (Date.now() > deadline) throw new Error(`${topic}-${partition} still holds ${state?.sizeBytes} bytes, expected < ${below}`)
    await sleep(100)
  }
}

describe('a compacted topic', () => {
  const topic = 'compacted'
  const KEYS = 25
  const ROUNDS = 40
  const latest = new Map<string, { offset: number; value: string | null }>()
  let written = 0

  it('is compacted by the broker\'s cleaner to the latest value per key', async () => {
    await admin.createTopics({
      topics: [{ topic, numPartitions: 1, configEntries: [
        { name: 'cleanup.policy', value: 'compact' }, { name: 'segment.bytes', value: '4096' }, { name: 'min.cleanable.dirty.ratio', value: '0.1' },
      ] }],
      waitForLeaders: true,
    })
    for (let round = 0; round < ROUNDS; round++) {
      // The last round updates the even keys only (so the odd keys' latest records, one round earlier,
      // are left with gaps between them) and deletes two of them.
      const keys = Array.from({ length: KEYS }, (_, k) => k).filter((k) => round < ROUNDS - 1 || k % 2 === 0)
      const messages = keys.map((k) => {
        const value = round === ROUNDS - 1 && k < 4 ? null : `key${k}-round${round}-${'x'.repeat(20)}`
        return { key: `key${k}`, value }
      })
      for (const m of messages) written += m.key.length + (m.value?.length ?? 0)
      const [res] = await producer.send({ topic, acks: -1, messages })
      const base = Number(res.baseOffset)
      messages.forEach((m, i) => latest.set(m.key, { offset: base + i, value: m.value }))
    }
    // Pad past one segment so the last round leaves the active segment and is cleanable too.
    for (let i = 0; i < 6; i++) {
      const [pad] = await producer.send({ topic, acks: -1, messages: Array.from({ length: 10 }, (_, j) => ({ key: 'pad', value: `pad-${i}-${j}-${'y'.repeat(60)}` })) })
      latest.set('pad', { offset: Number(pad.baseOffset) + 9, value: `pad-${i}-9-${'y'.repeat(60)}` })
    }
    // The timer compacts while records arrive; wait until the log is a fraction of what was written
    // (key and value bytes alone, without any record or batch overhead).
    expect(written).toBeGreaterThan(30_000)
    const after = await waitForSize(topic, 0, written / 4)
    expect(after).toBeLessThan(written / 4)
    // One more pass now, so that everything below the active segment is clean whatever the timer did.
    const [outcome] = await tb.broker.router.compact([{ topic, partition: 0, force: true }])
    expect(outcome!.ok).toBe(true)
  })

  it('reads back through kafkajs\'s Fetch path: latest values at their original offsets, tombstones, gaps', async () => {
    const { records, highWatermark, firstResponseOffsets } = await kjsFetchFrom(topic, 0)
    expect(highWatermark).toBe(latest.get('pad')!.offset + 1)
    // Fetching offset 0, long compacted away, answers with the next batch that survives.
    expect(firstResponseOffsets.length).toBeGreaterThan(0)
    expect(firstResponseOffsets[0]).toBeGreaterThan(0)
    const offsets = records.map((m) => Number(m.offset))
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]).toBeGreaterThan(offsets[i - 1]!)
    // Far fewer records than were written, and every key's last record is its latest write.
    expect(records.length).toBeLessThan((KEYS * ROUNDS) / 4)
    const byKey = new Map<string, any>()
    for (const m of records) byKey.set(Buffer.from(m.key).toString(), m)
    expect(byKey.size).toBe(latest.size)
    for (const [key, want] of latest) {
      const m = byKey.get(key)
      expect(Number(m.offset), key).toBe(want.offset)
      expect(m.value === null ? null : Buffer.from(m.value).toString(), key).toBe(want.value)
    }
    // ListOffsets: the log start did not move, the end is the high watermark.
    const [o] = await admin.fetchTopicOffsets(topic)
    expect(Number(o.low)).toBe(0)
    expect(Number(o.high)).toBe(highWatermark)
    // Fetching from inside a gap starts at the next surviving record.
    const gap = offsets.findIndex((x, i) => i > 0 && x > offsets[i - 1]! + 1)
    expect(gap).toBeGreaterThan(0)
    const inGap = offsets[gap - 1]! + 1
    const fromGap = await kjsFetchFrom(topic, inGap)
    expect(Number(fromGap.records[0].offset)).toBe(offsets[gap])
  })

  it.skipIf(!KCAT)('reads back through librdkafka (kcat -C)', async () => {
    const r = await runOk('kcat', ['-C', '-b', tb.bootstrap, '-X', 'socket.timeout.ms=10000', '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-Z', '-f', '%k\\t%s\\t%o\\n'], { timeoutMs: 30000 })
    const lines = r.stdout.toString().split('\n').filter((l) => l !== '').map((l) => l.split('\t'))
    const byKey = new Map<string, { value: string; offset: number }>()
    for (const [k, v, o] of lines) byKey.set(k!, { value: v!, offset: Number(o) })
    expect(latest.size).toBe(KEYS + 1)
    expect(lines.length).toBeLessThan((KEYS * ROUNDS) / 4)
    for (const [key, want] of latest) {
      expect(byKey.get(key), key).toEqual({ value: want.value ?? 'NULL', offset: want.offset })
    }
  })
})

describe('__consumer_offsets', () => {
  it('stays small under a long-running commit loop, and the compacted commits replay after a restart', async () => {
    const topic = 'committed'
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true })
    const groups = ['g-a', 'g-b']
    const COMMITS = 1000
    // Standalone commits (generation -1, no member), as a consumer with assign() sends them, over raw
    // OffsetCommit v8 frames: one round trip each.
    const raw = await RawClient.connect(tb.host, tb.port)
    const commit = async (groupId: string, i: number): Promise<number[]> => {
      const req = OffsetCommit.createOffsetCommitRequest({
        groupId, generationIdOrMemberEpoch: -1, memberId: '',
        topics: [OffsetCommit.createOffsetCommitRequestTopic({
          name: topic,
          partitions: [0, 1, 2].map((p) => OffsetCommit.createOffsetCommitRequestPartition({ partitionIndex: p, committedOffset: BigInt(i * 10 + p), committedMetadata: `m${i}` })),
        })],
      })
      const res = await raw.call(8, 8, (w) => OffsetCommit.encodeOffsetCommitRequest(w, req, 8), OffsetCommit.decodeOffsetCommitResponse)
      return res.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))
    }
    // The first commit creates __consumer_offsets; retry while the coordinator loads.
    for (let attempt = 0; ; attempt++) {
      const codes = await commit(groups[0]!, 0)
      if (codes.every((c) => c === 0)) break
      if (attempt > 100) throw new Error(`OffsetCommit keeps failing: ${codes.join(',')}`)
      await sleep(100)
    }
    for (let i = 1; i <= COMMITS; i++) {
      for (const groupId of groups) expect(await commit(groupId, i)).toEqual([0, 0, 0])
    }
    raw.close()
    const [state] = await tb.broker.router.states([{ topic: '__consumer_offsets', partition: 0 }])
    expect(state).toBeDefined()
    // 800 commits of 3 offsets each wrote far more than the few segments a compacted log keeps.
    expect(state!.logEndOffset).toBeGreaterThanOrEqual(COMMITS * groups.length * 3)
    const outcomes = await tb.broker.router.compact([{ topic: '__consumer_offsets', partition: 0, force: true }])
    expect(outcomes[0]!.ok).toBe(true)
    const [after] = await tb.broker.router.states([{ topic: '__consumer_offsets', partition: 0 }])
    // What is left: one record per (group, partition) plus at most the active segment and the last dirty
    // one; the commits alone took more than that in batch headers (61 bytes each, one batch a commit).
    expect(after!.sizeBytes).toBeLessThan(3 * 8192)
    expect(COMMITS * groups.length * 61).toBeGreaterThan(4 * 3 * 8192)

    // The coordinator rebuilds its state from the compacted log.
    await admin.disconnect()
    await producer.disconnect()
    await cluster.disconnect()
    tb = await tb.restart()
    kafka = new Kafka({ clientId: 'skein-compaction-2', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 3000, requestTimeout: 15000, retry: { retries: 5, initialRetryTime: 200 } })
    admin = kafka.admin()
    await admin.connect()
    producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
    cluster = newCluster(tb.bootstrap)
    await cluster.connect()
    for (const groupId of groups) {
      const [fetched] = await admin.fetchOffsets({ groupId, topics: [topic] })
      const offsets = fetched.partitions.sort((a: any, b: any) => a.partition - b.partition).map((p: any) => Number(p.offset))
      expect(offsets).toEqual([0, 1, 2].map((p) => COMMITS * 10 + p))
    }
  })
})
