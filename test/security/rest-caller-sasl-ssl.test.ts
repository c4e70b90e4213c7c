// The REST Proxy's callers over SASL_SSL (issue 31): with authentication.kafka.security.protocol=SASL_SSL
// each BASIC-authenticated user's Kafka clients log in with SCRAM over TLS, trusting the CA the proxy's
// own client.ssl.truststore.* names (certificates made with openssl at run time). The broker has ACLs with
// allow.everyone.if.no.acl.found=false: alice (Write) produces, bob (no Write on the topic) gets 40301.
// The HTTP leg is plain http; the proxy's own identity uses the PLAINTEXT listener.
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Kafka, logLevel, ResourcePatternTypes } from 'kafkajs'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import { RestProxy } from '../../src/rest/index.js'
import { hasOpenssl, makeTestCertificates, startTestBroker, type TestBroker, type TestCertificates, upsertScramUser } from '../harness/index.js'
import { call } from '../rest/helpers.js'

const TOPIC = 'sasl-ssl-callers'
const basic = (user: string, password: string): Record<string, string> => ({ Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` })
const ALICE = basic('alice', 'alice-secret')
const BOB = basic('bob', 'bob-secret')

describe.skipIf(!hasOpenssl())('REST Proxy callers over SASL_SSL', () => {
  let certs: TestCertificates
  let tb: TestBroker
  let dir: string
  const proxies: RestProxy[] = []
  let plaintext: string
  let saslSsl: string
  let usersFile: string

  const startProxy = async (extra: [string, string][]): Promise<RestProxy> => {
    const settings = restSettings(parseRestProperties([
      ['listeners', 'http://127.0.0.1:0'],
      ['bootstrap.servers', plaintext],
      ['authentication.method', 'BASIC'],
      ['authentication.users.file', usersFile],
      ['authentication.kafka.sasl.mechanism', 'SCRAM-SHA-512'],
      ['authentication.kafka.bootstrap.servers', saslSsl],
      ...extra,
    ]))
    const p = await RestProxy.start({ settings, bootstrapServers: [plaintext] })
    proxies.push(p)
    return p
  }

  beforeAll(async () => {
    certs = makeTestCertificates()
    tb = await startTestBroker([
      'listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL',
      'ssl.keystore.type=PEM',
      `ssl.keystore.location=${certs.serverKeystore}`,
      'sasl.enabled.mechanisms=SCRAM-SHA-512',
      'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
      'super.users=User:ANONYMOUS',
      'allow.everyone.if.no.acl.found=false',
      'num.partitions=1',
    ])
    const ports = new Map(tb.broker.endpoints.map((e) => [e.listenerName, e.port]))
    plaintext = `127.0.0.1:${ports.get('PLAINTEXT')}`
    saslSsl = `127.0.0.1:${ports.get('SASL_SSL')}`
    for (const user of ['alice', 'bob']) {
      const res = await upsertScramUser('127.0.0.1', ports.get('PLAINTEXT')!, user, `${user}-secret`, ['SCRAM-SHA-512'])
      expect(res.results).toEqual([expect.objectContaining({ user, errorCode: 0 })])
    }
    const admin = new Kafka({ clientId: 'sasl-ssl-setup', brokers: [plaintext], logLevel: logLevel.NOTHING }).admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }] })
    const allow = (principal: string, operation: number, resourceName = TOPIC) => ({ resourceType: AclResourceTypes.TOPIC, resourceName, resourcePatternType: ResourcePatternTypes.LITERAL, principal, host: '*', operation, permissionType: AclPermissionTypes.ALLOW })
    // bob may write another topic only: his idempotent producer gets its id, so the produce itself is refused.
    await admin.createAcls({ acl: [allow('User:alice', AclOperationTypes.WRITE), allow('User:alice', AclOperationTypes.DESCRIBE), allow('User:bob', AclOperationTypes.WRITE, `${TOPIC}-other`)] })
    await admin.disconnect()
    dir = mkdtempSync(join(tmpdir(), 'skein-rest-sasl-ssl-'))
    usersFile = join(dir, 'users.properties')
    writeFileSync(usersFile, 'alice: alice-secret\nbob: bob-secret\n')
  }, 90_000)

  afterAll(async () => {
    for (const p of proxies) await p.stop().catch(() => {})
    await tb?.stop()
    certs?.cleanup()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it('alice (Write) produces through v3 and v2 over SASL_SSL; bob gets 40301', async () => {
    const proxy = await startProxy([
      ['authentication.kafka.security.protocol', 'SASL_SSL'],
      ['client.ssl.truststore.type', 'PEM'],
      ['client.ssl.truststore.location', certs.ca],
    ])
    const base = proxy.listeners[0]!.url
    const clusterId = (await call(base, 'GET', '/v3/clusters', { headers: ALICE })).body.data[0].cluster_id
    const records = `/v3/clusters/${clusterId}/topics/${TOPIC}/records`
    const byAlice = await call(base, 'POST', records, { headers: ALICE, body: { value: { type: 'STRING', data: 'by alice over SASL_SSL' } } })
    expect(byAlice.status, JSON.stringify(byAlice.body)).toBe(200)
    expect(byAlice.body).toMatchObject({ error_code: 200, partition_id: 0 })
    const v2 = await call(base, 'POST', `/topics/${TOPIC}`, { headers: ALICE, contentType: 'application/vnd.kafka.json.v2+json', body: { records: [{ value: { by: 'alice' } }] } })
    expect(v2.status).toBe(200)
    expect(v2.body.offsets[0]).toMatchObject({ partition: 0, error_code: null })
    const byBob = await call(base, 'POST', records, { headers: BOB, body: { value: { type: 'STRING', data: 'by bob' } } })
    expect(byBob.body).toMatchObject({ error_code: 40301, message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) })
    // Read back through the broker: exactly alice's two records are there.
    const kafka = new Kafka({ clientId: 'sasl-ssl-check', brokers: [plaintext], logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    await admin.connect()
    const offsets = await admin.fetchTopicOffsets(TOPIC)
    await admin.disconnect()
    expect(offsets[0]).toMatchObject({ partition: 0, high: '2' })
  }, 60_000)

  it('the TLS half is really used: a proxy trusting another CA cannot serve its callers', async () => {
    const proxy = await startProxy([
      ['authentication.kafka.security.protocol', 'SASL_SSL'],
      ['client.ssl.truststore.type', 'PEM'],
      ['client.ssl.truststore.location', join(certs.dir, 'other-ca.pem')],
      ['authentication.kafka.idle.ms', '1000'],
    ])
    const base = proxy.listeners[0]!.url
    const r = await call(base, 'GET', '/v3/clusters', { headers: ALICE })
    expect(r.status).toBe(500)
    expect(r.body.message).toMatch(/unable to verify the first certificate/)
  }, 90_000)

  it('an unknown authentication.kafka.security.protocol is refused by name', () => {
    expect(() => restSettings(parseRestProperties([['authentication.kafka.security.protocol', 'SSL']]))).toThrow(/authentication\.kafka\.security\.protocol/)
  })
})
