// The setup the secure-cluster tests share: a ZooKeeper and broker processes (test/harness/cluster.ts)
// whose only listener is SASL_SSL, certificates made by openssl at run time, PLAIN between brokers (the
// broker logs in as User:broker, the only super user), the ACL authorizer on with
// allow.everyone.if.no.acl.found=false, and SCRAM-SHA-256 client users written over the secured listener.
import { pbkdf2Sync, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { BrokerConnection } from '../../src/client/connection.js'
import type { ClientSecurity, SaslCredentials } from '../../src/client/sasl.js'
import { AclOperation, AclPermission, PatternType, ResourceType, type AclBinding } from '../../src/domain/acl.js'
import * as DescribeAcls from '../../src/protocol/messages/29-describe-acls.gen.js'
import * as AlterScram from '../../src/protocol/messages/51-alter-user-scram-credentials.gen.js'
import { freeLoopbackPort, makeTestCertificates, startCluster, until, type TestCertificates, type TestCluster } from '../harness/index.js'

/** The brokers' PLAIN login (and the users PLAIN accepts: the broker itself and mallory, who has no ACLs). */
const BROKER_LOGIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_mallory="mallory-secret";'

export interface SecureCluster {
  cluster: TestCluster
  certs: TestCertificates
  stop(): Promise<void>
}

/** Brokers on free ports, each with one listener SASL_SSL://127.0.0.1:port, the authorizer strict. */
export async function startSecureCluster(brokerIds: number[], overrides: string[] = []): Promise<SecureCluster> {
  const certs = makeTestCertificates()
  const ports = new Map<number, number>()
  for (const id of brokerIds) ports.set(id, await freeLoopbackPort())
  try {
    const cluster = await startCluster({
      brokerIds,
      brokerPort: (id) => ports.get(id),
      brokerOverrides: (id) => [`listeners=SASL_SSL://127.0.0.1:${ports.get(id)}`],
      overrides: [
        'inter.broker.listener.name=SASL_SSL',
        'ssl.keystore.type=PEM',
        `ssl.keystore.location=${certs.serverKeystore}`,
        'ssl.truststore.type=PEM',
        `ssl.truststore.location=${certs.ca}`,
        'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256',
        'sasl.mechanism.inter.broker.protocol=PLAIN',
        `listener.name.sasl_ssl.plain.sasl.jaas.config=${BROKER_LOGIN}`,
        'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
        'allow.everyone.if.no.acl.found=false',
        'super.users=User:broker',
        ...overrides,
      ],
    })
    return {
      cluster,
      certs,
      async stop() {
        await cluster.stop()
        certs.cleanup()
      },
    }
  } catch (err) {
    certs.cleanup()
    throw err
  }
}

export const securityWith = (certs: TestCertificates, sasl: SaslCredentials): ClientSecurity => ({ tls: { ca: readFileSync(certs.ca) }, sasl })
/** The broker's own login: the super user. */
export const asBroker = (certs: TestCertificates): ClientSecurity => securityWith(certs, { mechanism: 'PLAIN', username: 'broker', password: 'broker-secret' })
/** A SCRAM-SHA-256 user made with upsertScram (password `<user>-secret`). */
export const asScramUser = (certs: TestCertificates, user: string): ClientSecurity => securityWith(certs, { mechanism: 'SCRAM-SHA-256', username: user, password: `${user}-secret` })
/** A PLAIN user the brokers know but who has no ACLs. */
export const asMallory = (certs: TestCertificates): ClientSecurity => securityWith(certs, { mechanism: 'PLAIN', username: 'mallory', password: 'mallory-secret' })

/** SCRAM-SHA-256 credentials for a user (password `<user>-secret`), written with AlterUserScramCredentials over the secured listener (as kafka-configs does). */
export async function upsertScram(certs: TestCertificates, port: number, user: string): Promise<number> {
  const conn = await BrokerConnection.connect({ host: '127.0.0.1', port, clientId: 'scram-admin', security: asBroker(certs) })
  try {
    const salt = randomBytes(24)
    const iterations = 4096
    const req = AlterScram.createAlterUserScramCredentialsRequest({
      deletions: [],
      upsertions: [{ name: user, mechanism: 1, iterations, salt, saltedPassword: pbkdf2Sync(`${user}-secret`, salt, iterations, 32, 'sha256') }],
    })
    const res = await conn.send(51, (w) => AlterScram.encodeAlterUserScramCredentialsRequest(w, req, 0), AlterScram.decodeAlterUserScramCredentialsResponse, { version: 0 })
    return res.results[0]?.errorCode ?? -1
  } finally {
    conn.close()
  }
}

/** An ALLOW binding of a literal resource (ResourceType, AclOperation) for a user from any host. */
export function allow(user: string, resourceType: number, resourceName: string, operation: number): AclBinding {
  return { resourceType, resourceName, patternType: PatternType.LITERAL, principal: `User:${user}`, host: '*', operation, permission: AclPermission.ALLOW }
}

/** How many ACL bindings one broker's authorizer holds now (DescribeAcls answers from memory, sent to that broker alone). */
async function aclCountOn(certs: TestCertificates, port: number): Promise<number> {
  const conn = await BrokerConnection.connect({ host: '127.0.0.1', port, clientId: 'acl-probe', security: asBroker(certs) })
  try {
    const req = DescribeAcls.createDescribeAclsRequest({
      resourceTypeFilter: ResourceType.ANY, resourceNameFilter: null, patternTypeFilter: PatternType.ANY,
      principalFilter: null, hostFilter: null, operation: AclOperation.ANY, permissionType: AclPermission.ANY,
    })
    const res = await conn.send(29, (w, v) => DescribeAcls.encodeDescribeAclsRequest(w, req, v), DescribeAcls.decodeDescribeAclsResponse)
    return res.resources.reduce((n, r) => n + r.acls.length, 0)
  } finally {
    conn.close()
  }
}

/**
 * Resolves once every running broker holds `count` ACL bindings: in a ZooKeeper cluster a broker other
 * than the one that wrote them learns of new ACLs at its next reload (src/broker/acls.ts), and a check
 * before that is refused (which, for a transactional producer, is fatal).
 */
export async function untilAclsOnEveryBroker(secure: SecureCluster, count: number): Promise<void> {
  for (const b of secure.cluster.brokers.filter((x) => x.alive())) {
    await until(`${count} ACLs on broker ${b.id}`, async () => ((await aclCountOn(secure.certs, b.port)) === count ? true : undefined), 20_000)
  }
}
