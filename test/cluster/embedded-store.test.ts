// The single-broker MetadataStore (cluster-metadata.json): the version 1 file of Skein before clusters is
// upgraded on read and written back as version 2, epochs grow across opens, controller writes are fenced
// by the epoch version, partition states are conditional on their version, and watches fire after writes.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CLUSTER_METADATA_FILE, EmbeddedStore, PRODUCER_ID_BLOCK_FILE } from '../../src/cluster/embedded-store.js'
import { ControllerMovedError, TopicExistsError } from '../../src/cluster/metadata-store.js'

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'skein-embedded-store-'))
  dirs.push(d)
  return d
}

afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('EmbeddedStore', () => {
  it('upgrades a version 1 file: replicas on this broker, configs moved, written back as version 2', async () => {
    const dir = tempDir()
    const v1 = {
      version: 1,
      topics: [
        { name: 'b', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: 2, replicationFactor: 1, configs: { 'retention.ms': '100' }, createdAt: 1 },
        { name: 'a', topicId: 'AAAAAAAAAAAAAAAAAAAAAg', partitions: 1, replicationFactor: 1, configs: {}, createdAt: 2 },
      ],
      brokerConfigs: { perBroker: { 'log.retention.bytes': '5' }, clusterDefault: { 'log.roll.ms': '7' } },
    }
    writeFileSync(join(dir, CLUSTER_METADATA_FILE), JSON.stringify(v1))
    const store = EmbeddedStore.open(dir, 3)
    expect(await store.getTopicNames()).toEqual(['a', 'b'])
    const b = (await store.getTopicAssignments(['b'])).get('b')!
    expect(b).toEqual({ name: 'b', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: [{ replicas: [3], addingReplicas: [], removingReplicas: [] }, { replicas: [3], addingReplicas: [], removingReplicas: [] }] })
    expect(await store.getEntityConfig('topics', 'b')).toEqual({ 'retention.ms': '100' })
    expect(await store.getEntityConfig('brokers', '3')).toEqual({ 'log.retention.bytes': '5' })
    expect(await store.getEntityConfig('brokers', '<default>')).toEqual({ 'log.roll.ms': '7' })
    const onDisk = JSON.parse(readFileSync(join(dir, CLUSTER_METADATA_FILE), 'utf8'))
    expect(onDisk.version).toBe(2)
    expect(onDisk.topics.map((t: { name: string }) => t.name)).toEqual(['a', 'b'])
  })

  it('refuses a format it does not know', () => {
    const dir = tempDir()
    writeFileSync(join(dir, CLUSTER_METADATA_FILE), JSON.stringify({ version: 9 }))
    expect(() => EmbeddedStore.open(dir, 0)).toThrow(/unsupported format version 9/)
  })

  it('grows broker and controller epochs across opens and fences stale controller tokens', async () => {
    const dir = tempDir()
    const first = EmbeddedStore.open(dir, 0)
    const e1 = await first.registerBroker({ id: 0, endpoints: [], rack: null })
    const t1 = await first.campaign(0)
    await expect(first.campaign(0)).rejects.toBeInstanceOf(ControllerMovedError)
    await first.createTopic({ name: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: [{ replicas: [0], addingReplicas: [], removingReplicas: [] }] }, {})
    const created = await first.createPartitionStates(t1, [{ topic: 't', partition: 0, state: { leaderAndIsr: { leader: 0, leaderEpoch: 0, isr: [0], leaderRecoveryState: 0, partitionEpoch: 0 }, controllerEpoch: t1.epoch } }])
    expect(created.created.get('t:0')?.partitionEpoch).toBe(0)
    await first.close()

    const second = EmbeddedStore.open(dir, 0)
    const e2 = await second.registerBroker({ id: 0, endpoints: [], rack: null })
    expect(e2).toBeGreaterThan(e1)
    const t2 = await second.campaign(0)
    expect(t2.epoch).toBe(t1.epoch + 1)
    const write = { topic: 't', partition: 0, state: { leaderAndIsr: { leader: 0, leaderEpoch: 1, isr: [0], leaderRecoveryState: 0, partitionEpoch: 0 }, controllerEpoch: t2.epoch } }
    await expect(second.updatePartitionStates(t1, [write])).rejects.toBeInstanceOf(ControllerMovedError)
    const ok = await second.updatePartitionStates(t2, [write])
    expect(ok.updated.get('t:0')?.partitionEpoch).toBe(1)
    const stale = await second.updatePartitionStates(t2, [write])
    expect(stale.badVersion).toEqual(['t:0'])
    expect((await second.getPartitionStates([{ topic: 't', partition: 0 }])).get('t:0')?.leaderAndIsr.leaderEpoch).toBe(1)
    await expect(second.createTopic({ name: 't', topicId: null, partitions: [] }, {})).rejects.toBeInstanceOf(TopicExistsError)
  })

  it('calls watches after the write, and deletes a topic with its states and config', async () => {
    const dir = tempDir()
    const store = EmbeddedStore.open(dir, 0)
    const t = await store.campaign(0)
    let topicEvents = 0
    store.watchTopics(() => topicEvents++)
    await store.createTopic({ name: 'x', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: [{ replicas: [0], addingReplicas: [], removingReplicas: [] }] }, { a: 'b' })
    expect(topicEvents).toBe(0)
    await new Promise((r) => setImmediate(r))
    expect(topicEvents).toBe(1)
    await store.queueTopicDeletions(['x'])
    expect(await store.getTopicDeletions()).toEqual(['x'])
    await store.deleteTopic(t, 'x')
    await store.removeTopicDeletions(t, ['x'])
    expect(await store.getTopicNames()).toEqual([])
    expect(await store.getTopicDeletions()).toEqual([])
    expect(await store.getEntityConfig('topics', 'x')).toEqual({})
  })

  it('hands out producer id blocks from the producer-id-block file kept from before clusters', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, PRODUCER_ID_BLOCK_FILE), '0\n5000\n')
    const store = EmbeddedStore.open(dir, 0)
    expect(await store.allocateProducerIdBlock(0, 1000)).toEqual({ firstProducerId: 5000, lastProducerId: 5999 })
    expect(readFileSync(join(dir, PRODUCER_ID_BLOCK_FILE), 'utf8')).toBe('0\n6000\n')
    writeFileSync(join(dir, PRODUCER_ID_BLOCK_FILE), 'garbage')
    await expect(store.allocateProducerIdBlock(0, 1000)).rejects.toThrow(/malformed/)
  })

  it('writes many partition states in slices: the same file, and never over a newer write that finished first', async () => {
    const dir = tempDir()
    const store = EmbeddedStore.open(dir, 0)
    await store.registerBroker({ id: 0, endpoints: [], rack: null })
    const token = await store.campaign(0)
    const n = 10_000
    const replicas = { replicas: [0], addingReplicas: [], removingReplicas: [] }
    await store.createTopic({ name: 'many', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: Array.from({ length: n }, () => replicas) }, {})
    await store.createTopic({ name: 'few', topicId: 'AAAAAAAAAAAAAAAAAAAAAg', partitions: [replicas] }, {})
    const state = (leader: number) => ({ leaderAndIsr: { leader, leaderEpoch: 0, isr: [0], leaderRecoveryState: 0, partitionEpoch: 0 }, controllerEpoch: token.epoch })
    await store.createPartitionStates(token, [{ topic: 'few', partition: 0, state: state(0) }])
    // While the sliced write of the many states goes on, configs are written (whole-file writes at once,
    // newer than its snapshot): the last of them must stay on disk.
    const writing = store.createPartitionStates(token, Array.from({ length: n }, (_, partition) => ({ topic: 'many', partition, state: state(0) })))
    let written = false
    void writing.then(() => (written = true))
    const configs = 2
    let wroteMeanwhile = false
    while (!written && !wroteMeanwhile) {
      await new Promise((resolve) => setImmediate(resolve))
      // Its temporary file is there: the sliced write took its snapshot and has not renamed yet.
      if (existsSync(join(dir, `${CLUSTER_METADATA_FILE}.sliced.tmp`))) {
        await store.setEntityConfig('topics', 'few', { 'retention.ms': String(configs) })
        wroteMeanwhile = true
      }
    }
    expect(wroteMeanwhile).toBe(true)
    expect((await writing).created.size).toBe(n)
    const onDisk = JSON.parse(readFileSync(join(dir, CLUSTER_METADATA_FILE), 'utf8'))
    expect(onDisk.partitionStates.many).toHaveLength(n)
    expect(onDisk.partitionStates.many[n - 1]).toEqual({ leader: 0, leaderEpoch: 0, isr: [0], leaderRecoveryState: 0, controllerEpoch: token.epoch, version: 0 })
    expect(onDisk.partitionStates.few).toHaveLength(1)
    expect(onDisk.configs.topics.few).toEqual({ 'retention.ms': String(configs) })
    // The next sliced write holds all of it too, and a reopened store reads it back.
    await store.updatePartitionStates(token, [{ topic: 'many', partition: 7, state: { ...state(0), leaderAndIsr: { ...state(0).leaderAndIsr, leaderEpoch: 1 } } }])
    await store.close()
    const reopened = EmbeddedStore.open(dir, 0)
    const states = await reopened.getPartitionStates([{ topic: 'many', partition: 7 }, { topic: 'many', partition: n - 1 }, { topic: 'few', partition: 0 }])
    expect(states.get('many:7')?.leaderAndIsr).toMatchObject({ leaderEpoch: 1, partitionEpoch: 1 })
    expect(states.size).toBe(3)
    expect(await reopened.getEntityConfig('topics', 'few')).toEqual({ 'retention.ms': String(configs) })
    await reopened.close()
  })
})
