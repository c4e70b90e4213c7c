// Two registry instances on one broker: one primary elected through the group protocol ("sr"), writes
// sent to the secondary forwarded to the primary and visible on the secondary right after, the primary
// stopped and the secondary taking over, and no id ever assigned twice. The election's JSON formats are
// Confluent's (SchemaRegistryIdentity, SchemaRegistryProtocol.Assignment).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RegistryNode, assignLeader, decodeAssignment, decodeIdentity, encodeAssignment, encodeIdentity } from '../../src/registry/index.js'
import { freePort, startTestBroker, type TestBroker } from '../harness/index.js'
import { type RegistryHttp, serveRegistry } from './http-adapter.js'

describe('election formats', () => {
  it('writes identities and assignments as Confluent does and picks the smallest URL', () => {
    const a = { host: 'b-host', port: 8081, scheme: 'http', leaderEligibility: true }
    const b = { host: 'a-host', port: 8081, scheme: 'http', leaderEligibility: true }
    const c = { host: '0-host', port: 8081, scheme: 'http', leaderEligibility: false }
    expect(encodeIdentity(a).toString()).toBe('{"version":1,"host":"b-host","port":8081,"master_eligibility":true,"scheme":"http","leader":false}')
    expect(decodeIdentity(encodeIdentity(b))).toEqual(b)
    const assignment = assignLeader([
      { memberId: 'm-a', identity: a },
      { memberId: 'm-b', identity: b },
      { memberId: 'm-c', identity: c },
    ])
    expect(assignment).toEqual({ error: 0, leader: 'm-b', leaderIdentity: b })
    expect(encodeAssignment(assignment).toString()).toBe('{"version":1,"error":0,"master":"m-b","master_identity":{"version":1,"host":"a-host","port":8081,"master_eligibility":true,"scheme":"http","leader":false}}')
    expect(decodeAssignment(encodeAssignment(assignment))).toEqual(assignment)
    expect(assignLeader([{ memberId: 'x', identity: a }, { memberId: 'y', identity: a }]).error).toBe(1)
  })
})

describe('two instances', () => {
  let tb: TestBroker
  const nodes: RegistryNode[] = []
  const fronts: RegistryHttp[] = []

  async function instance(): Promise<{ node: RegistryNode; url: string }> {
    const port = await freePort()
    const node = new RegistryNode({ bootstrapServers: tb.bootstrap, identity: { host: '127.0.0.1', port }, groupId: 'registry-test', sessionTimeoutMs: 6000, heartbeatIntervalMs: 200 })
    nodes.push(node)
    fronts.push(await serveRegistry((req) => node.handle(req), port))
    await node.start()
    return { node, url: `http://127.0.0.1:${port}` }
  }

  const post = async (url: string, path: string, body: unknown) => {
    const res = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as any }
  }
  const get = async (url: string, path: string) => {
    const res = await fetch(url + path)
    return { status: res.status, body: (await res.json()) as any }
  }

  beforeAll(async () => {
    tb = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
  })

  afterAll(async () => {
    for (const n of nodes) await n.stop().catch(() => undefined)
    for (const f of fronts) await f.close().catch(() => undefined)
    await tb?.stop()
  })

  it('elects one primary, forwards writes to it, and hands over when it stops', async () => {
    const one = await instance()
    const two = await instance()
    const deadline = Date.now() + 30_000
    while (!(one.node.isPrimary !== two.node.isPrimary && one.node.elector.leader && two.node.elector.leader)) {
      if (Date.now() > deadline) throw new Error('no single primary was elected')
      await new Promise((r) => setTimeout(r, 100))
    }
    await one.node.waitForPrimary()
    await two.node.waitForPrimary()
    const [primary, secondary] = one.node.isPrimary ? [one, two] : [two, one]
    // The primary is the instance with the smaller URL.
    expect(primary.url < secondary.url).toBe(true)

    // A write sent to the secondary is done by the primary and visible on the secondary at once.
    expect(await post(secondary.url, '/subjects/s/versions', { schema: '"string"' })).toEqual({ status: 200, body: { id: 1 } })
    expect((await get(secondary.url, '/subjects/s/versions/latest')).body).toEqual({ subject: 's', version: 1, id: 1, schema: '"string"' })
    expect(await post(primary.url, '/subjects/t/versions', { schema: '"int"' })).toEqual({ status: 200, body: { id: 2 } })
    // Errors come back from the primary as they are.
    expect((await post(secondary.url, '/subjects/s/versions', { schema: '{"type":"bogus"}' })).body.error_code).toBe(42201)

    // The primary goes away: the secondary is elected and continues the ids.
    await primary.node.stop()
    const handover = Date.now() + 30_000
    while (!secondary.node.isPrimary) {
      if (Date.now() > handover) throw new Error('the secondary did not take over')
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(await post(secondary.url, '/subjects/u/versions', { schema: '"long"' })).toEqual({ status: 200, body: { id: 3 } })
    const ids = [1, 2, 3].map((id) => secondary.node.service.state.versionsById('.', id).map((v) => v.subject))
    expect(ids).toEqual([['s'], ['t'], ['u']])
  })
})
