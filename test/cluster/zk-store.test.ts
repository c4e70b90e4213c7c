// The ZooKeeper MetadataStore against a real ZooKeeper (Debian's 3.8): Kafka's znode layout and JSON read
// back with the plain client, controller election and fencing (a deposed controller's multi fails and
// changes nothing; version 0 is honoured, the npm client's trap), conditional partition-state writes,
// broker registration with the czxid as epoch, a lost session (new epoch, watches re-armed), topic
// deletion, config change notifications, producer-id blocks, and partition states updated many to a multi.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ControllerMovedError, TopicExistsError, partitionKey, type PartitionState } from '../../src/cluster/metadata-store.js'
import { PARTITION_STATES_PER_MULTI, ZkStore } from '../../src/cluster/zk-store.js'
import { ZooKeeperClient, ZooKeeperErrorCode, isZooKeeperError } from '../../src/cluster/zookeeper/index.js'
import { startZooKeeper, zookeeperMissing, type ZooKeeperTestServer } from '../harness/zookeeper.js'

const MISSING = zookeeperMissing()

function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  return new Promise((resolve, reject) => {
    const tick = async (): Promise<void> => {
      if (await check()) return resolve()
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`))
      setTimeout(() => void tick(), 50)
    }
    void tick()
  })
}

const registration = (id: number, rack: string | null = null) => ({
  id,
  endpoints: [
    { listenerName: 'PLAINTEXT', host: '127.0.0.1', port: 9090 + id, securityProtocol: 'PLAINTEXT' },
    { listenerName: 'REPLICATION', host: '127.0.0.1', port: 9190 + id, securityProtocol: 'PLAINTEXT' },
  ],
  rack,
})

const state = (leader: number, leaderEpoch: number, isr: number[], partitionEpoch: number, controllerEpoch: number): PartitionState => ({
  leaderAndIsr: { leader, leaderEpoch, isr, leaderRecoveryState: 0, partitionEpoch },
  controllerEpoch,
})

describe.skipIf(MISSING !== undefined)('ZkStore against a real ZooKeeper', () => {
  let zk: ZooKeeperTestServer
  let raw: ZooKeeperClient
  const stores: ZkStore[] = []
  let chrootN = 0

  beforeAll(async () => {
    zk = await startZooKeeper()
    raw = await ZooKeeperClient.connect(zk.connectString)
  }, 60_000)

  afterAll(async () => {
    for (const s of stores) await s.close().catch(() => {})
    await raw?.close()
    await zk?.stop()
  })

  async function open(chroot: string, sessionTimeoutMs = 6000): Promise<ZkStore> {
    const s = new ZkStore({ connect: `${zk.connectString}${chroot}`, sessionTimeoutMs, connectionTimeoutMs: 10_000 })
    await s.start()
    stores.push(s)
    return s
  }

  async function waitFor(ok: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!ok()) {
      if (Date.now() > deadline) throw new Error('timed out')
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  const json = async (path: string): Promise<unknown> => JSON.parse((await raw.getData(path)).data.toString('utf8'))

  it("tells another broker's store when ACLs change (literal and prefixed), as Kafka's change notifications do", async () => {
    const root = `/acl-watch-${++chrootN}`
    const writer = await open(root)
    const watcher = await open(root)
    let fired = 0
    const unwatch = watcher.watchAclChanges(() => fired++)
    const acl = { principal: 'User:alice', permissionType: 'Allow', operation: 'Read', host: '*' }
    await writer.setResourceAcls({ patternType: 'LITERAL', resourceType: 'Topic', name: 'orders' }, [acl])
    await waitFor(() => fired >= 1)
    const afterLiteral = fired
    await writer.setResourceAcls({ patternType: 'PREFIXED', resourceType: 'Topic', name: 'ord' }, [acl])
    await waitFor(() => fired > afterLiteral)
    unwatch()
    const afterUnwatch = fired
    await writer.setResourceAcls({ patternType: 'LITERAL', resourceType: 'Topic', name: 'other' }, [acl])
    await new Promise((r) => setTimeout(r, 500))
    expect(fired).toBe(afterUnwatch)
  })

  it('creates the chroot and Kafka persistent paths, and writes Kafka JSON that reads back', async () => {
    const root = `/kafka-layout-${++chrootN}`
    const store = await open(root)
    for (const p of ['/consumers', '/brokers/ids', '/brokers/topics', '/brokers/seqid', '/config/changes', '/config/topics', '/config/brokers', '/config/users', '/config/clients', '/config/groups', '/admin/delete_topics', '/isr_change_notification', '/latest_producer_id_block', '/log_dir_event_notification']) {
      expect(await raw.exists(root + p), p).not.toBeNull()
    }
    expect(await store.getOrCreateClusterId('firstId')).toBe('firstId')
    expect(await store.getOrCreateClusterId('secondId')).toBe('firstId')
    expect(await json(`${root}/cluster/id`)).toEqual({ version: '1', id: 'firstId' })

    const epoch = await store.registerBroker(registration(1, 'r1'), 1000)
    const stat = await raw.exists(`${root}/brokers/ids/1`)
    expect(epoch).toBe(stat!.czxid)
    expect(stat!.ephemeralOwner).not.toBe(0n)
    const reg = (await json(`${root}/brokers/ids/1`)) as Record<string, unknown>
    expect(reg).toMatchObject({
      version: 5,
      host: '127.0.0.1',
      port: 9091,
      jmx_port: -1,
      endpoints: ['PLAINTEXT://127.0.0.1:9091', 'REPLICATION://127.0.0.1:9191'],
      rack: 'r1',
      listener_security_protocol_map: { PLAINTEXT: 'PLAINTEXT', REPLICATION: 'PLAINTEXT' },
      features: {},
    })
    expect(typeof reg.timestamp).toBe('string')
    expect((await store.getLiveBrokers()).map((b) => ({ id: b.id, rack: b.rack, epoch: b.epoch }))).toEqual([{ id: 1, rack: 'r1', epoch }])

    const token = await store.campaign(1)
    expect(token).toEqual({ epoch: 1, epochVersion: 1 })
    const controller = (await json(`${root}/controller`)) as Record<string, unknown>
    expect(controller).toMatchObject({ version: 2, brokerid: 1, kraftControllerEpoch: -1 })
    expect(typeof controller.timestamp).toBe('string')
    expect((await raw.getData(`${root}/controller_epoch`)).data.toString()).toBe('1')

    await store.createTopic({ name: 'orders', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: [{ replicas: [1], addingReplicas: [], removingReplicas: [] }] }, { 'retention.ms': '1000' })
    expect(await json(`${root}/brokers/topics/orders`)).toEqual({ version: 3, topic_id: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: { '0': [1] }, adding_replicas: {}, removing_replicas: {} })
    expect(await json(`${root}/config/topics/orders`)).toEqual({ version: 1, config: { 'retention.ms': '1000' } })
    await expect(store.createTopic({ name: 'orders', topicId: null, partitions: [] }, {})).rejects.toBeInstanceOf(TopicExistsError)

    const created = await store.createPartitionStates(token, [{ topic: 'orders', partition: 0, state: state(1, 0, [1], 0, 1) }])
    expect(created.created.get(partitionKey('orders', 0))).toMatchObject({ leader: 1, partitionEpoch: 0 })
    expect(await json(`${root}/brokers/topics/orders/partitions/0/state`)).toEqual({ version: 1, leader: 1, leader_epoch: 0, controller_epoch: 1, isr: [1] })

    await store.setEntityConfig('topics', 'orders', { 'retention.ms': '2000' })
    const changes = await raw.getChildren(`${root}/config/changes`)
    expect(changes).toHaveLength(1)
    expect(changes[0]).toMatch(/^config_change_\d{10}$/)
    expect(await json(`${root}/config/changes/${changes[0]}`)).toEqual({ version: 2, entity_path: 'topics/orders' })

    expect(await store.allocateProducerIdBlock(1, 1000)).toEqual({ firstProducerId: 0, lastProducerId: 999 })
    expect(await store.allocateProducerIdBlock(2, 1000)).toEqual({ firstProducerId: 1000, lastProducerId: 1999 })
    expect(await json(`${root}/latest_producer_id_block`)).toEqual({ version: 1, broker: 2, block_start: '1000', block_end: '1999' })

    await store.queueTopicDeletions(['orders'])
    expect(await raw.exists(`${root}/admin/delete_topics/orders`)).not.toBeNull()
    expect(await store.queueTopicDeletions(['orders'])).toEqual(['orders'])
  })

  it('honours version 0 in a fencing multi: a stale controller epoch token fails and changes nothing', async () => {
    const root = `/fencing-${++chrootN}`
    const a = await open(root)
    const b = await open(root)
    // Fresh /controller_epoch at version 0, as Kafka's first election finds it.
    await raw.mkdirp(root)
    await raw.create(`${root}/controller_epoch`, '0')
    expect((await raw.exists(`${root}/controller_epoch`))!.version).toBe(0)
    const first = await a.campaign(1)
    expect(first).toEqual({ epoch: 1, epochVersion: 1 })
    await a.createTopic({ name: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAg', partitions: [{ replicas: [1, 2], addingReplicas: [], removingReplicas: [] }] }, {})
    await a.createPartitionStates(first, [{ topic: 't', partition: 0, state: state(1, 0, [1, 2], 0, 1) }])

    // A token at version 0 (the epoch before this election) must be refused: the npm client sent -1.
    const stale = { epoch: 0, epochVersion: 0 }
    await expect(a.updatePartitionStates(stale, [{ topic: 't', partition: 0, state: state(2, 1, [2], 0, 0) }])).rejects.toBeInstanceOf(ControllerMovedError)
    await expect(a.createPartitionStates(stale, [{ topic: 't', partition: 1, state: state(2, 0, [2], 0, 0) }])).rejects.toBeInstanceOf(ControllerMovedError)
    expect(await raw.exists(`${root}/brokers/topics/t/partitions/1/state`)).toBeNull()

    // A partition epoch of 0 when the znode is at 1 is refused too (conditional setData inside the multi).
    const ok = await a.updatePartitionStates(first, [{ topic: 't', partition: 0, state: state(1, 1, [1], 0, 1) }])
    expect(ok.updated.get('t:0')).toMatchObject({ leaderEpoch: 1, partitionEpoch: 1 })
    const conflict = await a.updatePartitionStates(first, [{ topic: 't', partition: 0, state: state(2, 2, [2], 0, 1) }])
    expect(conflict.badVersion).toEqual(['t:0'])

    // Another controller: a's session is deposed by the /controller registration going away.
    await expect(b.campaign(2)).rejects.toBeInstanceOf(ControllerMovedError)
    await a.resign(first)
    expect(await raw.exists(`${root}/controller`)).toBeNull()
    const second = await b.campaign(2)
    expect(second).toEqual({ epoch: 2, epochVersion: 2 })
    await expect(a.updatePartitionStates(first, [{ topic: 't', partition: 0, state: state(1, 2, [1], 1, 1) }])).rejects.toBeInstanceOf(ControllerMovedError)
    await expect(a.deleteTopic(first, 't')).rejects.toBeInstanceOf(ControllerMovedError)
    expect(await json(`${root}/brokers/topics/t/partitions/0/state`)).toEqual({ version: 1, leader: 1, leader_epoch: 1, controller_epoch: 1, isr: [1] })
    expect((await raw.exists(`${root}/brokers/topics/t/partitions/0/state`))!.version).toBe(1)

    // The current controller deletes the topic tree and its config.
    await b.deleteTopic(second, 't')
    expect(await raw.exists(`${root}/brokers/topics/t`)).toBeNull()
    expect(await raw.exists(`${root}/config/topics/t`)).toBeNull()
  })

  it('a lost session: watches are re-armed and fire, the broker registers again with a new epoch, the old controller cannot write', async () => {
    const root = `/expiry-${++chrootN}`
    const a = await open(root, 4000)
    const b = await open(root, 4000)
    const epoch1 = await a.registerBroker(registration(1), 1000)
    await b.registerBroker(registration(2), 1000)
    const tokenA = await a.campaign(1)
    await a.createTopic({ name: 'x', topicId: 'AAAAAAAAAAAAAAAAAAAAAw', partitions: [{ replicas: [1, 2], addingReplicas: [], removingReplicas: [] }] }, {})
    await a.createPartitionStates(tokenA, [{ topic: 'x', partition: 0, state: state(1, 0, [1, 2], 0, tokenA.epoch) }])

    let brokerChanges = 0
    b.watchBrokers(() => brokerChanges++)
    let topicChangesOnA = 0
    a.watchTopics(() => topicChangesOnA++)
    const events: string[] = []
    a.onSession((e) => events.push(e))

    // Freeze a's session (as SIGSTOP would) until the server expires it.
    a.client!.testHooks.pause()
    await until(async () => (await raw.exists(`${root}/brokers/ids/1`)) === null, 20_000, 'the expired registration to vanish')
    await until(() => brokerChanges > 0, 5000, 'b to see broker 1 go')
    expect(await raw.exists(`${root}/controller`)).toBeNull()
    const tokenB = await b.campaign(2)
    expect(tokenB.epoch).toBe(tokenA.epoch + 1)
    // A topic created while a is away: a's watch must fire after its new session.
    await b.createTopic({ name: 'y', topicId: 'AAAAAAAAAAAAAAAAAAAABA', partitions: [{ replicas: [2], addingReplicas: [], removingReplicas: [] }] }, {})

    a.client!.testHooks.resume()
    await until(() => events.includes('reestablished'), 20_000, 'a new session for a')
    expect(events).toEqual(['expired', 'reestablished'])
    await until(() => topicChangesOnA > 0, 5000, 'a re-armed topic watch to fire')
    // The deposed controller's write fails as a whole.
    await expect(a.updatePartitionStates(tokenA, [{ topic: 'x', partition: 0, state: state(1, 1, [1], 0, tokenA.epoch) }])).rejects.toBeInstanceOf(ControllerMovedError)
    expect(await json(`${root}/brokers/topics/x/partitions/0/state`)).toMatchObject({ leader: 1, leader_epoch: 0, controller_epoch: tokenA.epoch })
    const epoch2 = await a.registerBroker(registration(1), 1000)
    expect(epoch2).toBeGreaterThan(epoch1)
    expect((await b.getBroker(1))!.epoch).toBe(epoch2)
  }, 60_000)

  it('waits out a registration of the same broker id left by an earlier session', async () => {
    const root = `/reregister-${++chrootN}`
    const old = await open(root, 4000)
    await old.registerBroker(registration(5), 1000)
    old.client!.testHooks.pause()
    const fresh = await open(root, 4000)
    await expect(fresh.registerBroker(registration(5), 200)).rejects.toThrow(/another ZooKeeper session/)
    const epoch = await fresh.registerBroker(registration(5), 20_000)
    const stat = await raw.exists(`${root}/brokers/ids/5`)
    expect(stat!.czxid).toBe(epoch)
    expect(stat!.ephemeralOwner).toBe(fresh.client!.sessionId)
    old.client!.testHooks.resume()
  }, 60_000)

  it('delivers config change notifications published after it starts watching', async () => {
    const root = `/config-changes-${++chrootN}`
    const writer = await open(root)
    await writer.setEntityConfig('topics', 'before', { a: '1' })
    const reader = await open(root)
    const seen: string[] = []
    reader.watchConfigChanges((changes) => seen.push(...changes.map((c) => `${c.entityType}/${c.entityName}`)))
    await new Promise((r) => setTimeout(r, 200))
    await writer.setEntityConfig('brokers', '<default>', { 'log.retention.bytes': '10' })
    await writer.setEntityConfig('topics', 'after', { b: '2' })
    await until(() => seen.length >= 2, 5000, 'two notifications')
    expect(seen).toEqual(['brokers/<default>', 'topics/after'])
    expect(await reader.getEntityConfig('brokers', '<default>')).toEqual({ 'log.retention.bytes': '10' })
    expect(await reader.getEntityConfig('topics', 'missing')).toEqual({})
  })

  it(`updates partition states ${PARTITION_STATES_PER_MULTI} to a guarded multi; a refused chunk goes one by one, so only the conflicting partitions fail`, async () => {
    const root = `/batched-states-${++chrootN}`
    const store = await open(root)
    const token = await store.campaign(1)
    // More than two chunks, the last one partial.
    const n = PARTITION_STATES_PER_MULTI * 2 + 37
    await store.createTopic({ name: 'big', topicId: 'AAAAAAAAAAAAAAAAAAAAAw', partitions: Array.from({ length: n }, () => ({ replicas: [1, 2], addingReplicas: [], removingReplicas: [] })) }, {})
    // Partition 5's state exists already with other data (a controller that died half-way): only it fails.
    await raw.mkdirp(`${root}/brokers/topics/big/partitions/5`)
    await raw.create(`${root}/brokers/topics/big/partitions/5/state`, JSON.stringify({ version: 1, leader: 2, leader_epoch: 3, controller_epoch: 1, isr: [2] }))
    const writes = Array.from({ length: n }, (_, partition) => ({ topic: 'big', partition, state: state(1, 0, [1, 2], 0, token.epoch) }))
    const created = await store.createPartitionStates(token, writes)
    expect(created.created.size).toBe(n - 1)
    expect([...created.failed.keys()]).toEqual([partitionKey('big', 5)])
    expect((await raw.getChildren(`${root}/brokers/topics/big/partitions`)).length).toBe(n)
    for (const p of [0, PARTITION_STATES_PER_MULTI, n - 1]) {
      expect(await json(`${root}/brokers/topics/big/partitions/${p}/state`)).toEqual({ version: 1, leader: 1, leader_epoch: 0, controller_epoch: token.epoch, isr: [1, 2] })
    }
    expect(await json(`${root}/brokers/topics/big/partitions/5/state`)).toMatchObject({ leader: 2, leader_epoch: 3 })

    // Every partition to leader 2; partition 7 was changed meanwhile (version 1, not 0): it alone is badVersion.
    await raw.setData(`${root}/brokers/topics/big/partitions/7/state`, JSON.stringify({ version: 1, leader: 1, leader_epoch: 0, controller_epoch: token.epoch, isr: [1] }), 0)
    const updates = Array.from({ length: n }, (_, partition) => partition).filter((p) => p !== 5).map((partition) => ({ topic: 'big', partition, state: state(2, 1, [2], 0, token.epoch) }))
    const updated = await store.updatePartitionStates(token, updates)
    expect(updated.badVersion).toEqual([partitionKey('big', 7)])
    expect(updated.failed.size).toBe(0)
    expect(updated.updated.size).toBe(n - 2)
    expect(updated.updated.get(partitionKey('big', n - 1))).toMatchObject({ leader: 2, leaderEpoch: 1, partitionEpoch: 1 })
    expect(await json(`${root}/brokers/topics/big/partitions/${n - 1}/state`)).toEqual({ version: 1, leader: 2, leader_epoch: 1, controller_epoch: token.epoch, isr: [2] })
    expect(await json(`${root}/brokers/topics/big/partitions/7/state`)).toMatchObject({ leader: 1, isr: [1] })
    expect((await raw.exists(`${root}/brokers/topics/big/partitions/7/state`))!.version).toBe(1)

    // A deposed controller's chunks change nothing.
    const stale = { epoch: token.epoch - 1, epochVersion: token.epochVersion - 1 }
    const again = Array.from({ length: n }, (_, partition) => partition).filter((p) => p !== 5 && p !== 7).map((partition) => ({ topic: 'big', partition, state: state(1, 2, [1], 1, token.epoch) }))
    await expect(store.updatePartitionStates(stale, again)).rejects.toBeInstanceOf(ControllerMovedError)
    expect((await raw.exists(`${root}/brokers/topics/big/partitions/${n - 1}/state`))!.version).toBe(1)
    expect((await raw.exists(`${root}/brokers/topics/big/partitions/0/state`))!.version).toBe(1)
  })

  it('reports no controller epoch before the first election and ignores a missing node on reads', async () => {
    const root = `/empty-${++chrootN}`
    const s = await open(root)
    expect(await s.getControllerEpoch()).toBeUndefined()
    expect(await s.getControllerId()).toBe(-1)
    expect(await s.getTopicAssignments(['nope'])).toEqual(new Map())
    expect(await s.getPartitionStates([{ topic: 'nope', partition: 0 }])).toEqual(new Map())
    const err = await raw.getData(`${root}/controller`).catch((e: unknown) => e)
    expect(isZooKeeperError(err, ZooKeeperErrorCode.NONODE)).toBe(true)
  })
})
