// The HTTP side with BASIC authentication against a broker with SASL/SCRAM users and ACLs (issue 31):
// the REST Proxy answers 401 without valid credentials, and each authenticated user acts in Kafka as
// themself (authentication.kafka.sasl.mechanism), so the broker's ACLs judge the HTTP caller as they
// judge a Kafka client: a user with Write produces through v3 and v2, a user without it gets 40301.
// v2 consumer instances belong to their creator. The registry's read-only users cannot register.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Kafka, logLevel, ResourcePatternTypes } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseRegistryProperties, registrySettings } from '../../src/config/client-registry.js'
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import { basicAuthenticatorFrom, type HttpServer } from '../../src/http/index.js'
import { startRegistryHttp } from '../../src/registry/http.js'
import { handle, MemoryStore, SchemaRegistryService } from '../../src/registry/index.js'
import { webFront } from '../../src/console/index.js'
import { silentLogger } from '../../src/observability/logger.js'
import { RestProxy } from '../../src/rest/index.js'
import { startTestBroker, type TestBroker, upsertScramUser } from '../harness/index.js'
import { TestWebSocket } from '../harness/ws-client.js'
import { call } from '../rest/helpers.js'

const TOPIC = 'http-auth-t'
const basic = (user: string, password: string): Record<string, string> => ({ Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` })
const WRITER = basic('writer', 'writer-secret')
const READER = basic('reader', 'reader-secret')
// Read and Write: a WebSocket stream consumes as it produces, so producing over one needs both.
const EDITOR = basic('editor', 'editor-secret')
const V2_JSON = 'application/vnd.kafka.json.v2+json'

let tb: TestBroker
let proxy: RestProxy
let registry: HttpServer
let base: string
let registryBase: string
let clusterId: string
let dir: string

beforeAll(async () => {
  // The PLAINTEXT listener is the proxy's own identity (User:ANONYMOUS, a super user here, which also
  // sets up users and ACLs); the callers log in on the SASL_PLAINTEXT listener as themselves.
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT',
    'sasl.enabled.mechanisms=SCRAM-SHA-512',
    'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
    'super.users=User:ANONYMOUS',
    'allow.everyone.if.no.acl.found=false',
    'num.partitions=1',
  ])
  const ports = new Map(tb.broker.endpoints.map((e) => [e.listenerName, e.port]))
  const plaintext = `127.0.0.1:${ports.get('PLAINTEXT')}`
  for (const user of ['writer', 'reader', 'editor']) {
    const res = await upsertScramUser('127.0.0.1', ports.get('PLAINTEXT')!, user, `${user}-secret`, ['SCRAM-SHA-512'])
    expect(res.results).toEqual([expect.objectContaining({ user, errorCode: 0 })])
  }
  const admin = new Kafka({ clientId: 'http-auth-setup', brokers: [plaintext], logLevel: logLevel.NOTHING }).admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }] })
  const lit = ResourcePatternTypes.LITERAL
  const allow = (principal: string, operation: number) => ({ resourceType: AclResourceTypes.TOPIC, resourceName: TOPIC, resourcePatternType: lit, principal, host: '*', operation, permissionType: AclPermissionTypes.ALLOW })
  // The reader may write another topic only: its idempotent producer gets its id (Kafka grants
  // InitProducerId to a principal with Write on any topic), so the produce itself is what is refused.
  await admin.createAcls({
    acl: [
      allow('User:writer', AclOperationTypes.WRITE),
      allow('User:writer', AclOperationTypes.DESCRIBE),
      allow('User:reader', AclOperationTypes.READ),
      allow('User:editor', AclOperationTypes.READ),
      allow('User:editor', AclOperationTypes.WRITE),
      { ...allow('User:reader', AclOperationTypes.WRITE), resourceName: `${TOPIC}-other` },
    ],
  })
  await admin.disconnect()

  dir = mkdtempSync(join(tmpdir(), 'skein-http-auth-'))
  const usersFile = join(dir, 'users.properties')
  writeFileSync(usersFile, ['# REST and registry users (the REST password is also the Kafka SCRAM password)', 'writer: writer-secret,rest,registry-write', 'reader: reader-secret,rest,registry-read', 'editor: editor-secret,rest', 'outsider: outsider-secret', ''].join('\n'))
  const settings = restSettings(
    parseRestProperties([
      ['listeners', 'http://127.0.0.1:0'],
      ['bootstrap.servers', plaintext],
      ['authentication.method', 'BASIC'],
      ['authentication.realm', 'KafkaRest'],
      ['authentication.roles', 'rest'],
      ['authentication.users.file', usersFile],
      ['authentication.kafka.sasl.mechanism', 'SCRAM-SHA-512'],
      ['authentication.kafka.bootstrap.servers', `127.0.0.1:${ports.get('SASL_PLAINTEXT')}`],
    ]),
  )
  proxy = await RestProxy.start({ settings, bootstrapServers: [plaintext], extend: webFront({ settings, bootstrapServers: [plaintext], log: silentLogger(), health: false }) })
  base = proxy.listeners[0]!.url
  clusterId = (await call(base, 'GET', '/v3/clusters', { headers: WRITER })).body.data[0].cluster_id

  const reg = registrySettings(
    parseRegistryProperties([
      ['authentication.method', 'BASIC'],
      ['authentication.users.file', usersFile],
      ['authentication.roles', 'registry-read,registry-write'],
      ['authentication.write.roles', 'registry-write'],
    ]),
  )
  const svc = new SchemaRegistryService(new MemoryStore())
  registry = await startRegistryHttp((req) => handle(svc, req), { listeners: ['http://127.0.0.1:0'], authenticator: basicAuthenticatorFrom(reg.httpAuth), writeRoles: reg.writeRoles })
  registryBase = registry.listeners[0]!.url
}, 90_000)

afterAll(async () => {
  await proxy?.stop()
  await registry?.close()
  await tb?.stop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe('REST Proxy with BASIC authentication, acting as its caller', () => {
  it('answers 401 with the realm without credentials or with a wrong password, 403 without an allowed role', async () => {
    for (const headers of [{}, basic('writer', 'wrong'), basic('nobody', 'writer-secret')]) {
      const r = await call(base, 'POST', `/v3/clusters/${clusterId}/topics/${TOPIC}/records`, { headers, body: { value: { type: 'STRING', data: 'x' } } })
      expect(r.status).toBe(401)
      expect(r.headers.get('www-authenticate')).toBe('Basic realm="KafkaRest"')
    }
    expect((await call(base, 'GET', '/topics', { headers: basic('outsider', 'outsider-secret') })).status).toBe(403)
  })

  it('a user with Write produces through v3 and v2, as themself', async () => {
    const v3 = await call(base, 'POST', `/v3/clusters/${clusterId}/topics/${TOPIC}/records`, { headers: WRITER, body: { value: { type: 'STRING', data: 'v3 by writer' } } })
    expect(v3.status).toBe(200)
    expect(v3.body).toMatchObject({ error_code: 200, partition_id: 0 })
    const v2 = await call(base, 'POST', `/topics/${TOPIC}`, { headers: WRITER, contentType: V2_JSON, body: { records: [{ value: { by: 'writer' } }] } })
    expect(v2.status).toBe(200)
    expect(v2.body.offsets[0]).toMatchObject({ partition: 0, error_code: null })
    expect(proxy.consumerInstances).toBe(0)
  })

  it('a user without Write gets 40301 where Kafka answers TOPIC_AUTHORIZATION_FAILED', async () => {
    const v3 = await call(base, 'POST', `/v3/clusters/${clusterId}/topics/${TOPIC}/records`, { headers: READER, body: { value: { type: 'STRING', data: 'v3 by reader' } } })
    expect(v3.body).toMatchObject({ error_code: 40301, message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) })
    const v2 = await call(base, 'POST', `/topics/${TOPIC}`, { headers: READER, contentType: V2_JSON, body: { records: [{ value: { by: 'reader' } }] } })
    expect(v2.body.offsets).toEqual([expect.objectContaining({ error_code: 40301, error: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) })])
    // The proxy's own identity (a super user here) would have written: the caller's rights decided.
  })

  it('v2 consumer instances belong to the user who created them', async () => {
    const created = await call(base, 'POST', '/consumers/http-auth-g', { headers: READER, contentType: V2_JSON, body: { name: 'readers-own', format: 'json' } })
    expect(created.status).toBe(200)
    const path = '/consumers/http-auth-g/instances/readers-own/subscription'
    expect((await call(base, 'POST', path, { headers: READER, contentType: V2_JSON, body: { topics: [TOPIC] } })).status).toBe(204)
    const other = await call(base, 'GET', path, { headers: WRITER })
    expect(other.status).toBe(404)
    expect(other.body.error_code).toBe(40403)
    expect((await call(base, 'DELETE', '/consumers/http-auth-g/instances/readers-own', { headers: WRITER, contentType: V2_JSON })).status).toBe(404)
    expect((await call(base, 'GET', path, { headers: READER })).body).toEqual({ topics: [TOPIC] })
    expect((await call(base, 'DELETE', '/consumers/http-auth-g/instances/readers-own', { headers: READER, contentType: V2_JSON })).status).toBe(204)
  })
})

describe('WebSocket streams with BASIC authentication, acting as their caller', () => {
  const acks = (ws: TestWebSocket): { type: string; error_code?: number; offset?: number; message?: string }[] =>
    ws.messages.map((m) => JSON.parse(m.data.toString())).filter((m: { type: string }) => m.type === 'ack')
  const until = async (cond: () => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 15_000
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  // The allowed producer is the editor, not the writer: the writer may not Read, so its stream's consumer
  // fails and the socket closes (the next test), which would race the produce it is sent.
  it('refuses an upgrade without valid credentials; produces as the caller: Write allowed for one user, 40301 for the other', async () => {
    const port = Number(new URL(base).port)
    await expect(TestWebSocket.open(port, `/ws/topics/${TOPIC}`)).rejects.toThrow(/401/)
    await expect(TestWebSocket.open(port, `/ws/topics/${TOPIC}`, basic('writer', 'nope'))).rejects.toThrow(/401/)
    for (const [headers, allowed] of [[EDITOR, true], [READER, false]] as const) {
      const ws = await TestWebSocket.open(port, `/ws/topics/${TOPIC}?offset=latest`, headers)
      try {
        await ws.waitFor(1)
        ws.send(JSON.stringify({ type: 'produce', id: 'p', value: 'over the socket' }))
        await until(() => acks(ws).length > 0, 'an ack')
        if (allowed) expect(acks(ws)[0]).toMatchObject({ type: 'ack', offset: expect.any(Number) })
        else expect(acks(ws)[0]).toMatchObject({ error_code: 40301, message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) })
      } finally {
        ws.close()
      }
    }
  })

  it('a stream that fails still acknowledges the produce messages it took, then closes', async () => {
    // The writer may Write but not Read: its stream's consumer fails soon after it starts. Before, the
    // socket closed at once and the acks of messages already being written were lost (0 or 1 of 50 came
    // back in four rounds of five): a client would count written records lost and send them again.
    const port = Number(new URL(base).port)
    const ws = await TestWebSocket.open(port, `/ws/topics/${TOPIC}?offset=latest`, WRITER)
    await ws.waitFor(1)
    for (let i = 0; i < 50; i++) ws.send(JSON.stringify({ type: 'produce', id: i, value: `taken ${i}` }))
    await ws.waitClosed(30_000)
    expect(ws.closeCode).toBe(1011)
    const frames = ws.messages.map((m) => JSON.parse(m.data.toString()) as { type: string; id?: number; offset?: number; error_code?: number; message?: string })
    expect(frames.find((f) => f.type === 'error')).toMatchObject({ error_code: 40301, message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) })
    const answered = frames.filter((f) => f.type === 'ack')
    expect(answered.map((f) => f.id).sort((a, z) => a! - z!)).toEqual(Array.from({ length: 50 }, (_, i) => i))
    // Each was either written (an offset) or refused after the failure (50003), never left unanswered.
    for (const f of answered) expect(f.offset !== undefined || f.error_code === 50003).toBe(true)
  })

  it('consumes as the caller: a user with Read streams the records', async () => {
    const port = Number(new URL(base).port)
    const ws = await TestWebSocket.open(port, `/ws/topics/${TOPIC}?offset=earliest`, READER)
    try {
      await until(() => ws.messages.some((m) => m.data.toString().includes('v3 by writer')), 'the records')
    } finally {
      ws.close()
    }
    // The writer has no Read: its stream is refused by the broker, not served with the proxy's rights.
    const denied = await TestWebSocket.open(port, `/ws/topics/${TOPIC}?offset=earliest`, WRITER)
    try {
      const frames = (): string[] => denied.messages.map((m) => m.data.toString())
      await until(() => frames().some((f) => f.includes('"type":"error"') || f.includes('v3 by writer')), 'an answer')
      expect(frames().find((f) => f.includes('"type":"error"'))).toMatch(/"error_code":40301.*TOPIC_AUTHORIZATION_FAILED/)
      expect(frames().some((f) => f.includes('v3 by writer'))).toBe(false)
    } finally {
      denied.close()
    }
  })
})

describe('Schema Registry with read-only and read-write roles', () => {
  const schema = { schema: JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }] }) }

  it('needs credentials, lets readers read and look up, and only writers register', async () => {
    const none = await call(registryBase, 'GET', '/subjects')
    expect(none.status).toBe(401)
    expect(none.headers.get('www-authenticate')).toBe('Basic realm="SchemaRegistry"')
    const denied = await call(registryBase, 'POST', '/subjects/s-value/versions', { headers: READER, body: schema, contentType: 'application/vnd.schemaregistry.v1+json' })
    expect(denied.status).toBe(403)
    expect(denied.body.error_code).toBe(40301)
    expect((await call(registryBase, 'PUT', '/config', { headers: READER, body: { compatibility: 'NONE' } })).status).toBe(403)
    const registered = await call(registryBase, 'POST', '/subjects/s-value/versions', { headers: WRITER, body: schema, contentType: 'application/vnd.schemaregistry.v1+json' })
    expect(registered.status).toBe(200)
    expect((await call(registryBase, 'GET', '/subjects', { headers: READER })).body).toEqual(['s-value'])
    // A lookup is a POST that only reads: readers may.
    expect((await call(registryBase, 'POST', '/subjects/s-value', { headers: READER, body: schema, contentType: 'application/vnd.schemaregistry.v1+json' })).body).toMatchObject({ id: registered.body.id })
    expect((await call(registryBase, 'DELETE', '/subjects/s-value', { headers: READER })).status).toBe(403)
  })
})
