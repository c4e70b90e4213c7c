// MirrorMaker 2's pieces without brokers: the record formats byte for byte as Kafka writes them (Struct
// fields, big-endian, int16-length strings, a version header on Checkpoint and Heartbeat values), the
// replication policies' names and cycle detection, offset-sync emission and translation, the runtime's
// per-run offset tracking used by the batched source path, and the plugin names.
import { describe, expect, test } from 'vitest'
import { decodeCheckpoint, decodeHeartbeat, decodeOffsetSync, DefaultReplicationPolicy, encodeCheckpoint, encodeHeartbeat, encodeOffsetSync, IdentityReplicationPolicy, isCycle, isHeartbeatsTopic, MirrorFormatError, MirrorMakerConfig, MirrorMakerConfigFlows, OffsetSyncPartitionState, OffsetSyncStore, originalTopic } from './mirror-imports.js'
import { Plugins } from '../../src/connect/runtime/plugins.js'
import { SubmittedRecords } from '../../src/connect/runtime/worker-task.js'

const hex = (b: Buffer): string => b.toString('hex')

describe('MirrorMaker record formats (Kafka\'s bytes)', () => {
  test('OffsetSync: key {topic, partition}, value {upstreamOffset, offset}, no header', () => {
    const { key, value } = encodeOffsetSync({ topic: 't', partition: 2, upstreamOffset: 5, downstreamOffset: 7 })
    expect(hex(key)).toBe('0001' + '74' + '00000002')
    expect(hex(value)).toBe('0000000000000005' + '0000000000000007')
    expect(decodeOffsetSync(key, value)).toEqual({ topic: 't', partition: 2, upstreamOffset: 5, downstreamOffset: 7 })
  })

  test('Checkpoint: key {group, topic, partition}, value {version 0} {upstreamOffset, offset, metadata}', () => {
    const cp = { group: 'g', topic: 'A.t', partition: 1, upstreamOffset: 300, downstreamOffset: 299, metadata: 'm' }
    const { key, value } = encodeCheckpoint(cp)
    expect(hex(key)).toBe('0001' + '67' + '0003' + Buffer.from('A.t').toString('hex') + '00000001')
    expect(hex(value)).toBe('0000' + '000000000000012c' + '000000000000012b' + '0001' + '6d')
    expect(decodeCheckpoint(key, value)).toEqual(cp)
  })

  test('Heartbeat: key {sourceClusterAlias, targetClusterAlias}, value {version 0} {timestamp}', () => {
    const { key, value } = encodeHeartbeat({ sourceClusterAlias: 'A', targetClusterAlias: 'B', timestamp: 1700000000000 })
    expect(hex(key)).toBe('0001' + '41' + '0001' + '42')
    expect(hex(value)).toBe('0000' + '0000018bcfe56800')
    expect(decodeHeartbeat(key, value)).toEqual({ sourceClusterAlias: 'A', targetClusterAlias: 'B', timestamp: 1700000000000 })
  })

  test('malformed records are refused with MirrorFormatError, never read past the buffer', () => {
    expect(() => decodeCheckpoint(Buffer.from('0001', 'hex'), Buffer.alloc(2))).toThrow(MirrorFormatError)
    expect(() => decodeOffsetSync(Buffer.from('00ff41', 'hex'), Buffer.alloc(16))).toThrow(MirrorFormatError)
    expect(() => decodeHeartbeat(null, Buffer.alloc(10))).toThrow(MirrorFormatError)
    expect(() => decodeHeartbeat(Buffer.from('000141000142', 'hex'), Buffer.from('0001' + '00'.repeat(8), 'hex'))).toThrow(/version 1/)
  })
})

describe('replication policies', () => {
  const p = new DefaultReplicationPolicy()

  test('DefaultReplicationPolicy names remote and internal topics as Kafka does', () => {
    expect(p.formatRemoteTopic('us-west', 'topic1')).toBe('us-west.topic1')
    expect(p.topicSource('us-west.topic1')).toBe('us-west')
    expect(p.upstreamTopic('us-east.us-west.topic1')).toBe('us-west.topic1')
    expect(originalTopic(p, 'us-east.us-west.topic1')).toBe('topic1')
    expect(p.topicSource('topic1')).toBeNull()
    expect(p.topicSource('a.')).toBeNull()
    expect(p.checkpointsTopic('A')).toBe('A.checkpoints.internal')
    expect(p.offsetSyncsTopic('B')).toBe('mm2-offset-syncs.B.internal')
    expect(isHeartbeatsTopic(p, 'heartbeats')).toBe(true)
    expect(isHeartbeatsTopic(p, 'B.A.heartbeats')).toBe(true)
    const custom = new DefaultReplicationPolicy({ separator: '_' })
    expect(custom.formatRemoteTopic('A', 'orders')).toBe('A_orders')
    expect(custom.offsetSyncsTopic('B')).toBe('mm2-offset-syncs_B_internal')
    expect(new DefaultReplicationPolicy({ separator: '_', internalTopicSeparatorEnabled: false }).checkpointsTopic('A')).toBe('A.checkpoints.internal')
  })

  test('a topic that came from the target, at any hop, is a cycle', () => {
    expect(isCycle(p, 'B', 'B.orders')).toBe(true)
    expect(isCycle(p, 'B', 'C.B.orders')).toBe(true)
    expect(isCycle(p, 'B', 'C.orders')).toBe(false)
    expect(isCycle(p, 'B', 'orders')).toBe(false)
  })

  test('IdentityReplicationPolicy keeps names but prefixes heartbeats', () => {
    const id = new IdentityReplicationPolicy()
    expect(id.formatRemoteTopic('A', 'orders')).toBe('orders')
    expect(id.formatRemoteTopic('A', 'heartbeats')).toBe('A.heartbeats')
    expect(id.topicSource('A.orders')).toBeNull()
  })
})

describe('offset syncs', () => {
  test('a sync is due first, after offset.lag.max records, and when upstream offsets skip', () => {
    const s = new OffsetSyncPartitionState(3)
    const due: boolean[] = []
    for (const [up, down] of [[0, 0], [1, 1], [2, 2], [3, 3], [4, 4], [7, 5]] as const) {
      const d = s.update(up, down)
      due.push(d)
      if (d) s.reset()
    }
    expect(due).toEqual([true, false, false, false, true, true])
  })

  test('translation goes through the newest sync at or before the offset, never past one beyond it', () => {
    const store = new OffsetSyncStore()
    expect(store.translateDownstream('t', 0, 5)).toBeNull()
    store.add({ topic: 't', partition: 0, upstreamOffset: 10, downstreamOffset: 4 })
    store.add({ topic: 't', partition: 0, upstreamOffset: 20, downstreamOffset: 14 })
    store.add({ topic: 't', partition: 0, upstreamOffset: 30, downstreamOffset: 20 })
    expect(store.translateDownstream('t', 0, 20)).toBe(14)
    expect(store.translateDownstream('t', 0, 25)).toBe(15)
    expect(store.translateDownstream('t', 0, 1000)).toBe(21)
    expect(store.translateDownstream('t', 0, 9)).toBe(-1)
    // Many syncs: the store stays small and still translates old offsets conservatively.
    for (let i = 4; i < 10000; i++) store.add({ topic: 't', partition: 0, upstreamOffset: i * 10, downstreamOffset: i * 10 - 10 })
    const old = store.translateDownstream('t', 0, 5000)!
    expect(old).toBeGreaterThan(0)
    expect(old).toBeLessThanOrEqual(4991)
  })

  test('OffsetSyncStore: what a moved group re-reads grows with its lag, not with the partition (Kafka 3.5+)', () => {
    // A sync every 100 offsets (offset.lag.max=100) of a 1,000,000-record partition, downstream 7 behind.
    const store = new OffsetSyncStore()
    const newest = 1_000_000
    for (let u = 0; u <= newest; u += 100) store.add({ topic: 't', partition: 0, upstreamOffset: u, downstreamOffset: u - 7 })
    for (const lag of [0, 50, 150, 1_000, 4_456, 10_000, 100_000, 600_000, 999_999]) {
      const group = newest - lag
      const translated = store.translateDownstream('t', 0, group)!
      // Never past the group's position (that would skip records), and the re-read is less than its lag
      // (or than the spacing of two syncs), never the whole partition.
      const reread = group - 7 - translated
      expect(reread, `lag ${lag}`).toBeGreaterThanOrEqual(0)
      expect(reread, `lag ${lag}`).toBeLessThan(Math.max(100, lag))
    }
    // The store stays small: about 2*log2(1,000,000 / 100) + 3.
    expect(store.kept('t', 0)).toBeLessThanOrEqual(2 * Math.log2(newest / 100) + 3)
    // The case: a group 10,000 behind on a 1,000,000-record partition is not sent to the start.
    expect(store.translateDownstream('t', 0, newest - 10_000)!).toBeGreaterThan(980_000)
  })
})

describe('batched source path offset tracking (SubmittedRecords runs)', () => {
  test('a run\'s offset is committable only once all its records and the earlier ones are acknowledged', () => {
    const s = new SubmittedRecords()
    const part = { p: 1 }
    const first = s.entry('p1', part, { o: 1 })
    first.add({ o: 2 })
    const second = s.entry('p1', part, { o: 3 })
    second.ack()
    expect(s.takeCommittable()).toEqual([])
    first.ack()
    expect(s.takeCommittable()).toEqual([])
    first.ack()
    expect(s.takeCommittable()).toEqual([{ partition: part, offset: { o: 3 } }])
    expect(s.outstanding).toBe(0)
  })
})

describe('plugins and dedicated-mode flows', () => {
  test('the MirrorMaker connectors answer to Kafka\'s names; ByteArrayConverter is a header converter too', () => {
    const plugins = new Plugins()
    for (const n of ['org.apache.kafka.connect.mirror.MirrorSourceConnector', 'MirrorCheckpointConnector', 'MirrorHeartbeat']) expect(plugins.connectorKind(n)).toBe('source')
    expect(plugins.newHeaderConverter('org.apache.kafka.connect.converters.ByteArrayConverter').fromConnectHeader('t', 'h', null, Buffer.from('x'))).toEqual(Buffer.from('x'))
    expect(plugins.newConverter('ByteArrayConverter').fromConnectData('t', null, null, Buffer.from('y'))).toEqual(Buffer.from('y'))
  })

  test('flows: enabled ones, and heartbeat-only herders for the others unless heartbeats are off', () => {
    expect(MirrorMakerConfigFlows({ clusters: 'A, B', 'A.bootstrap.servers': 'a:1', 'B.bootstrap.servers': 'b:1', 'A->B.enabled': 'true' })).toEqual([{ source: 'A', target: 'B', enabled: true }, { source: 'B', target: 'A', enabled: false }])
    expect(MirrorMakerConfigFlows({ clusters: 'A, B', 'A.bootstrap.servers': 'a:1', 'B.bootstrap.servers': 'b:1', 'A->B.enabled': 'true', 'emit.heartbeats.enabled': 'false' })).toEqual([{ source: 'A', target: 'B', enabled: true }])
  })

  test('dedicated.mode.enable.internal.rest (off by default) puts the process\'s REST server on listeners; the switch reaches no worker or connector', () => {
    const base = { clusters: 'A, B', 'A.bootstrap.servers': 'a:1', 'B.bootstrap.servers': 'b:1', 'A->B.enabled': 'true' }
    expect(new MirrorMakerConfig({ ...base, listeners: 'http://0.0.0.0:9000' }).internalRestListeners()).toBeNull()
    expect(new MirrorMakerConfig({ ...base, 'dedicated.mode.enable.internal.rest': 'true' }).internalRestListeners()).toEqual(['http://127.0.0.1:8083'])
    const on = new MirrorMakerConfig({ ...base, 'dedicated.mode.enable.internal.rest': 'TRUE', listeners: 'http://0.0.0.0:9000, http://:9001' })
    expect(on.internalRestListeners()).toEqual(['http://0.0.0.0:9000', 'http://127.0.0.1:9001'])
    const flow = { source: 'A', target: 'B', enabled: true }
    // Each flow's herder keeps its own internal listener; the connectors get neither setting.
    expect(on.workerProps(flow)['listeners']).toBe('http://127.0.0.1:0')
    expect(on.workerProps(flow)['dedicated.mode.enable.internal.rest']).toBeUndefined()
    expect(on.connectorProps(flow, 'MirrorSourceConnector')['dedicated.mode.enable.internal.rest']).toBeUndefined()
    expect(on.connectorProps(flow, 'MirrorSourceConnector')['listeners']).toBeUndefined()
    expect(() => new MirrorMakerConfig({ ...base, 'dedicated.mode.enable.internal.rest': 'yes' }).internalRestListeners()).toThrow(/must be true or false/)
  })
})
