// ACLs with real clients: authorizer.class.name with super.users and allow.everyone.if.no.acl.found=false,
// users authenticated by SASL/PLAIN and by client certificates (their principal is the certificate's
// subject). KafkaJS's admin creates, describes and deletes ACLs; denied produce, consume and group
// requests get Kafka's error codes in KafkaJS, librdkafka (kcat) and kafka-python; ACLs survive a restart.
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Kafka, logLevel, ResourcePatternTypes } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasKcat, hasOpenssl, hasPythonModule, makeTestCertificates, run, runOk, startTestBroker, SYSTEM_PYTHON, type TestBroker, type TestCertificates } from '../harness/index.js'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'python', 'secure_client.py')
const OPENSSL = hasOpenssl()
let tb: TestBroker
let certs: TestCertificates
const ports = new Map<string, number>()
const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";'
const CERT_PRINCIPAL = 'User:CN=alice,OU=dev,O=Skein'

function overrides(): string[] {
  return [
    'listeners=SASL_PLAINTEXT://127.0.0.1:0,MTLS://127.0.0.1:0',
    'listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,MTLS:SSL',
    'sasl.enabled.mechanisms=PLAIN',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${certs.serverKeystore}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${certs.ca}`,
    'ssl.client.auth=required',
    'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
    'super.users=User:admin',
    'allow.everyone.if.no.acl.found=false',
  ]
}

const kafka = (user: string): Kafka =>
  new Kafka({ clientId: `acl-${user}`, brokers: [`127.0.0.1:${ports.get('SASL_PLAINTEXT')}`], sasl: { mechanism: 'plain', username: user, password: `${user}-secret` }, logLevel: logLevel.NOTHING, retry: { retries: 0 } })

async function produceAs(user: string, topic: string, value: string): Promise<Error | null> {
  const producer = kafka(user).producer()
  await producer.connect()
  try {
    await producer.send({ topic, messages: [{ value, partition: 0 }] })
    return null
  } catch (err) {
    return err as Error
  } finally {
    await producer.disconnect()
  }
}

beforeAll(async () => {
  if (!OPENSSL) return
  certs = makeTestCertificates()
  tb = await startTestBroker(overrides())
  for (const e of tb.broker.endpoints) ports.set(e.listenerName, e.port)
  const admin = kafka('admin').admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: 'acl-t', numPartitions: 1 }, { topic: 'acl-private', numPartitions: 1 }] })
  await admin.disconnect()
}, 60_000)

afterAll(async () => {
  await tb?.stop()
  certs?.cleanup()
})

describe.skipIf(!OPENSSL)('ACLs', () => {
  it('the super user creates and describes ACLs with KafkaJS; others may not', async () => {
    const admin = kafka('admin').admin()
    await admin.connect()
    const lit = ResourcePatternTypes.LITERAL
    await admin.createAcls({
      acl: [
        { resourceType: AclResourceTypes.TOPIC, resourceName: 'acl-t', resourcePatternType: lit, principal: 'User:alice', host: '*', operation: AclOperationTypes.WRITE, permissionType: AclPermissionTypes.ALLOW },
        { resourceType: AclResourceTypes.TOPIC, resourceName: 'acl-', resourcePatternType: ResourcePatternTypes.PREFIXED, principal: 'User:alice', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW },
        { resourceType: AclResourceTypes.TOPIC, resourceName: 'acl-private', resourcePatternType: lit, principal: 'User:alice', host: '*', operation: AclOperationTypes.ALL, permissionType: AclPermissionTypes.DENY },
        { resourceType: AclResourceTypes.GROUP, resourceName: 'alice-group', resourcePatternType: lit, principal: 'User:alice', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW },
        { resourceType: AclResourceTypes.TOPIC, resourceName: 'acl-t', resourcePatternType: lit, principal: CERT_PRINCIPAL, host: '*', operation: AclOperationTypes.WRITE, permissionType: AclPermissionTypes.ALLOW },
      ],
    })
    const described = await admin.describeAcls({ resourceType: AclResourceTypes.ANY, resourcePatternType: ResourcePatternTypes.ANY, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY })
    const flat = described.resources.flatMap((r) => r.acls.map((a) => `${r.resourceType}:${r.resourcePatternType}:${r.resourceName}:${a.principal}:${a.operation}:${a.permissionType}`)).sort()
    expect(flat).toEqual(
      [
        `2:3:acl-t:User:alice:4:3`,
        `2:4:acl-:User:alice:3:3`,
        `2:3:acl-private:User:alice:2:2`,
        `3:3:alice-group:User:alice:3:3`,
        `2:3:acl-t:${CERT_PRINCIPAL}:4:3`,
      ].sort(),
    )
    await admin.disconnect()

    const bobAdmin = kafka('bob').admin()
    await bobAdmin.connect()
    await expect(
      bobAdmin.createAcls({ acl: [{ resourceType: AclResourceTypes.TOPIC, resourceName: 'acl-t', resourcePatternType: lit, principal: 'User:bob', host: '*', operation: AclOperationTypes.ALL, permissionType: AclPermissionTypes.ALLOW }] }),
    ).rejects.toThrow(/Cluster authorization failed|CLUSTER_AUTHORIZATION_FAILED/i)
    await bobAdmin.disconnect()
  })

  it('KafkaJS: allowed produce works, denied produce is TOPIC_AUTHORIZATION_FAILED, deny wins over a prefixed allow', async () => {
    expect(await produceAs('alice', 'acl-t', 'from alice')).toBeNull()
    const bob = await produceAs('bob', 'acl-t', 'from bob')
    expect((bob as { cause?: { type?: string } }).cause?.type).toBe('TOPIC_AUTHORIZATION_FAILED')
    const consumer = kafka('alice').consumer({ groupId: 'alice-group', maxWaitTimeInMs: 500 })
    await consumer.connect()
    await consumer.subscribe({ topic: 'acl-t', fromBeginning: true })
    const seen: string[] = []
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) })
    const deadline = Date.now() + 20000
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    await consumer.disconnect()
    expect(seen).toEqual(['from alice'])

    // Metadata lists only what alice may Describe (acl-private is denied by All/Deny).
    const admin = kafka('alice').admin()
    await admin.connect()
    const topics = await admin.listTopics()
    await admin.disconnect()
    expect(topics).toContain('acl-t')
    expect(topics).not.toContain('acl-private')
  })

  it('KafkaJS: a group without Read is refused at FindCoordinator (GROUP_AUTHORIZATION_FAILED, which KafkaJS reports as no coordinator)', async () => {
    const consumer = kafka('alice').consumer({ groupId: 'not-alices', maxWaitTimeInMs: 500, retry: { retries: 0 } })
    await consumer.connect()
    // KafkaJS wraps FindCoordinator's error: the protocol error's type is on the cause.
    const failed = new Promise<string>((resolve) => consumer.on(consumer.events.CRASH, (e) => resolve(JSON.stringify(e.payload.error, ['type', 'cause', 'message', 'name']))))
    await consumer.subscribe({ topic: 'acl-t' })
    await consumer.run({ eachMessage: async () => {} })
    expect(await failed).toMatch(/Failed to find group coordinator/)
    await consumer.disconnect()
  })

  it.skipIf(!hasKcat())('librdkafka: the certificate subject is the principal; bob is refused with "Topic authorization failed"', async () => {
    await runOk('kcat', ['-b', `127.0.0.1:${ports.get('MTLS')}`, '-X', 'security.protocol=ssl', '-X', `ssl.ca.location=${certs.ca}`, '-X', `ssl.certificate.location=${certs.clientCert}`, '-X', `ssl.key.location=${certs.clientKey}`, '-P', '-t', 'acl-t', '-p', '0'], { input: 'from the certificate\n', timeoutMs: 30000 })
    const r = await run('kcat', ['-b', `127.0.0.1:${ports.get('SASL_PLAINTEXT')}`, '-X', 'security.protocol=sasl_plaintext', '-X', 'sasl.mechanisms=PLAIN', '-X', 'sasl.username=bob', '-X', 'sasl.password=bob-secret', '-X', 'message.timeout.ms=5000', '-P', '-t', 'acl-t', '-p', '0'], { input: 'from bob\n', timeoutMs: 30000 })
    expect(String(r.stderr)).toMatch(/Topic authorization failed/i)
  })

  it.skipIf(!hasPythonModule('kafka'))('kafka-python: alice produces and reads back; bob cannot produce', async () => {
    const py = async (user: string): Promise<{ ok: boolean; values?: string[]; error?: string }> => {
      const r = await runOk(SYSTEM_PYTHON, [SCRIPT], {
        input: JSON.stringify({ client: 'kafka-python', bootstrap: `127.0.0.1:${ports.get('SASL_PLAINTEXT')}`, topic: 'acl-t', value: `kp-${user}`, security: { security_protocol: 'SASL_PLAINTEXT', sasl_mechanism: 'PLAIN', sasl_plain_username: user, sasl_plain_password: `${user}-secret` } }),
        timeoutMs: 60000,
      })
      return JSON.parse(r.stdout.toString())
    }
    expect(await py('alice')).toMatchObject({ ok: true, values: ['kp-alice'] })
    // Metadata answers acl-t with TOPIC_AUTHORIZATION_FAILED (29); kafka-python 2.0.2 keeps asking until max_block_ms.
    const bob = await py('bob')
    expect(bob.ok).toBe(false)
    expect(bob.error).toMatch(/KafkaTimeoutError|TopicAuthorizationFailed/)
  })

  it('ACLs persist across a restart and DeleteAcls removes them', async () => {
    tb = await tb.restart()
    for (const e of tb.broker.endpoints) ports.set(e.listenerName, e.port)
    expect(await produceAs('alice', 'acl-t', 'after restart')).toBeNull()
    const admin = kafka('admin').admin()
    await admin.connect()
    const res = await admin.deleteAcls({ filters: [{ resourceType: AclResourceTypes.TOPIC, resourceName: 'acl-t', resourcePatternType: ResourcePatternTypes.LITERAL, principal: 'User:alice', host: '*', operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY }] })
    expect(res.filterResponses[0]!.matchingAcls).toHaveLength(1)
    await admin.disconnect()
    expect(String(await produceAs('alice', 'acl-t', 'denied now'))).toMatch(/authoriz/i)
  })
})
