// `skein acls` against a broker with an authorizer, reached over SASL/PLAIN as the super user through
// --command-config: --add with principals, hosts, operations and the --producer/--consumer
// conveniences, PREFIXED patterns, --list by resource and principal, --remove with and without --force,
// in kafka-acls' output format.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { skein } from './helpers.js'

let tb: TestBroker
let bootstrap = ''
let config = ''
const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=SASL_PLAINTEXT://127.0.0.1:0',
    'listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT',
    'sasl.enabled.mechanisms=PLAIN',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
    'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
    'super.users=User:admin',
    'allow.everyone.if.no.acl.found=false',
  ])
  bootstrap = `127.0.0.1:${tb.broker.endpoints[0]!.port}`
  config = join(tb.dataDir, '..', `acls-cli-${process.pid}.properties`)
  writeFileSync(config, ['security.protocol=SASL_PLAINTEXT', 'sasl.mechanism=PLAIN', 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'].join('\n'))
}, 30_000)

afterAll(async () => {
  await tb?.stop()
})

const acls = (args: string[], input?: string) => skein(['acls', '--bootstrap-server', bootstrap, '--command-config', config, ...args], { input })

describe('skein acls', () => {
  it('adds, lists and removes ACLs with kafka-acls flags and output', async () => {
    const added = await acls(['--add', '--allow-principal', 'User:alice', '--allow-host', '10.0.0.1', '--operation', 'Read', '--operation', 'Describe', '--topic', 'orders', '--group', 'billing'])
    expect(added.code, added.stderr.toString()).toBe(0)
    expect(added.out).toContain('Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n \t(principal=User:alice, host=10.0.0.1, operation=READ, permissionType=ALLOW) ')
    expect(added.out).toContain('Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, patternType=LITERAL)`:')

    const producer = await acls(['--add', '--allow-principal', 'User:app', '--producer', '--idempotent', '--topic', 'events-', '--resource-pattern-type', 'PREFIXED', '--transactional-id', 'app-'])
    expect(producer.code, producer.stderr.toString()).toBe(0)
    const consumer = await acls(['--add', '--allow-principal', 'User:reader', '--consumer', '--topic', 'orders', '--group', 'readers'])
    expect(consumer.code, consumer.stderr.toString()).toBe(0)
    const denied = await acls(['--add', '--deny-principal', 'User:mallory', '--topic', '*'])
    expect(denied.code, denied.stderr.toString()).toBe(0)

    const all = await acls(['--list'])
    expect(all.code).toBe(0)
    for (const line of [
      '(principal=User:app, host=*, operation=WRITE, permissionType=ALLOW)',
      'ResourcePattern(resourceType=TOPIC, name=events-, patternType=PREFIXED)',
      'ResourcePattern(resourceType=TRANSACTIONAL_ID, name=app-, patternType=PREFIXED)',
      'ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=PREFIXED)',
      '(principal=User:app, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)',
      '(principal=User:reader, host=*, operation=READ, permissionType=ALLOW)',
      'ResourcePattern(resourceType=TOPIC, name=*, patternType=LITERAL)',
      '(principal=User:mallory, host=*, operation=ALL, permissionType=DENY)',
    ]) expect(all.out).toContain(line)

    const byTopic = await acls(['--list', '--topic', 'orders'])
    expect(byTopic.out).toContain('User:alice')
    expect(byTopic.out).toContain('User:reader')
    expect(byTopic.out).not.toContain('User:app')
    const byPrincipal = await acls(['--list', '--principal', 'User:reader'])
    expect(byPrincipal.out).toContain('name=readers')
    expect(byPrincipal.out).not.toContain('User:alice')

    // --remove asks first; "n" keeps everything.
    const kept = await acls(['--remove', '--allow-principal', 'User:alice', '--allow-host', '10.0.0.1', '--operation', 'Read', '--topic', 'orders'], 'n\n')
    expect(kept.code).toBe(1)
    expect((await acls(['--list', '--topic', 'orders'])).out).toContain('operation=READ, permissionType=ALLOW) ')
    const removed = await acls(['--remove', '--force', '--allow-principal', 'User:alice', '--allow-host', '10.0.0.1', '--operation', 'Read', '--topic', 'orders'])
    expect(removed.code, removed.stderr.toString()).toBe(0)
    expect(removed.out).toContain('(principal=User:alice, host=10.0.0.1, operation=READ, permissionType=ALLOW)')
    const after = (await acls(['--list', '--topic', 'orders'])).out
    expect(after).not.toContain('principal=User:alice, host=10.0.0.1, operation=READ')
    expect(after).toContain('principal=User:alice, host=10.0.0.1, operation=DESCRIBE')
    // Every ACL of a resource when no principal is given.
    expect((await acls(['--remove', '--force', '--topic', 'orders'])).code).toBe(0)
    expect((await acls(['--list', '--topic', 'orders'])).out).toBe('')
  }, 60_000)

  it('refuses bad input with one line', async () => {
    expect((await acls(['--add', '--operation', 'Read', '--topic', 't'])).stderr.toString()).toMatch(/needs --allow-principal or --deny-principal/)
    expect((await acls(['--add', '--allow-principal', 'alice', '--topic', 't'])).stderr.toString()).toMatch(/must be TYPE:NAME/)
    expect((await acls(['--add', '--allow-principal', 'User:a', '--operation', 'Fly', '--topic', 't'])).stderr.toString()).toMatch(/--operation Fly/)
    expect((await acls(['--add', '--allow-principal', 'User:a', '--topic', 't', '--resource-pattern-type', 'ANY'])).stderr.toString()).toMatch(/LITERAL or PREFIXED/)
    expect((await acls(['--add', '--allow-principal', 'User:a', '--consumer', '--topic', 't'])).stderr.toString()).toMatch(/--consumer needs --topic and --group/)
  })
})
