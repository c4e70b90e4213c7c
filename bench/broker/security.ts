// What the TLS and authorizer workloads of bench:broker need: a throwaway CA and server certificate made
// with openssl (nothing is kept), the broker settings of an SSL listener, and 1,000 ACLs of which one
// lets the benchmark's producer write.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AclOperation, AclPermission, PatternType, ResourceType, type AclBinding } from '../../src/domain/acl.js'

export interface BenchCertificates {
  ca: string
  /** Server key and certificate in one PEM file. */
  keystore: string
  cleanup(): void
}

export function makeBenchCertificates(parent: string): BenchCertificates {
  const dir = mkdtempSync(join(parent, 'skein-bench-tls-'))
  const openssl = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  }
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=skein-bench-ca'])
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'])
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'server.ext', '-out', 'server.crt'])
  writeFileSync(join(dir, 'server.pem'), Buffer.concat([readFileSync(join(dir, 'server.key')), readFileSync(join(dir, 'server.crt'))]))
  return { ca: join(dir, 'ca.pem'), keystore: join(dir, 'server.pem'), cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** The TLS settings of the benchmark broker's SSL listener (listeners themselves are set by the caller). */
export const TLS_BROKER_OVERRIDES = (certs: BenchCertificates): string[] => ['ssl.keystore.type=PEM', `ssl.keystore.location=${certs.keystore}`]

/**
 * `count` ACLs on topics and groups of other principals (literal and prefixed, allow and deny, spread
 * over many names as a real cluster's), and the ones that let `principal` produce to `topic`
 * (Write on the topic; IdempotentWrite on the cluster for the idempotent producer).
 */
export function aclBindings(count: number, principal: string, topic: string): AclBinding[] {
  const out: AclBinding[] = [
    { resourceType: ResourceType.TOPIC, resourceName: topic, patternType: PatternType.LITERAL, principal, host: '*', operation: AclOperation.WRITE, permission: AclPermission.ALLOW },
    { resourceType: ResourceType.CLUSTER, resourceName: 'kafka-cluster', patternType: PatternType.LITERAL, principal, host: '*', operation: AclOperation.IDEMPOTENT_WRITE, permission: AclPermission.ALLOW },
  ]
  const ops = [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
  for (let i = out.length; i < count; i++) {
    const onTopic = i % 4 !== 0
    out.push({
      resourceType: onTopic ? ResourceType.TOPIC : ResourceType.GROUP,
      // A tenth are prefixes that also cover the benchmark's topic, so its check scans past them.
      resourceName: i % 10 === 0 ? 'perf' : `${onTopic ? 'topic' : 'group'}-${i}`,
      patternType: i % 10 === 0 ? PatternType.PREFIXED : PatternType.LITERAL,
      principal: `User:app-${i % 97}`,
      host: i % 3 === 0 ? `10.0.${i % 250}.${i % 200}` : '*',
      operation: ops[i % ops.length]!,
      permission: i % 7 === 0 ? AclPermission.DENY : AclPermission.ALLOW,
    })
  }
  return out
}
