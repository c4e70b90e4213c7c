// Standalone REST Proxy (`skein rest`) and Schema Registry (`skein schema-registry`) log in with Confluent's
// client security names: client.* for the proxy (and the console beside it), kafkastore.* for the
// registry, read through the same config tables and start functions the commands use. The broker admits
// only SASL logins it knows and, with allow.everyone.if.no.acl.found=false, nothing anonymous: the
// services work only as the user they were given.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseRegistryProperties, registrySettings } from '../../src/config/client-registry.js'
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import { webFront } from '../../src/console/index.js'
import { silentLogger } from '../../src/observability/logger.js'
import { SchemaRegistryServer } from '../../src/registry/server.js'
import { RestProxy } from '../../src/rest/index.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'
import { call } from '../rest/helpers.js'

const PLAIN_USERS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
const ALICE = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";'

let tb: TestBroker
let saslBootstrap: string

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    'sasl.enabled.mechanisms=PLAIN',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${PLAIN_USERS}`,
    'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
    'allow.everyone.if.no.acl.found=false',
    'super.users=User:alice',
    'group.initial.rebalance.delay.ms=0',
  ])
  saslBootstrap = `127.0.0.1:${tb.broker.endpointFor('SASL_PLAINTEXT').port}`
}, 60_000)

afterAll(async () => {
  await tb?.stop()
})

describe('standalone services with a Kafka identity of their own', () => {
  it('the REST Proxy and its console log in with client.* (SASL PLAIN as alice)', async () => {
    const settings = restSettings(parseRestProperties([
      ['listeners', 'http://127.0.0.1:0'],
      ['bootstrap.servers', saslBootstrap],
      ['client.security.protocol', 'SASL_PLAINTEXT'],
      ['client.sasl.mechanism', 'PLAIN'],
      ['client.sasl.jaas.config', ALICE],
    ]))
    const bootstrapServers = settings.bootstrapServers!
    const proxy = await RestProxy.start({ settings, bootstrapServers, extend: webFront({ settings, bootstrapServers, log: silentLogger() }) })
    try {
      const base = proxy.listeners[0]!.url
      const clusterId = (await call(base, 'GET', '/v3/clusters')).body.data[0].cluster_id as string
      expect((await call(base, 'POST', `/v3/clusters/${clusterId}/topics`, { body: { topic_name: 'standalone', partitions_count: 1 } })).status).toBe(201)
      const produced = await call(base, 'POST', `/v3/clusters/${clusterId}/topics/standalone/records`, { body: { value: { type: 'STRING', data: 'as alice' } } })
      expect(produced.body).toMatchObject({ error_code: 200, offset: 0 })
      // The console's own consumer (the message browser) logs in as the proxy does.
      const browsed = await call(base, 'GET', '/console/api/topics/standalone/records?partition=0&offset=0&limit=1')
      expect(browsed.status).toBe(200)
      expect(browsed.body.records.map((r: { value: string }) => r.value)).toEqual(['as alice'])
    } finally {
      await proxy.stop()
    }
  }, 60_000)

  it('the Schema Registry logs in with kafkastore.*', async () => {
    const settings = registrySettings(parseRegistryProperties([
      ['listeners', 'http://127.0.0.1:0'],
      ['kafkastore.bootstrap.servers', saslBootstrap],
      ['kafkastore.security.protocol', 'SASL_PLAINTEXT'],
      ['kafkastore.sasl.mechanism', 'PLAIN'],
      ['kafkastore.sasl.jaas.config', ALICE],
      ['kafkastore.topic', '_schemas_standalone'],
    ]))
    const registry = await SchemaRegistryServer.start({ settings, bootstrapServers: settings.bootstrapServers! })
    try {
      const registered = await call(registry.urls[0]!, 'POST', '/subjects/standalone-value/versions', { contentType: 'application/vnd.schemaregistry.v1+json', body: { schema: '{"type":"string"}' } })
      expect(registered.status).toBe(200)
      expect(registered.body).toEqual({ id: expect.any(Number) })
    } finally {
      await registry.stop()
    }
  }, 60_000)

  it('a setting that cannot work is refused at start, named as written', async () => {
    const settings = restSettings(parseRestProperties([['listeners', 'http://127.0.0.1:0'], ['client.security.protocol', 'SASL_PLAINTEXT'], ['client.sasl.mechanism', 'PLAIN']]))
    await expect(RestProxy.start({ settings, bootstrapServers: [saslBootstrap] })).rejects.toThrow('client.security.protocol=SASL_PLAINTEXT needs sasl.jaas.config')
    const registry = registrySettings(parseRegistryProperties([['listeners', 'http://127.0.0.1:0'], ['kafkastore.security.protocol', 'BOGUS']]))
    await expect(SchemaRegistryServer.start({ settings: registry, bootstrapServers: [saslBootstrap] })).rejects.toThrow('kafkastore.security.protocol=BOGUS')
  })
})
