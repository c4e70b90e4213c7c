// Skein's ZooKeeper client against real ZooKeeper servers (Debian's 3.8, started by the harness): CRUD,
// typed errors, sequential names, ephemerals and session expiry, one-shot watches, the version-0 trap in
// multi that node-zookeeper-client falls into, a controller-election race, chroot, reconnect and
// SetWatches, the reply-size limit, and failover inside a 3-node ensemble after SIGKILL.
import { once } from 'node:events'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  ANY_VERSION,
  CREATOR_ALL_ACL,
  CreateMode,
  Op,
  ZooKeeperClient,
  ZooKeeperError,
  ZooKeeperErrorCode,
  ZooKeeperMultiError,
  isZooKeeperError,
  type NodeData,
  type WatchEvent,
  type ZooKeeperClientOptions,
} from '../../src/cluster/zookeeper/index.js'
import { startZooKeeper, startZooKeeperEnsemble, zookeeperMissing, type ZooKeeperTestServer } from '../harness/zookeeper.js'

const MISSING = zookeeperMissing()

/** A one-shot watcher that records every call (to prove it fires once) and resolves on the first. */
function recorder(): { watch: (e: WatchEvent) => void; fired: Promise<WatchEvent>; events: WatchEvent[] } {
  const events: WatchEvent[] = []
  let resolve!: (e: WatchEvent) => void
  const fired = new Promise<WatchEvent>((r) => (resolve = r))
  return {
    events,
    fired,
    watch: (e) => {
      events.push(e)
      resolve(e)
    },
  }
}

async function expectCode(p: Promise<unknown>, code: number): Promise<ZooKeeperError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err, `expected ${code}`).toBeInstanceOf(ZooKeeperError)
  expect((err as ZooKeeperError).codeName).toBe(new ZooKeeperError(code).codeName)
  return err as ZooKeeperError
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)))]).finally(() =>
    clearTimeout(timer),
  )
}

/** Retries op while it fails with CONNECTIONLOSS (what a caller does across a failover). */
async function retrying<T>(op: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await op()
    } catch (err) {
      if (!isZooKeeperError(err, ZooKeeperErrorCode.CONNECTIONLOSS) || attempt > 50) throw err
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

describe.skipIf(MISSING !== undefined)('ZooKeeper client against a standalone ZooKeeper', () => {
  let zk: ZooKeeperTestServer
  const clients: ZooKeeperClient[] = []
  let rootCounter = 0
  let root = ''

  beforeAll(async () => {
    zk = await startZooKeeper({ tickTime: 500 })
  })
  afterAll(async () => {
    await zk?.stop()
  })
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()))
  })

  async function client(options: ZooKeeperClientOptions = {}, chroot = ''): Promise<ZooKeeperClient> {
    const c = await ZooKeeperClient.connect(zk.connectString + chroot, { sessionTimeoutMs: 4000, ...options })
    clients.push(c)
    return c
  }

  /** A fresh subtree per test, so tests sharing the server never see each other's znodes. */
  async function freshRoot(c: ZooKeeperClient): Promise<string> {
    root = `/t${++rootCounter}`
    await c.create(root)
    return root
  }

  it('negotiates a session and creates, reads, updates and deletes with exact versions', async () => {
    const c = await client()
    expect(c.state).toBe('connected')
    expect(c.sessionId).not.toBe(0n)
    expect(c.negotiatedTimeoutMs).toBe(4000)
    expect(c.connectedServer).toBe(zk.connectString)
    const r = await freshRoot(c)

    expect(await c.create(`${r}/a`, 'hello')).toBe(`${r}/a`)
    const read = await c.getData(`${r}/a`)
    expect(read.data.toString()).toBe('hello')
    expect(read.stat.version).toBe(0)
    expect(read.stat.dataLength).toBe(5)
    expect(read.stat.ephemeralOwner).toBe(0n)

    const stat1 = await c.setData(`${r}/a`, Buffer.from('world'), 0)
    expect(stat1.version).toBe(1)
    await expectCode(c.setData(`${r}/a`, 'stale', 0), ZooKeeperErrorCode.BADVERSION)
    expect((await c.setData(`${r}/a`, 'any', ANY_VERSION)).version).toBe(2)

    const created = await c.create2(`${r}/b`, '')
    expect(created.path).toBe(`${r}/b`)
    expect(created.stat.version).toBe(0)
    expect((await c.exists(`${r}/b`))?.czxid).toBe(created.stat.czxid)
    expect(await c.exists(`${r}/missing`)).toBeNull()

    const { children, stat } = await c.getChildren2(r)
    expect(children.sort()).toEqual(['a', 'b'])
    expect(stat.numChildren).toBe(2)
    expect((await c.getChildren(r)).sort()).toEqual(['a', 'b'])

    // delete honours version 0 too: the node is at version 2.
    await expectCode(c.delete(`${r}/a`, 0), ZooKeeperErrorCode.BADVERSION)
    await c.delete(`${r}/a`, 2)
    await c.delete(`${r}/b`, ANY_VERSION)
    expect(await c.getChildren(r)).toEqual([])
    await c.sync(r)
  })

  it('answers with typed error codes, and rejects bad arguments before sending', async () => {
    const c = await client()
    const r = await freshRoot(c)
    await c.create(`${r}/p`, '')
    await c.create(`${r}/p/child`, '')
    await c.create(`${r}/eph`, '', { mode: CreateMode.EPHEMERAL })

    await expectCode(c.getData(`${r}/nope`), ZooKeeperErrorCode.NONODE)
    await expectCode(c.setData(`${r}/nope`, 'x', ANY_VERSION), ZooKeeperErrorCode.NONODE)
    await expectCode(c.delete(`${r}/nope`, ANY_VERSION), ZooKeeperErrorCode.NONODE)
    await expectCode(c.create(`${r}/nope/x`, ''), ZooKeeperErrorCode.NONODE)
    const exists = await expectCode(c.create(`${r}/p`, ''), ZooKeeperErrorCode.NODEEXISTS)
    expect(exists.path).toBe(`${r}/p`)
    expect(exists.code).toBe(-110)
    await expectCode(c.delete(`${r}/p`, ANY_VERSION), ZooKeeperErrorCode.NOTEMPTY)
    await expectCode(c.create(`${r}/eph/child`, ''), ZooKeeperErrorCode.NOCHILDRENFOREPHEMERALS)

    for (const bad of ['relative', `${r}/trailing/`, `${r}//double`, `${r}/./dot`, '']) {
      await expectCode(c.getData(bad), ZooKeeperErrorCode.BADARGUMENTS)
    }
    await expectCode(c.setData(`${r}/p`, 'x', 1.5), ZooKeeperErrorCode.BADARGUMENTS)
    await expectCode(c.setData(`${r}/p`, 'x', -2), ZooKeeperErrorCode.BADARGUMENTS)
    // The connection is unharmed.
    expect((await c.getData(`${r}/p`)).stat.numChildren).toBe(1)
  })

  it('names sequential znodes with the parent counter in 10 digits', async () => {
    const c = await client()
    const r = await freshRoot(c)
    const a = await c.create(`${r}/item-`, 'a', { mode: CreateMode.PERSISTENT_SEQUENTIAL })
    const b = await c.create(`${r}/item-`, 'b', { mode: CreateMode.PERSISTENT_SEQUENTIAL })
    const e = await c.create(`${r}/eph-`, 'e', { mode: CreateMode.EPHEMERAL_SEQUENTIAL })
    expect(a).toBe(`${r}/item-0000000000`)
    expect(b).toBe(`${r}/item-0000000001`)
    expect(e).toBe(`${r}/eph-0000000002`)
    expect((await c.exists(e))?.ephemeralOwner).toBe(c.sessionId)
    // A trailing slash is allowed for sequential creates: the name is just the counter.
    expect(await c.create(`${r}/`, '', { mode: CreateMode.PERSISTENT_SEQUENTIAL })).toBe(`${r}/0000000003`)
  })

  it('multi: a check of version 0 fails with BADVERSION when the znode is at version 1, and passes at the right version', async () => {
    const c = await client()
    const r = await freshRoot(c)
    const epoch = `${r}/controller_epoch`
    const target = `${r}/state`
    await c.create(epoch, '0')
    await c.create(target, 'initial')

    // At version 0, a check of 0 passes (the first controller's fencing token).
    const fresh = await c.multi([Op.check(epoch, 0), Op.setData(target, 'by epoch 0', ANY_VERSION)])
    expect(fresh[0]).toEqual({ type: 'check' })
    expect(fresh[1]).toMatchObject({ type: 'setData', stat: { version: 1 } })

    await c.setData(epoch, '1', 0) // the epoch znode moves to version 1
    const err = await expectCode(c.multi([Op.check(epoch, 0), Op.setData(target, 'stale write', ANY_VERSION)]), ZooKeeperErrorCode.BADVERSION)
    expect(err).toBeInstanceOf(ZooKeeperMultiError)
    expect((err as ZooKeeperMultiError).opIndex).toBe(0)
    expect((err as ZooKeeperMultiError).results).toEqual([ZooKeeperErrorCode.BADVERSION, ZooKeeperErrorCode.RUNTIMEINCONSISTENCY])
    expect((await c.getData(target)).data.toString()).toBe('by epoch 0') // nothing applied

    // setData and delete inside a multi keep version 0 as well.
    await expectCode(c.multi([Op.setData(epoch, '2', 0)]), ZooKeeperErrorCode.BADVERSION)
    await expectCode(c.multi([Op.delete(epoch, 0)]), ZooKeeperErrorCode.BADVERSION)
    expect((await c.getData(epoch)).stat.version).toBe(1)

    const ok = await c.conditionalMulti(epoch, 1, [Op.setData(target, 'by epoch 1', 1)])
    expect(ok).toEqual([{ type: 'setData', stat: expect.objectContaining({ version: 2 }) }])
    const guarded = await expectCode(c.conditionalMulti(epoch, 0, [Op.setData(target, 'x', ANY_VERSION)]), ZooKeeperErrorCode.BADVERSION)
    expect((guarded as ZooKeeperMultiError).opIndex).toBe(0)
  })

  it('multi returns per-op results, and per-op codes when it fails with nothing applied', async () => {
    const c = await client()
    const r = await freshRoot(c)
    await c.create(`${r}/gone`, '')
    const results = await c.multi([
      Op.create(`${r}/new`, 'n'),
      Op.create(`${r}/seq-`, 's', CreateMode.PERSISTENT_SEQUENTIAL),
      Op.setData(`${r}/new`, 'n2', 0),
      Op.delete(`${r}/gone`, 0),
      Op.check(`${r}/new`, 1),
    ])
    expect(results).toEqual([
      { type: 'create', path: `${r}/new` },
      { type: 'create', path: `${r}/seq-0000000002` },
      { type: 'setData', stat: expect.objectContaining({ version: 1 }) },
      { type: 'delete' },
      { type: 'check' },
    ])

    const err = await expectCode(c.multi([Op.create(`${r}/a`, ''), Op.create(`${r}/new`, ''), Op.delete(`${r}/seq-0000000002`, ANY_VERSION)]), ZooKeeperErrorCode.NODEEXISTS)
    const multiErr = err as ZooKeeperMultiError
    expect(multiErr.opIndex).toBe(1)
    expect(multiErr.path).toBe(`${r}/new`)
    expect(multiErr.results).toEqual([ZooKeeperErrorCode.OK, ZooKeeperErrorCode.NODEEXISTS, ZooKeeperErrorCode.RUNTIMEINCONSISTENCY])
    expect(await c.exists(`${r}/a`)).toBeNull()
    expect(await c.exists(`${r}/seq-0000000002`)).not.toBeNull()
    expect(await c.multi([])).toEqual([])
  })

  it('a burst waits in order behind maxOpsInFlight operations, so the answers keep dating contact (msSinceContact) from recent sends', async () => {
    // A controller failover at scale writes tens of thousands of ISR changes at once. Written all at once,
    // every answer came for a request sent at the start of the burst: msSinceContact grew to the burst's
    // whole length (a second at 66,000 changes) and the broker's lease lapsed on a server that was only busy.
    const c = await client({ maxOpsInFlight: 500 })
    const r = await freshRoot(c)
    const nodes = Array.from({ length: 100 }, (_, i) => `${r}/n${i}`)
    await c.multi(nodes.map((n) => Op.create(n, '')))
    const started = Date.now()
    const answered: number[] = []
    let maxContactMs = 0
    let maxOpsInFlight = 0
    const note = (i: number): void => {
      answered.push(i)
      maxContactMs = Math.max(maxContactMs, c.msSinceContact)
      maxOpsInFlight = Math.max(maxOpsInFlight, c.testHooks.opsInFlight())
    }
    // 400 multis of 100 writes each, with a read after every tenth: 40,040 operations.
    const burst: Promise<unknown>[] = []
    for (let i = 0; i < 400; i++) {
      burst.push(c.multi(nodes.map((n) => Op.setData(n, `v${i}`, ANY_VERSION))).then(() => note(i * 2)))
      if (i % 10 === 9) burst.push(c.getData(nodes[0]!).then(() => note(i * 2 + 1)))
    }
    maxOpsInFlight = Math.max(maxOpsInFlight, c.testHooks.opsInFlight())
    await Promise.all(burst)
    const burstMs = Date.now() - started
    expect(maxOpsInFlight).toBeLessThanOrEqual(500)
    // Answered in the order issued, and the last write is what the nodes hold.
    expect(answered).toEqual([...answered].sort((a, b) => a - b))
    expect((await c.getData(nodes[99]!)).data.toString()).toBe('v399')
    // Each answer was for a request sent at most a few hundred operations earlier, not at the burst's start.
    expect(maxContactMs, `msSinceContact reached ${maxContactMs} ms in a burst of ${burstMs} ms`).toBeLessThan(Math.max(50, burstMs / 2))
  })

  it('getDataMany (multiRead) answers each read on its own: data and Stat, or NONODE for a missing node; under a chroot too', async () => {
    const admin = await client()
    const r = await freshRoot(admin)
    await admin.create(`${r}/a`, 'alpha')
    await admin.create(`${r}/b`, '')
    await admin.setData(`${r}/b`, 'beta', 0)
    const results = await admin.getDataMany([`${r}/a`, `${r}/missing`, `${r}/b`])
    expect(results).toHaveLength(3)
    const [a, missing, b] = results as [NodeData, { err: number }, NodeData]
    expect(a.data.toString()).toBe('alpha')
    expect(a.stat.version).toBe(0)
    expect(missing).toEqual({ err: ZooKeeperErrorCode.NONODE })
    expect(b.data.toString()).toBe('beta')
    expect(b.stat.version).toBe(1)
    expect(await admin.getDataMany([])).toEqual([])

    // Paths go through the chroot like every other request.
    const chrooted = await client({}, r)
    const viaChroot = (await chrooted.getDataMany(['/b', '/a'])) as NodeData[]
    expect(viaChroot.map((x) => x.data.toString())).toEqual(['beta', 'alpha'])

    // A thousand reads in one request, in the order asked (what a new controller does per chunk).
    const many = Array.from({ length: 1000 }, (_, i) => `${r}/n${i}`)
    await Promise.all(many.map((p, i) => admin.create(p, `v${i}`)))
    const all = (await admin.getDataMany(many)) as NodeData[]
    expect(all.map((x) => x.data.toString())).toEqual(many.map((_, i) => `v${i}`))
    await expectCode(admin.getDataMany(['not-absolute']), ZooKeeperErrorCode.BADARGUMENTS)
  })

  it('controller election race: of two clients doing create /controller + setData /controller_epoch at the read version, exactly one wins', async () => {
    const admin = await client()
    const r = await freshRoot(admin)
    const epochPath = `${r}/controller_epoch`
    const controllerPath = `${r}/controller`
    await admin.create(epochPath, '0')
    const brokers = [await client(), await client()]

    for (let round = 0; round < 4; round++) {
      // Both read the epoch and its zkVersion first, as KafkaController.elect does, then race.
      const reads = await Promise.all(brokers.map((b) => b.getData(epochPath)))
      expect(reads[0]!.stat.version).toBe(round)
      const attempts = brokers.map(async (b, i) => {
        const { data, stat } = reads[i]!
        const epoch = Number(data.toString())
        const payload = JSON.stringify({ version: 2, brokerid: i + 1, timestamp: String(Date.now()), kraftControllerEpoch: -1 })
        try {
          await b.multi([Op.create(controllerPath, payload, CreateMode.EPHEMERAL), Op.setData(epochPath, String(epoch + 1), stat.version)])
          return { won: true as const, epochZkVersion: stat.version + 1 }
        } catch (err) {
          if (isZooKeeperError(err, ZooKeeperErrorCode.NODEEXISTS, ZooKeeperErrorCode.BADVERSION)) return { won: false as const, staleVersion: stat.version }
          throw err
        }
      })
      const outcome = await Promise.all(attempts)
      expect(outcome.filter((o) => o.won)).toHaveLength(1)
      const winner = outcome.findIndex((o) => o.won)
      const loser = 1 - winner

      const controller = JSON.parse((await admin.getData(controllerPath)).data.toString()) as { brokerid: number }
      expect(controller.brokerid).toBe(winner + 1)
      const epochNow = await admin.getData(epochPath)
      expect(epochNow.data.toString()).toBe(String(round + 1))
      expect(epochNow.stat.version).toBe(round + 1)

      // The loser's writes, fenced by the zkVersion it read, are refused; the winner's go through.
      const loserOutcome = outcome[loser]!
      expect(loserOutcome.won).toBe(false)
      await expectCode(brokers[loser]!.conditionalMulti(epochPath, loserOutcome.won ? -1 : loserOutcome.staleVersion, [Op.create(`${r}/by-loser`, '')]), ZooKeeperErrorCode.BADVERSION)
      const winnerOutcome = outcome[winner]!
      await brokers[winner]!.conditionalMulti(epochPath, winnerOutcome.won ? winnerOutcome.epochZkVersion : -1, [Op.create(`${r}/round-${round}`, '')])
      expect(await admin.exists(`${r}/by-loser`)).toBeNull()

      await brokers[winner]!.delete(controllerPath, ANY_VERSION) // resign for the next round
    }
  })

  it('one-shot watches fire once and report the event type', async () => {
    const c = await client()
    const writer = await client()
    const r = await freshRoot(c)
    const p = `${r}/w`

    const created = recorder()
    expect(await c.exists(p, { watch: created.watch })).toBeNull()
    await writer.create(p, 'v0')
    expect(await withTimeout(created.fired, 5000, 'NodeCreated')).toEqual({ type: 'NodeCreated', state: 'SyncConnected', path: p })

    const changed = recorder()
    await c.getData(p, { watch: changed.watch })
    await writer.setData(p, 'v1', ANY_VERSION)
    await writer.setData(p, 'v2', ANY_VERSION)
    expect(await withTimeout(changed.fired, 5000, 'NodeDataChanged')).toMatchObject({ type: 'NodeDataChanged', path: p })
    // ZooKeeper delivers a watch event before the data it announces: once c reads v2, a second firing
    // would already have arrived.
    await c.sync(p)
    expect((await c.getData(p)).data.toString()).toBe('v2')
    expect(changed.events).toHaveLength(1)

    const children = recorder()
    expect(await c.getChildren(p, { watch: children.watch })).toEqual([])
    await writer.create(`${p}/kid`, '')
    expect(await withTimeout(children.fired, 5000, 'NodeChildrenChanged')).toMatchObject({ type: 'NodeChildrenChanged', path: p })

    // One callback on several kinds of watch for the same path fires once for an event that triggers them all.
    const deleted = recorder()
    await c.getData(p, { watch: deleted.watch })
    await c.getChildren(p, { watch: deleted.watch })
    await c.exists(p, { watch: deleted.watch })
    await writer.delete(`${p}/kid`, ANY_VERSION)
    await writer.delete(p, ANY_VERSION)
    const first = await withTimeout(deleted.fired, 5000, 'the first event')
    expect(first).toMatchObject({ type: 'NodeChildrenChanged', path: p })
    await c.sync(p)
    expect(await c.exists(p)).toBeNull()
    expect(deleted.events.map((e) => e.type)).toEqual(['NodeChildrenChanged', 'NodeDeleted'])
    expect(c.watchCount).toBe(0)
  })

  it('watchData and watchChildren re-arm after every change and end with the session', async () => {
    const c = await client()
    const writer = await client()
    const r = await freshRoot(c)
    const p = `${r}/config`

    const seen: Array<string | null> = []
    const waitFor = async (value: string | null): Promise<void> => {
      const deadline = Date.now() + 5000
      while (seen.at(-1) !== value) {
        if (Date.now() > deadline) throw new Error(`watchData never reported ${value}; saw ${JSON.stringify(seen)}`)
        await new Promise((res) => setTimeout(res, 20))
      }
    }
    const ended: Array<WatchEvent | ZooKeeperError> = []
    const handle = c.watchData(p, (node: NodeData | null) => seen.push(node === null ? null : node.data.toString()), { onEnd: (e) => ended.push(e) })
    await waitFor(null)
    await writer.create(p, 'a')
    await waitFor('a')
    await writer.setData(p, 'b', ANY_VERSION)
    await waitFor('b')
    await writer.delete(p, ANY_VERSION)
    await waitFor(null)
    await writer.create(p, 'c')
    await waitFor('c')

    const kids: Array<string[] | null> = []
    const childHandle = c.watchChildren(r, (list) => kids.push(list === null ? null : list.sort()))
    await writer.create(`${r}/x`, '')
    const deadline = Date.now() + 5000
    while (JSON.stringify(kids.at(-1)) !== JSON.stringify(['config', 'x']) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20))
    expect(kids.at(-1)).toEqual(['config', 'x'])
    childHandle.stop()

    handle.stop()
    const count = seen.length
    await writer.setData(p, 'after stop', ANY_VERSION)
    await c.sync(p)
    await c.getData(p)
    expect(seen.length).toBe(count)

    const endedOnClose: Array<WatchEvent | ZooKeeperError> = []
    c.watchData(p, () => {}, { onEnd: (e) => endedOnClose.push(e) })
    await c.sync(p)
    await c.getData(p)
    await c.close()
    expect(endedOnClose).toEqual([{ type: 'None', state: 'Closed', path: p }])
    expect(ended).toEqual([])
  })

  it('ephemerals vanish when their owner closes the session', async () => {
    const owner = await client()
    const observer = await client()
    const r = await freshRoot(owner)
    await owner.create(`${r}/broker-1`, '{}', { mode: CreateMode.EPHEMERAL })
    const stat = await observer.exists(`${r}/broker-1`)
    expect(stat?.ephemeralOwner).toBe(owner.sessionId)

    const gone = recorder()
    await observer.exists(`${r}/broker-1`, { watch: gone.watch })
    const closed = once(owner, 'closed')
    await owner.close()
    await closed
    expect(owner.state).toBe('closed')
    expect(await withTimeout(gone.fired, 5000, 'NodeDeleted')).toMatchObject({ type: 'NodeDeleted', path: `${r}/broker-1` })
    expect(await observer.exists(`${r}/broker-1`)).toBeNull()
    await expectCode(owner.getData('/'), ZooKeeperErrorCode.SESSIONEXPIRED)
  })

  it('session closed by a second client with the same id and password: the first learns it expired, its ephemerals are gone', async () => {
    const a = await client()
    const observer = await client()
    const r = await freshRoot(a)
    await a.create(`${r}/eph`, '', { mode: CreateMode.EPHEMERAL })
    const watchEnded = recorder()
    await a.exists(`${r}/never`, { watch: watchEnded.watch })
    const states: string[] = []
    a.on('state', (s) => states.push(s))

    a.testHooks.pause() // so that it does not take the session back while b holds it
    const b = new ZooKeeperClient(zk.connectString, { sessionId: a.sessionId, sessionPassword: a.sessionPassword, sessionTimeoutMs: 4000 })
    const resumed = (await once(b, 'connected')) as [{ sessionId: bigint; resumed: boolean }]
    expect(resumed[0].sessionId).toBe(a.sessionId)
    expect(resumed[0].resumed).toBe(true)
    await b.close()
    expect(await observer.exists(`${r}/eph`)).toBeNull()

    const expired = once(a, 'session-expired')
    a.testHooks.resume()
    await withTimeout(expired, 10_000, 'session-expired')
    expect(a.state).toBe('expired')
    expect(states.at(-1)).toBe('expired')
    expect(await watchEnded.fired).toEqual({ type: 'None', state: 'Expired', path: `${r}/never` })
    await expectCode(a.getData('/'), ZooKeeperErrorCode.SESSIONEXPIRED)
  })

  it('a client that stops pinging has its session expired by the server, and says so when it comes back', async () => {
    const a = await client({ sessionTimeoutMs: 2000 })
    const observer = await client()
    expect(a.negotiatedTimeoutMs).toBe(2000)
    const r = await freshRoot(a)
    await a.create(`${r}/eph`, '', { mode: CreateMode.EPHEMERAL })
    const gone = recorder()
    await observer.exists(`${r}/eph`, { watch: gone.watch })

    const disconnected = once(a, 'disconnected')
    a.testHooks.pause()
    // The server expires the silent session after ~2 s (plus a tick) and closes its connection.
    expect(await withTimeout(gone.fired, 8000, 'the ephemeral to vanish')).toMatchObject({ type: 'NodeDeleted' })
    await withTimeout(disconnected, 8000, 'the server to close the connection')
    const pending = a.getData(`${r}/eph`) // queued while disconnected, failed by the expiry
    const expired = once(a, 'session-expired')
    a.testHooks.resume()
    await withTimeout(expired, 8000, 'session-expired')
    await expectCode(pending, ZooKeeperErrorCode.SESSIONEXPIRED)
  })

  it('in-flight requests fail with CONNECTIONLOSS on a dropped connection; the session, queued requests and watches survive', async () => {
    const c = await client()
    const writer = await client()
    const r = await freshRoot(c)
    await c.create(`${r}/node`, 'v0')
    await c.create(`${r}/eph`, '', { mode: CreateMode.EPHEMERAL })
    const changed = recorder()
    await c.getData(`${r}/node`, { watch: changed.watch })
    const sessionId = c.sessionId

    const inFlight = c.getData(`${r}/node`)
    const reconnected = once(c, 'connected')
    c.testHooks.dropConnection()
    await expectCode(inFlight, ZooKeeperErrorCode.CONNECTIONLOSS)
    expect(c.state).toBe('disconnected')
    const queued = c.getData(`${r}/node`) // waits for the next connection
    const [info] = (await withTimeout(reconnected, 10_000, 'reconnect')) as [{ sessionId: bigint; resumed: boolean }]
    expect(info.resumed).toBe(true)
    expect(info.sessionId).toBe(sessionId)
    expect((await queued).data.toString()).toBe('v0')
    expect(await writer.exists(`${r}/eph`)).not.toBeNull()

    // The watch set before the drop was re-registered (SetWatches) and fires on the next change.
    await writer.setData(`${r}/node`, 'v1', ANY_VERSION)
    expect(await withTimeout(changed.fired, 5000, 'the re-registered watch')).toMatchObject({ type: 'NodeDataChanged' })

    // A change made while the client was away fires its watch as soon as it is back.
    const missed = recorder()
    await c.getData(`${r}/node`, { watch: missed.watch })
    c.testHooks.pause() // hold the reconnect until the change is made
    c.testHooks.dropConnection()
    await writer.setData(`${r}/node`, 'v2', ANY_VERSION)
    expect(missed.events).toEqual([])
    const back = once(c, 'connected')
    c.testHooks.resume()
    await withTimeout(back, 10_000, 'reconnect')
    expect(await withTimeout(missed.fired, 5000, 'the missed change')).toMatchObject({ type: 'NodeDataChanged', path: `${r}/node` })
  })

  it('chroot: paths are relative to it on the wire and in sequential names and watch events', async () => {
    const admin = await client()
    const chroot = `/chroot-${Date.now()}/skein`
    const c = new ZooKeeperClient(`${zk.connectString}${chroot}`, { sessionTimeoutMs: 4000 })
    clients.push(c)
    await c.waitUntilConnected(10_000)
    expect(c.chroot).toBe(chroot)
    await expectCode(c.create('/brokers', ''), ZooKeeperErrorCode.NONODE) // the chroot is not created implicitly
    await c.ensureChroot()
    expect(await admin.exists(chroot)).not.toBeNull()

    expect(await c.mkdirp('/brokers/ids')).toBe(true)
    expect(await admin.getChildren(`${chroot}/brokers`)).toEqual(['ids'])
    expect(await c.create('/brokers/ids/1', 'b1', { mode: CreateMode.EPHEMERAL })).toBe('/brokers/ids/1')
    expect(await c.create('/brokers/seq-', '', { mode: CreateMode.PERSISTENT_SEQUENTIAL })).toBe('/brokers/seq-0000000001')
    expect((await admin.getData(`${chroot}/brokers/ids/1`)).data.toString()).toBe('b1')
    expect((await c.getChildren('/')).sort()).toEqual(['brokers'])
    expect((await c.exists('/'))?.czxid).toBe((await admin.exists(chroot))?.czxid)

    const ids = recorder()
    await c.getChildren('/brokers/ids', { watch: ids.watch })
    const data = recorder()
    await c.getData('/brokers/ids/1', { watch: data.watch })
    await admin.create(`${chroot}/brokers/ids/2`, '')
    await admin.setData(`${chroot}/brokers/ids/1`, 'changed', ANY_VERSION)
    expect(await withTimeout(ids.fired, 5000, 'child event')).toMatchObject({ type: 'NodeChildrenChanged', path: '/brokers/ids' })
    expect(await withTimeout(data.fired, 5000, 'data event')).toMatchObject({ type: 'NodeDataChanged', path: '/brokers/ids/1' })

    const results = await c.multi([Op.create('/brokers/seq-', '', CreateMode.PERSISTENT_SEQUENTIAL), Op.check('/brokers/ids/1', 1)])
    expect(results[0]).toEqual({ type: 'create', path: '/brokers/seq-0000000002' })
    const err = await expectCode(c.multi([Op.check('/brokers/ids/1', 0)]), ZooKeeperErrorCode.BADVERSION)
    expect(err.path).toBe('/brokers/ids/1')
  })

  it('mkdirp, createOrGet and ensureChroot leave existing nodes alone', async () => {
    const c = await client()
    const r = await freshRoot(c)
    expect(await c.mkdirp(`${r}/a/b/c`, 'leaf')).toBe(true)
    expect((await c.getData(`${r}/a/b/c`)).data.toString()).toBe('leaf')
    expect((await c.getData(`${r}/a/b`)).data.length).toBe(0)
    expect(await c.mkdirp(`${r}/a/b/c`, 'other')).toBe(false)
    expect((await c.getData(`${r}/a/b/c`)).data.toString()).toBe('leaf')
    expect(await c.mkdirp('/')).toBe(false)

    const first = await c.createOrGet(`${r}/cluster_id`, '{"version":"1","id":"abc"}')
    expect(first.created).toBe(true)
    expect(first.stat.version).toBe(0)
    const second = await c.createOrGet(`${r}/cluster_id`, '{"version":"1","id":"other"}')
    expect(second.created).toBe(false)
    expect(second.data.toString()).toBe('{"version":"1","id":"abc"}')
    expect(second.stat.czxid).toBe(first.stat.czxid)
  })

  it('digest auth: a node with the creator-only ACL is readable by the same identity only', async () => {
    const alice = await client()
    const r = await freshRoot(alice)
    await alice.addAuth('digest', 'alice:secret')
    await alice.create(`${r}/private`, 'mine', { acl: CREATOR_ALL_ACL })
    const anon = await client()
    await expectCode(anon.getData(`${r}/private`), ZooKeeperErrorCode.NOAUTH)
    const again = await client()
    await again.addAuth('digest', 'alice:secret')
    expect((await again.getData(`${r}/private`)).data.toString()).toBe('mine')
    // Credentials are sent again after a reconnect.
    const back = once(again, 'connected')
    again.testHooks.dropConnection()
    await back
    expect((await again.getData(`${r}/private`)).data.toString()).toBe('mine')
  })

  it('refuses a reply larger than jute.maxbuffer from its length prefix; the session carries on', async () => {
    const writer = await client()
    const r = await freshRoot(writer)
    await writer.create(`${r}/big`, Buffer.alloc(64 * 1024, 7))
    await writer.create(`${r}/small`, 'ok')
    const c = await client({ maxBufferBytes: 4096 })
    await c.create(`${r}/mine`, '', { mode: CreateMode.EPHEMERAL })
    const sessionId = c.sessionId
    const reasons: string[] = []
    c.on('disconnected', (why) => reasons.push(why))
    const back = once(c, 'connected')
    const err = await expectCode(c.getData(`${r}/big`), ZooKeeperErrorCode.CONNECTIONLOSS)
    expect(err.message).toMatch(/exceeds the limit of 5120 bytes/)
    expect(reasons[0]).toMatch(/frame of \d+ bytes exceeds/)
    await withTimeout(back, 10_000, 'reconnect')
    expect(c.sessionId).toBe(sessionId)
    expect((await c.getData(`${r}/small`)).data.toString()).toBe('ok')
    expect(await writer.exists(`${r}/mine`)).not.toBeNull()
  })

  it('fails to connect within the connect timeout when nothing listens, and names the servers', async () => {
    const started = Date.now()
    const err = await ZooKeeperClient.connect('127.0.0.1:1', { connectTimeoutMs: 1500 }).then(
      () => undefined,
      (e: unknown) => e as ZooKeeperError,
    )
    expect(err?.code).toBe(ZooKeeperErrorCode.CONNECTIONLOSS)
    expect(err?.message).toMatch(/127\.0\.0\.1:1 answered within 1500 ms/)
    expect(Date.now() - started).toBeLessThan(5000)
  })
})

describe.skipIf(MISSING !== undefined)('ZooKeeper client against a 3-node ensemble', () => {
  it('moves to another member after SIGKILL of its server (the leader), or when its server (a follower) freezes under SIGSTOP, keeping the session, its ephemerals and its watches', async () => {
    const ensemble = await startZooKeeperEnsemble(3, { tickTime: 500 })
    const clients: ZooKeeperClient[] = []
    try {
      // The harder case: the client's server is the ensemble's leader, so the survivors must elect a
      // new one before they serve. Clients pick a random member; open them until one lands on the leader.
      const modes = await Promise.all(ensemble.servers.map((s) => s.mode()))
      const leader = ensemble.servers[modes.indexOf('leader')]!
      expect(leader).toBeDefined()
      let c: ZooKeeperClient | undefined
      for (let i = 0; i < 30 && c === undefined; i++) {
        const candidate = await ZooKeeperClient.connect(ensemble.connectString, { sessionTimeoutMs: 6000 })
        if (candidate.connectedServer === leader.address) c = candidate
        else await candidate.close()
      }
      if (c === undefined) throw new Error('no client connected to the leader in 30 tries')
      clients.push(c)
      await c.create('/eph', 'alive', { mode: CreateMode.EPHEMERAL })
      await c.create('/data', 'v0')
      const changed = recorder()
      await c.getData('/data', { watch: changed.watch })
      const sessionId = c.sessionId
      const expired: unknown[] = []
      c.on('session-expired', () => expired.push(true))

      const victim = ensemble.serverAt(c.connectedServer!)!
      expect(victim).toBe(leader)
      const others = ensemble.servers.filter((s) => s !== victim)
      const observer = await ZooKeeperClient.connect(others.map((s) => s.address).join(','), { sessionTimeoutMs: 6000 })
      clients.push(observer)

      const started = Date.now()
      const disconnected = once(c, 'disconnected')
      const reconnected = once(c, 'connected')
      victim.kill('SIGKILL')
      await victim.waitForExit()
      await withTimeout(disconnected, 5000, 'the disconnect')
      // Change the data while the client is moving: the watch must still report it.
      await retrying(() => observer.setData('/data', 'v1', ANY_VERSION))
      const [info] = (await withTimeout(reconnected, 10_000, 'the reconnect')) as [{ server: string; sessionId: bigint; resumed: boolean }]
      const failoverMs = Date.now() - started
      expect(info.server).not.toBe(victim.address)
      expect(others.map((s) => s.address)).toContain(info.server)
      expect(info.sessionId).toBe(sessionId)
      expect(info.resumed).toBe(true)
      expect(failoverMs).toBeLessThan(6000) // within the session timeout

      expect(await withTimeout(changed.fired, 5000, 'the data watch')).toMatchObject({ type: 'NodeDataChanged', path: '/data' })
      const eph = await retrying(() => observer.exists('/eph'))
      expect(eph?.ephemeralOwner).toBe(sessionId)
      expect((await retrying(() => c.getData('/data'))).data.toString()).toBe('v1')
      await retrying(() => c.setData('/eph', 'still mine', ANY_VERSION))
      expect(expired).toEqual([])
      expect(c.state).toBe('connected')

      // A server that stops answering (SIGSTOP) without closing its sockets: the client gives up on it
      // after two thirds of the session timeout and resumes the session elsewhere.
      await victim.start()
      let d: ZooKeeperClient | undefined
      let frozen: (typeof ensemble.servers)[number] | undefined
      for (let i = 0; i < 30 && d === undefined; i++) {
        const candidate = await ZooKeeperClient.connect(ensemble.connectString, { sessionTimeoutMs: 3000 })
        const on = ensemble.serverAt(candidate.connectedServer!)
        if (on !== undefined && (await on.mode()) === 'follower') {
          d = candidate
          frozen = on
        } else await candidate.close()
      }
      if (d === undefined || frozen === undefined) throw new Error('no client connected to a follower in 30 tries')
      clients.push(d)
      await d.create('/eph-d', '', { mode: CreateMode.EPHEMERAL })
      const frozenAt = Date.now()
      const gaveUp = once(d, 'disconnected')
      const moved = once(d, 'connected')
      frozen.kill('SIGSTOP')
      try {
        const [why] = (await withTimeout(gaveUp, 5000, 'the read timeout')) as [string]
        expect(why).toMatch(/no answer from/)
        expect(Date.now() - frozenAt).toBeGreaterThanOrEqual(1900) // 2/3 of 3000 ms, not sooner
        const [next] = (await withTimeout(moved, 5000, 'the move')) as [{ server: string; resumed: boolean }]
        expect(next.server).not.toBe(frozen.address)
        expect(next.resumed).toBe(true)
        expect((await retrying(() => d.exists('/eph-d')))?.ephemeralOwner).toBe(d.sessionId)
      } finally {
        frozen.kill('SIGCONT')
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()))
      await ensemble.stop()
    }
  })
})
