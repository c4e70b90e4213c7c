// The web console's JSON API (/console/api) and its static pages (/console/), served with the REST Proxy
// by a broker's HTTP server: cluster and brokers, topics (list, detail with partitions, sizes and
// configs, create, delete), the message browser, consumer groups with lag, throughput counters from the
// broker's metrics; Confluent error bodies for bad input; assets compressed and cached by ETag.
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, Producer, ShareConsumer } from '../../src/client/index.js'
import { call } from '../rest/helpers.js'
import { startWebFront, type WebFrontSetup } from './helpers.js'

let web: WebFrontSetup
let admin: Admin
beforeAll(async () => {
  web = await startWebFront()
  admin = new Admin({ bootstrapServers: web.broker.bootstrap })
})
afterAll(async () => {
  await admin?.close()
  await web?.stop()
})

function getRaw(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${web.base}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('console pages', () => {
  it('serves index.html, app.js and app.css compressed (br over gzip), and 304 for a known ETag', async () => {
    const br = await getRaw('/console/', { 'Accept-Encoding': 'gzip, br' })
    expect(br.status).toBe(200)
    expect(br.headers['content-encoding']).toBe('br')
    expect(br.headers['content-type']).toMatch(/^text\/html/)
    const gz = await getRaw('/console/app.js', { 'Accept-Encoding': 'gzip' })
    expect(gz.headers['content-encoding']).toBe('gzip')
    expect(gz.headers['content-type']).toMatch(/^text\/javascript/)
    const plain = await getRaw('/console/app.css', {})
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.body.toString()).toContain('{')
    const again = await getRaw('/console/app.css', { 'If-None-Match': String(plain.headers.etag) })
    expect(again.status).toBe(304)
    expect((await getRaw('/console/nothing.js', {})).status).toBe(404)
  })
})

describe('console API', () => {
  it('cluster: its id, the controller, each broker with its health', async () => {
    const r = await call(web.base, 'GET', '/console/api/cluster')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ clusterId: web.broker.broker.clusterId, controllerId: web.broker.broker.nodeId, offlinePartitions: 0, underReplicatedPartitions: 0 })
    expect(r.body.brokers).toEqual([{ id: web.broker.broker.nodeId, host: '127.0.0.1', port: web.broker.port, rack: null, controller: true, status: 'up', leaderPartitions: expect.any(Number) }])
    const info = await call(web.base, 'GET', '/console/api/info')
    expect(info.body).toEqual({ websocket: true, schemaRegistry: false, throughputSource: 'broker-metrics' })
  })

  it('topics: create with configs, list with records and size, detail with partitions and configs, delete', async () => {
    const created = await call(web.base, 'POST', '/console/api/topics', { body: { name: 'console-topic', partitions: 3, replicationFactor: 1, configs: { 'retention.ms': 86400000 } } })
    expect(created.status).toBe(201)
    const producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
    for (let i = 0; i < 9; i++) await producer.send({ topic: 'console-topic', partition: i % 3, key: `k${i}`, value: `value ${i}`, headers: { n: String(i) } })
    await producer.close()

    const list = await call(web.base, 'GET', '/console/api/topics')
    const row = list.body.find((t: { name: string }) => t.name === 'console-topic')
    expect(row).toMatchObject({ internal: false, partitions: 3, replicationFactor: 1, underReplicated: 0, records: 9 })
    expect(row.sizeBytes).toBeGreaterThan(9 * 7)

    const detail = await call(web.base, 'GET', '/console/api/topics/console-topic')
    expect(detail.body.partitions).toHaveLength(3)
    expect(detail.body.partitions[1]).toMatchObject({ partition: 1, leader: web.broker.broker.nodeId, replicas: [web.broker.broker.nodeId], isr: [web.broker.broker.nodeId], startOffset: 0, endOffset: 3 })
    expect(detail.body.partitions[1].sizeBytes).toBeGreaterThan(0)
    expect(detail.body.configs.find((c: { name: string }) => c.name === 'retention.ms')).toMatchObject({ value: '86400000', isDefault: false })

    const dup = await call(web.base, 'POST', '/console/api/topics', { body: { name: 'console-topic', partitions: 1 } })
    expect(dup.status).toBe(400)
    expect(dup.body.error_code).toBeGreaterThanOrEqual(40000)

    expect((await call(web.base, 'DELETE', '/console/api/topics/console-topic')).status).toBe(204)
    const after = await call(web.base, 'GET', '/console/api/topics/console-topic')
    expect(after.status).toBe(404)
    expect(after.body).toMatchObject({ error_code: 40403 })
  })

  it('the message browser: a partition from an offset or a timestamp, with keys, values and headers', async () => {
    await admin.createTopics([{ name: 'browsed', numPartitions: 2 }])
    const producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
    const stamps: number[] = []
    for (let i = 0; i < 6; i++) stamps.push((await producer.send({ topic: 'browsed', partition: 0, key: `k${i}`, value: `v${i}`, headers: { h: `x${i}` }, timestamp: 1_700_000_000_000 + i * 1000 })).timestamp)
    await producer.close()
    const r = await call(web.base, 'GET', '/console/api/topics/browsed/records?partition=0&offset=2&limit=3')
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ topic: 'browsed', partition: 0, startOffset: 0, endOffset: 6, nextOffset: 5 })
    expect(r.body.records.map((x: { offset: number; key: string; value: string }) => [x.offset, x.key, x.value])).toEqual([
      [2, 'k2', 'v2'],
      [3, 'k3', 'v3'],
      [4, 'k4', 'v4'],
    ])
    expect(r.body.records[0]).toMatchObject({ timestamp: 1_700_000_002_000, keyFormat: 'string', valueFormat: 'string', headers: [{ key: 'h', value: 'x2' }] })
    const byTime = await call(web.base, 'GET', `/console/api/topics/browsed/records?partition=0&timestamp=${1_700_000_004_500}`)
    expect(byTime.body.records.map((x: { offset: number }) => x.offset)).toEqual([5])
    const empty = await call(web.base, 'GET', '/console/api/topics/browsed/records?partition=1')
    expect(empty.body.records).toEqual([])
    expect((await call(web.base, 'GET', '/console/api/topics/browsed/records?partition=7')).body).toMatchObject({ error_code: 40402 })
    expect((await call(web.base, 'GET', '/console/api/topics/browsed/records?offset=-1')).status).toBe(400)
    expect((await call(web.base, 'GET', '/console/api/topics/browsed/records?encoding=hex')).status).toBe(400)
  })

  it('consumer groups: state, members and lag per partition', async () => {
    await admin.createTopics([{ name: 'lagged', numPartitions: 2 }])
    const producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
    await producer.sendBatch(Array.from({ length: 10 }, (_, i) => ({ topic: 'lagged', partition: i % 2, value: `m${i}` })))
    await producer.close()
    const consumer = new Consumer({ bootstrapServers: web.broker.bootstrap, groupId: 'console-group', enableAutoCommit: false, autoOffsetReset: 'earliest' })
    consumer.subscribe(['lagged'])
    try {
      let got = 0
      const deadline = Date.now() + 15_000
      while (got < 10 && Date.now() < deadline) got += (await consumer.poll(300)).length
      await consumer.commit([{ topic: 'lagged', partition: 0, offset: 2 }, { topic: 'lagged', partition: 1, offset: 5 }])
      const groups = await call(web.base, 'GET', '/console/api/groups')
      expect(groups.body.find((g: { groupId: string }) => g.groupId === 'console-group')).toMatchObject({ state: 'Stable', protocolType: 'consumer', members: 1, topics: ['lagged'], lag: 3 })
      const g = await call(web.base, 'GET', '/console/api/groups/console-group')
      expect(g.body.partitions).toEqual([
        { topic: 'lagged', partition: 0, committed: 2, endOffset: 5, lag: 3, owner: expect.any(String) },
        { topic: 'lagged', partition: 1, committed: 5, endOffset: 5, lag: 0, owner: expect.any(String) },
      ])
      expect(g.body.members).toHaveLength(1)
    } finally {
      await consumer.close()
    }
    expect((await call(web.base, 'GET', '/console/api/groups/no-such-group')).status).toBe(404)
  })

  it('share groups (KIP-932): state, members, start offset, lag and records in flight per share-partition', async () => {
    await admin.createTopics([{ name: 'shared-jobs', numPartitions: 1 }])
    const producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
    await producer.sendBatch(Array.from({ length: 5 }, (_, i) => ({ topic: 'shared-jobs', partition: 0, value: `j${i}` })))
    await producer.close()
    await admin.alterConfigs({ type: 'group', name: 'console-share' }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
    const worker = new ShareConsumer({ bootstrapServers: web.broker.bootstrap, groupId: 'console-share', clientId: 'console-worker' })
    worker.subscribe(['shared-jobs'])
    try {
      let got = 0
      const deadline = Date.now() + 15_000
      while (got < 5 && Date.now() < deadline) got += (await worker.poll(300)).length
      // The last poll's records are held (acquired, not yet acknowledged): in flight, from this broker's metrics.
      const holding = await call(web.base, 'GET', '/console/api/groups/console-share')
      const held = holding.body.partitions[0]
      expect(held.inFlight).toBeGreaterThan(0)
      expect(held.inFlight).toBe(5 - held.startOffset)
      expect(held).toMatchObject({ lag: held.inFlight, owners: ['console-worker'] })
      expect(holding.body.inFlight).toBe(held.inFlight)
      const listedHolding = await call(web.base, 'GET', '/console/api/groups')
      expect(listedHolding.body.find((g: { groupId: string }) => g.groupId === 'console-share').inFlight).toBe(held.inFlight)
      await worker.commitSync()
      const groups = await call(web.base, 'GET', '/console/api/groups')
      expect(groups.body.find((g: { groupId: string }) => g.groupId === 'console-share')).toEqual({ groupId: 'console-share', state: 'Stable', protocolType: 'share', members: 1, topics: ['shared-jobs'], lag: 0, inFlight: 0 })
      const g = await call(web.base, 'GET', '/console/api/groups/console-share')
      expect(g.body).toMatchObject({ state: 'Stable', protocolType: 'share', protocol: 'simple', partitions: [{ topic: 'shared-jobs', partition: 0, startOffset: 5, lag: 0, inFlight: 0 }], lag: 0, inFlight: 0 })
      expect(g.body.members).toEqual([{ memberId: expect.any(String), clientId: 'console-worker', host: expect.any(String), assignment: [{ topic: 'shared-jobs', partition: 0 }] }])
    } finally {
      await worker.close()
    }
    await admin.alterShareGroupOffsets('console-share', [{ topic: 'shared-jobs', partition: 0, offset: 1 }])
    const after = await call(web.base, 'GET', '/console/api/groups/console-share')
    expect(after.body).toMatchObject({ state: 'Empty', members: [], partitions: [{ topic: 'shared-jobs', partition: 0, startOffset: 1, lag: 4 }], lag: 4 })
  })

  it("throughput: cumulative records and bytes in and out from the broker's metrics", async () => {
    const a = await call(web.base, 'GET', '/console/api/throughput')
    expect(a.body.source).toBe('broker-metrics')
    const producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
    await producer.sendBatch(Array.from({ length: 7 }, () => ({ topic: 'browsed', partition: 1, value: 'tick' })))
    await producer.close()
    const b = await call(web.base, 'GET', '/console/api/throughput')
    expect(b.body.messagesIn - a.body.messagesIn).toBeGreaterThanOrEqual(7)
    expect(b.body.bytesIn).toBeGreaterThan(a.body.bytesIn)
    expect(b.body.topics.browsed.messagesIn - (a.body.topics.browsed?.messagesIn ?? 0)).toBe(7)
    expect(b.body.time).toBeGreaterThanOrEqual(a.body.time)
  })

  it('bad input gets a Confluent error body, never a crash', async () => {
    const bad = await call(web.base, 'POST', '/console/api/topics', { body: '{not json', contentType: 'application/json' })
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ error_code: 40002 })
    expect((await call(web.base, 'POST', '/console/api/topics', { body: { name: '' } })).status).toBe(400)
    expect((await call(web.base, 'POST', '/console/api/topics', { body: { name: 'x', partitions: -4 } })).status).toBe(400)
    expect((await call(web.base, 'POST', '/console/api/topics', { body: { name: 'x', configs: [1] } })).status).toBe(400)
    expect((await call(web.base, 'GET', '/console/api/topics/nope')).body).toMatchObject({ error_code: 40403 })
    expect((await call(web.base, 'GET', '/console/api/cluster')).status).toBe(200)
  })
})
