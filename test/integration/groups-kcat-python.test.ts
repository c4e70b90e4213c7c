// Consumer groups with librdkafka (kcat -G: FindCoordinator v2, JoinGroup v5, SyncGroup v3, OffsetFetch
// v7 flexible, OffsetCommit v7, LeaveGroup v1) and kafka-python 2.0.2 (FindCoordinator v0, JoinGroup v2,
// SyncGroup/Heartbeat/LeaveGroup v1, OffsetCommit v2, OffsetFetch v1), each joining a group, consuming,
// committing, and a second run resuming after the commits; kafka-python also commits as a "simple"
// group (assign() without membership). Missing tools are reported and their tests skipped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRecordBatch } from '../../src/index.js'
import { hasKcat, hasPythonModule, run, runOk, startTestBroker, SYSTEM_PYTHON, type TestBroker } from '../harness/index.js'

const KCAT = hasKcat()
const KAFKA_PYTHON = hasPythonModule('kafka')
let tb: TestBroker

/* eslint-disable @typescript-eslint/no-explicit-any */
async function committed(groupId: string): Promise<Record<string, number>> {
  const res = await tb.broker.groups.current!.fetchOffsets(groupId, null)
  expect(res.errorCode).toBe(0)
  const out: Record<string, number> = {}
  for (const t of res.topics) for (const p of t.partitions) out[`${t.name}-${p.partitionIndex}`] = Number(p.committedOffset)
  return out
}

async function produceKcat(topic: string, values: string[]): Promise<void> {
  await runOk('kcat', ['-b', tb.bootstrap, '-P', '-t', topic, '-K:'], { input: values.map((v, i) => `k${i}:${v}`).join('\n') + '\n' })
}

beforeAll(async () => {
  tb = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=5'])
  await tb.broker.topics.create({ name: 'grp-kcat', numPartitions: 3, replicationFactor: -1, configs: {}, validateOnly: false })
  await tb.broker.topics.create({ name: 'grp-kpy', numPartitions: 3, replicationFactor: -1, configs: {}, validateOnly: false })
})

afterAll(async () => {
  await tb?.stop()
})

describe.skipIf(!KCAT)('librdkafka (kcat -G) consumer group', () => {
  const consume = () =>
    run('kcat', ['-b', tb.bootstrap, '-G', 'kcat-g', 'grp-kcat', '-e', '-q', '-f', '%p %o %s\\n', '-X', 'auto.offset.reset=earliest', '-X', 'session.timeout.ms=6000'], { timeoutMs: 60_000 })
  const lines = (out: Buffer) => out.toString().split('\n').filter((l) => l !== '')

  it('joins, consumes everything once, commits at close; the next run resumes at the commits', async () => {
    const first = Array.from({ length: 24 }, (_, i) => `v${i}`)
    await produceKcat('grp-kcat', first)
    const r1 = await consume()
    expect(r1.code, r1.stderr).toBe(0)
    const got1 = lines(r1.stdout)
    expect(got1.map((l) => l.split(' ')[2]).sort()).toEqual([...first].sort())
    const ends: Record<string, number> = {}
    for (const l of got1) {
      const [p, o] = l.split(' ')
      ends[`grp-kcat-${p}`] = Math.max(ends[`grp-kcat-${p}`] ?? 0, Number(o) + 1)
    }
    expect(await committed('kcat-g')).toEqual(ends)
    const described = (await tb.broker.groups.current!.describeGroups(['kcat-g']))[0]!
    // kcat left the group on exit (LeaveGroup): nobody is a member any more.
    expect(described).toMatchObject({ state: 'Empty', protocolType: 'consumer', members: [] })

    await produceKcat('grp-kcat', ['late-1', 'late-2', 'late-3'])
    const r2 = await consume()
    expect(r2.code, r2.stderr).toBe(0)
    expect(lines(r2.stdout).map((l) => l.split(' ')[2]).sort()).toEqual(['late-1', 'late-2', 'late-3'])
  })
})

// kafka-python, driven by a small script: {bootstrap, op, ...} on stdin, one JSON document out.
const PY = `
import json, sys
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
req = json.load(sys.stdin)
if req["op"] == "group":
    c = KafkaConsumer(req["topic"], bootstrap_servers=req["bootstrap"], group_id=req["group"], auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500, consumer_timeout_ms=4000,
                      request_timeout_ms=15000)
    got = [{"partition": m.partition, "offset": m.offset, "value": m.value.decode()} for m in c]
    c.commit()
    assignment = sorted(tp.partition for tp in c.assignment())
    c.close()
    print(json.dumps({"messages": got, "assignment": assignment}))
elif req["op"] == "simple":
    c = KafkaConsumer(bootstrap_servers=req["bootstrap"], group_id=req["group"], enable_auto_commit=False, request_timeout_ms=15000)
    tps = [TopicPartition(req["topic"], p) for p in (0, 1, 2)]
    c.assign(tps)
    c.commit({tp: OffsetAndMetadata(10 + tp.partition, "meta-%d" % tp.partition) for tp in tps})
    print(json.dumps({"committed": [c.committed(tp) for tp in tps]}))
    c.close()
`

async function py(req: Record<string, unknown>): Promise<any> {
  const r = await runOk(SYSTEM_PYTHON, ['-c', PY], { input: JSON.stringify({ bootstrap: tb.bootstrap, ...req }), timeoutMs: 60_000 })
  return JSON.parse(r.stdout.toString())
}

describe.skipIf(!KAFKA_PYTHON)('kafka-python consumer group', () => {
  it('joins with group_id, consumes, commits; a second member run resumes at the commits', async () => {
    const values = Array.from({ length: 18 }, (_, i) => `p${i}`)
    // Produced through the broker's shards directly: this test is about the consumer side.
    for (let p = 0; p < 3; p++) {
      const batch = createRecordBatch(values.filter((_, i) => i % 3 === p).map((v) => ({ value: Buffer.from(v) })))
      const [r] = await tb.broker.router.append([{ topic: 'grp-kpy', partition: p, records: batch, leaderEpoch: 0 }])
      expect(r!.ok).toBe(true)
    }
    const first = await py({ op: 'group', topic: 'grp-kpy', group: 'kpy-g' })
    expect(first.assignment).toEqual([0, 1, 2])
    expect(first.messages.map((m: any) => m.value).sort()).toEqual([...values].sort())
    expect(await committed('kpy-g')).toEqual({ 'grp-kpy-0': 6, 'grp-kpy-1': 6, 'grp-kpy-2': 6 })
    const more = createRecordBatch([{ value: Buffer.from('after') }])
    await tb.broker.router.append([{ topic: 'grp-kpy', partition: 1, records: more, leaderEpoch: 0 }])
    const second = await py({ op: 'group', topic: 'grp-kpy', group: 'kpy-g' })
    expect(second.messages).toEqual([{ partition: 1, offset: 6, value: 'after' }])
  })

  it('commits offsets with metadata as a simple group (assign(), no membership) and reads them back', async () => {
    const res = await py({ op: 'simple', topic: 'grp-kpy', group: 'kpy-simple' })
    expect(res.committed).toEqual([10, 11, 12])
    const fetched = await tb.broker.groups.current!.fetchOffsets('kpy-simple', [{ name: 'grp-kpy', partitions: [0, 1, 2] }])
    expect(fetched.topics[0]!.partitions.map((p) => [Number(p.committedOffset), p.metadata])).toEqual([[10, 'meta-0'], [11, 'meta-1'], [12, 'meta-2']])
    expect((await tb.broker.groups.current!.describeGroups(['kpy-simple']))[0]).toMatchObject({ state: 'Empty', protocolType: '', members: [] })
  })
})
