// The identity of the Schema Registry and REST Proxy a broker embeds (issue 31), with real broker processes
// (`node dist/src/main.js`, as `npm start` runs it; `npx tsc -p tsconfig.json` first). SCRAM users are
// written first by a broker with a PLAINTEXT listener (as Kafka bootstraps SCRAM users before the listener
// that needs them); then the same data dir is served by a broker whose only listener is SASL_PLAINTEXT:
// - with no identity configured the embedded services log in as the broker (its inter-broker login) and
//   serve: a schema is registered, records are produced and consumed through REST;
// - with the ACL authorizer and no ACL for that login, start-up fails naming the principal and the ACLs;
// - with rest.client.* naming another SCRAM user, the REST Proxy acts as that user: a topic it may not
//   write is refused with 40301.
// In process, embeddedIdentity (src/main.ts) picks the listener of the configured protocol and names the
// principal as the listener will see it (a client certificate through ssl.principal.mapping.rules).
import { readFileSync, rmSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import type { ClientSecurity } from '../../src/client/sasl.js'
import { AclOperation, AclPermission, PatternType, ResourceType } from '../../src/domain/acl.js'
import { embeddedIdentity } from '../../src/main.js'
import { freePort, startBrokerProcess, startTestBroker, tempDataDir, type BrokerProcess, type TestBroker } from '../harness/broker.js'
import { hasOpenssl, makeTestCertificates, upsertScramUser, type TestCertificates } from '../harness/security.js'
import { call } from '../rest/helpers.js'

const SCRAM_LOGIN = (user: string, password: string): string => `org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${password}";`
const V2 = 'application/vnd.kafka.v2+json'
const JSON_V2 = 'application/vnd.kafka.json.v2+json'
const REGISTRY = 'application/vnd.schemaregistry.v1+json'

let dataDir: string
const running: BrokerProcess[] = []

beforeAll(async () => {
  dataDir = tempDataDir('embedded-identity')
  const setup = await startBrokerProcess({ dataDir })
  try {
    for (const [user, password] of [['broker', 'broker-secret'], ['alice', 'alice-secret']]) {
      const res = await upsertScramUser('127.0.0.1', setup.port, user!, password!)
      expect(res.results.map((r) => r.errorCode)).toEqual([0])
    }
  } finally {
    expect(await setup.kill('SIGTERM')).toBe(0)
  }
}, 60_000)

afterEach(async () => {
  for (const b of running.splice(0)) await b.kill('SIGTERM').catch(() => b.kill('SIGKILL'))
})

afterAll(() => {
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
})

interface SaslBroker {
  broker: BrokerProcess
  rest: string
  registry: string
}

/** A broker on dataDir whose only listener is SASL_PLAINTEXT (SCRAM-SHA-256, the broker's login broker/broker-secret), with its REST Proxy and registry. */
async function startSaslOnlyBroker(extra: string[]): Promise<{ started: Promise<SaslBroker>; port: number }> {
  const port = await freePort()
  const restPort = await freePort()
  const registryPort = await freePort()
  const started = startBrokerProcess({
    dataDir,
    port,
    overrides: [
      `listeners=SASL_PLAINTEXT://127.0.0.1:${port}`,
      'sasl.enabled.mechanisms=SCRAM-SHA-256',
      'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256',
      `listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=${SCRAM_LOGIN('broker', 'broker-secret')}`,
      `schema.registry.listeners=http://127.0.0.1:${registryPort}`,
      `rest.listeners=http://127.0.0.1:${restPort}`,
      ...extra,
    ],
  }).then((broker) => {
    running.push(broker)
    return { broker, rest: `http://127.0.0.1:${restPort}`, registry: `http://127.0.0.1:${registryPort}` }
  })
  return { started, port }
}

/** Resolves once both embedded services logged that they listen, or rejects with the output when the process ends first. */
async function servicesUp(b: BrokerProcess): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!(b.output().includes('the embedded REST Proxy reaches the broker') && b.output().includes('Schema Registry started'))) {
    if (!b.alive()) throw new Error(`the broker exited:\n${b.output()}`)
    if (Date.now() > deadline) throw new Error(`the embedded services did not start:\n${b.output()}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

async function exitOf(b: BrokerProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (b.alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
}

const asBroker: ClientSecurity = { sasl: { mechanism: 'SCRAM-SHA-256', username: 'broker', password: 'broker-secret' } }

describe('the embedded services have an identity of their own', () => {
  it('a broker whose only listener is SASL_PLAINTEXT serves its registry and REST Proxy, logged in as the broker', async () => {
    const { rest, registry, broker } = await (await startSaslOnlyBroker([])).started
    await servicesUp(broker)
    expect(broker.output()).toMatch(/"principal":"User:broker"[^\n]*the embedded Schema Registry reaches the broker/)

    const registered = await call(registry, 'POST', '/subjects/identity-value/versions', { contentType: REGISTRY, body: { schema: '{"type":"string"}' } })
    expect(registered.status).toBe(200)
    expect(registered.body).toEqual({ id: expect.any(Number) })

    const clusterId = (await call(rest, 'GET', '/v3/clusters')).body.data[0].cluster_id as string
    expect((await call(rest, 'POST', `/v3/clusters/${clusterId}/topics`, { body: { topic_name: 'identity', partitions_count: 1 } })).status).toBe(201)
    const produced = await call(rest, 'POST', `/v3/clusters/${clusterId}/topics/identity/records`, { body: { value: { type: 'JSON', data: { n: 1 } } } })
    expect(produced.body).toMatchObject({ error_code: 200, offset: 0 })

    const inst = '/consumers/identity-group/instances/c1'
    expect((await call(rest, 'POST', '/consumers/identity-group', { contentType: V2, body: { name: 'c1', format: 'json', 'auto.offset.reset': 'earliest' } })).status).toBe(200)
    expect((await call(rest, 'POST', `${inst}/subscription`, { contentType: V2, body: { topics: ['identity'] } })).status).toBe(204)
    const values: unknown[] = []
    const deadline = Date.now() + 20_000
    while (values.length === 0 && Date.now() < deadline) {
      const r = await call(rest, 'GET', `${inst}/records?timeout=1000`, { accept: JSON_V2 })
      expect(r.status).toBe(200)
      values.push(...(r.body as { value: unknown }[]).map((x) => x.value))
    }
    expect(values).toEqual([{ n: 1 }])
    expect((await call(rest, 'DELETE', inst, { contentType: V2 })).status).toBe(204)
  }, 90_000)

  it('with ACLs and no grant for its login, start-up fails naming the principal and the ACLs', async () => {
    const { started } = await startSaslOnlyBroker(['authorizer.class.name=kafka.security.authorizer.AclAuthorizer', 'allow.everyone.if.no.acl.found=false'])
    const { broker } = await started
    await exitOf(broker)
    expect(broker.alive()).toBe(false)
    expect(broker.output()).toContain(
      'cannot start the embedded services: the embedded Schema Registry (principal User:broker) needs Describe, Read and Write on topic _schemas (and Create on it or on the cluster while it does not exist) and Read on group schema-registry: ACL refused (',
    )
  }, 60_000)

  it('with rest.client.* set to another SCRAM user, the REST Proxy acts as that user: a topic it may not write is 40301', async () => {
    // The broker (a super user) would be allowed everything: only alice's own ACLs explain the refusal.
    const { started, port } = await startSaslOnlyBroker([
      'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
      'allow.everyone.if.no.acl.found=false',
      'super.users=User:broker',
      'rest.client.security.protocol=SASL_PLAINTEXT',
      'rest.client.sasl.mechanism=SCRAM-SHA-256',
      `rest.client.sasl.jaas.config=${SCRAM_LOGIN('alice', 'alice-secret')}`,
    ])
    const { broker, rest } = await started
    await servicesUp(broker)
    expect(broker.output()).toMatch(/"principal":"User:alice"[^\n]*the embedded REST Proxy reaches the broker/)
    const admin = new Admin({ bootstrapServers: `127.0.0.1:${port}`, clientId: 'identity-admin', security: asBroker })
    try {
      await admin.createTopics([{ name: 'alice-writes', numPartitions: 1, replicationFactor: 1 }, { name: 'alice-reads-only', numPartitions: 1, replicationFactor: 1 }])
      const acl = (topic: string, operation: (typeof AclOperation)[keyof typeof AclOperation]) => ({ resourceType: ResourceType.TOPIC, resourceName: topic, patternType: PatternType.LITERAL, principal: 'User:alice', host: '*', operation, permission: AclPermission.ALLOW })
      const results = await admin.createAcls([acl('alice-writes', AclOperation.WRITE), acl('alice-writes', AclOperation.DESCRIBE), acl('alice-reads-only', AclOperation.DESCRIBE)])
      expect(results.map((r) => r.errorCode)).toEqual([0, 0, 0])
    } finally {
      await admin.close()
    }
    const clusterId = (await call(rest, 'GET', '/v3/clusters')).body.data[0].cluster_id as string
    const allowed = await call(rest, 'POST', `/v3/clusters/${clusterId}/topics/alice-writes/records`, { body: { value: { type: 'STRING', data: 'as alice' } } })
    expect(allowed.body).toMatchObject({ error_code: 200, offset: 0 })
    const refused = await call(rest, 'POST', `/v3/clusters/${clusterId}/topics/alice-reads-only/records`, { body: { value: { type: 'STRING', data: 'as alice' } } })
    const refusedV2 = await call(rest, 'POST', '/topics/alice-reads-only', { contentType: JSON_V2, body: { records: [{ value: { n: 1 } }] } })
    // Per record, as Confluent's proxy answers a produce the broker refused; the broker's own login would have been allowed.
    expect(refusedV2.body.offsets).toEqual([expect.objectContaining({ offset: null, error_code: 40301 })])
    expect(refused.body.error_code).toBe(40301)
  }, 90_000)
})

describe('embeddedIdentity: which listener and principal an embedded service gets', () => {
  const OPENSSL = hasOpenssl()
  let certs: TestCertificates
  let tb: TestBroker

  beforeAll(async () => {
    if (!OPENSSL) return
    certs = makeTestCertificates()
    tb = await startTestBroker([
      'listeners=PLAINTEXT://127.0.0.1:0,MTLS://127.0.0.1:0',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,MTLS:SSL',
      'ssl.keystore.type=PEM',
      `ssl.keystore.location=${certs.serverKeystore}`,
      'ssl.truststore.type=PEM',
      `ssl.truststore.location=${certs.ca}`,
      'listener.name.mtls.ssl.client.auth=required',
      'listener.name.mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]+),.*$/$1/L',
    ])
  }, 60_000)

  afterAll(async () => {
    await tb?.stop()
    certs?.cleanup()
  })

  it.skipIf(!OPENSSL)('by default the inter-broker listener (here the first, PLAINTEXT) as User:ANONYMOUS', () => {
    const id = embeddedIdentity(tb.broker, tb.broker.config, 'the embedded REST Proxy', 'rest.client.', new Map())
    expect(id).toMatchObject({ listener: 'PLAINTEXT', security: undefined, principal: 'User:ANONYMOUS', bootstrap: `127.0.0.1:${tb.broker.endpointFor('PLAINTEXT').port}` })
  })

  it.skipIf(!OPENSSL)('with security.protocol=SSL and a client certificate: the SSL listener, the principal its mapping rules give, and it connects', async () => {
    const props = new Map([
      ['security.protocol', 'SSL'],
      ['ssl.truststore.type', 'PEM'],
      ['ssl.truststore.location', certs.ca],
      ['ssl.keystore.certificate.chain', readFileSync(certs.clientCert, 'utf8')],
      ['ssl.keystore.key', readFileSync(certs.clientKey, 'utf8')],
    ])
    const id = embeddedIdentity(tb.broker, tb.broker.config, 'the embedded REST Proxy', 'rest.client.', props)
    expect(id).toMatchObject({ listener: 'MTLS', principal: 'User:alice', bootstrap: `127.0.0.1:${tb.broker.endpointFor('MTLS').port}` })
    const admin = new Admin({ bootstrapServers: id.bootstrap, security: id.security, clientId: 'identity-tls' })
    try {
      expect((await admin.describeCluster()).brokers.length).toBe(1)
    } finally {
      await admin.close()
    }
  })

  it.skipIf(!OPENSSL)('a protocol the broker has no listener for, or a bad setting, is named', () => {
    expect(() => embeddedIdentity(tb.broker, tb.broker.config, 'the embedded REST Proxy', 'rest.client.', new Map([['security.protocol', 'SASL_SSL'], ['sasl.mechanism', 'PLAIN'], ['sasl.jaas.config', 'x required username="a" password="b";']])))
      .toThrow('the embedded REST Proxy: rest.client.security.protocol=SASL_SSL, but the broker has no SASL_SSL listener (listeners: PLAINTEXT:PLAINTEXT, MTLS:SSL)')
    expect(() => embeddedIdentity(tb.broker, tb.broker.config, 'the embedded Schema Registry', 'schema.registry.kafkastore.', new Map([['security.protocol', 'SASL_PLAINTEXT']])))
      .toThrow('the embedded Schema Registry: schema.registry.kafkastore.sasl.mechanism=GSSAPI')
  })
})
