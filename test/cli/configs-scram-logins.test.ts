// `skein configs --entity-type users --alter --add-config 'SCRAM-SHA-512=[password=...]'` and
// `--delete-config SCRAM-SHA-512`: SCRAM credentials made as kafka-configs makes them (salted by the client,
// sent with AlterUserScramCredentials), checked by logging in with them over SASL_PLAINTEXT to a real
// broker with an authorizer; the administrator logs in with PLAIN.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { oneLine, skein } from './helpers.js'

let tb: TestBroker
let bootstrap = ''
const ADMIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=SASL_PLAINTEXT://127.0.0.1:0',
    'listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT',
    'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${ADMIN_JAAS}`,
    'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
    'super.users=User:admin',
    'allow.everyone.if.no.acl.found=false',
  ])
  bootstrap = `127.0.0.1:${tb.broker.endpoints[0]!.port}`
}, 30_000)

afterAll(async () => {
  await tb?.stop()
})

/** A client properties file logging in as user with password by mechanism. */
function loginFile(user: string, password: string, mechanism: string): string {
  const module = mechanism === 'PLAIN' ? 'plain.PlainLoginModule' : 'scram.ScramLoginModule'
  const path = join(tb.dataDir, '..', `configs-scram-${process.pid}-${user}-${password}-${mechanism}.properties`)
  writeFileSync(path, ['security.protocol=SASL_PLAINTEXT', `sasl.mechanism=${mechanism}`, `sasl.jaas.config=org.apache.kafka.common.security.${module} required username="${user}" password="${password}";`].join('\n'))
  return path
}

const configs = (args: string[], as = loginFile('admin', 'admin-secret', 'PLAIN')) => skein(['configs', '--bootstrap-server', bootstrap, '--command-config', as, ...args])
/** Whether user can log in (a metadata request: listing topics needs no ACL, it lists what the user may see). */
const logsIn = async (user: string, password: string, mechanism: string) => {
  const r = await skein(['topics', '--bootstrap-server', bootstrap, '--command-config', loginFile(user, password, mechanism), '--list'])
  return r.code === 0 ? 'yes' : oneLine(r.stderr.toString())
}

describe('skein configs: SCRAM credentials under an authorizer', () => {
  it('creates a user that then logs in with that mechanism and password only, and deletes it', async () => {
    const added = await configs(['--entity-type', 'users', '--entity-name', 'alice', '--alter', '--add-config', 'SCRAM-SHA-512=[password=alice-secret]'])
    expect([added.code, added.out, added.stderr.toString()]).toEqual([0, 'Completed updating config for user alice.\n', ''])
    expect(await logsIn('alice', 'alice-secret', 'SCRAM-SHA-512')).toBe('yes')
    expect(await logsIn('alice', 'wrong', 'SCRAM-SHA-512')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)
    expect(await logsIn('alice', 'alice-secret', 'SCRAM-SHA-256')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)

    const deleted = await configs(['--entity-type', 'users', '--entity-name', 'alice', '--alter', '--delete-config', 'SCRAM-SHA-512'])
    expect([deleted.code, deleted.out]).toEqual([0, 'Completed updating config for user alice.\n'])
    expect(await logsIn('alice', 'alice-secret', 'SCRAM-SHA-512')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)
  })

  it('takes both mechanisms at once, iterations, and the --user shorthand', async () => {
    const added = await configs(['--user', 'bob', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=8192,password=bob-256],SCRAM-SHA-512=[password=bob-512]'])
    expect([added.code, added.stderr.toString()]).toEqual([0, ''])
    expect(await logsIn('bob', 'bob-256', 'SCRAM-SHA-256')).toBe('yes')
    expect(await logsIn('bob', 'bob-512', 'SCRAM-SHA-512')).toBe('yes')
  })

  it('refuses bad input with one line before connecting, and a user without Alter on the cluster with Kafka\'s error', async () => {
    const cases: [string[], RegExp][] = [
      [['--entity-type', 'users', '--entity-name', 'x', '--alter', '--add-config', 'SCRAM-SHA-1=[password=p]'], /'SCRAM-SHA-1' is not a SCRAM mechanism/],
      [['--entity-type', 'users', '--entity-name', 'x', '--alter', '--add-config', 'SCRAM-SHA-512=[iterations=4096]'], /SCRAM-SHA-512=\[\.\.\.\] needs password=/],
      [['--entity-type', 'users', '--entity-name', 'x', '--alter', '--add-config', 'SCRAM-SHA-512=[iterations=100,password=p]'], /iterations must be an integer from 4096 to 16384/],
      [['--entity-type', 'users', '--entity-default', '--alter', '--add-config', 'SCRAM-SHA-512=[password=p]'], /SCRAM credentials belong to one user/],
    ]
    for (const [args, message] of cases) {
      const r = await configs(args)
      expect(r.code, args.join(' ')).toBe(1)
      expect(oneLine(r.stderr.toString()), args.join(' ')).toMatch(message)
    }
    await configs(['--user', 'carol', '--alter', '--add-config', 'SCRAM-SHA-512=[password=carol-secret]'])
    const refused = await configs(['--user', 'dave', '--alter', '--add-config', 'SCRAM-SHA-512=[password=dave-secret]'], loginFile('carol', 'carol-secret', 'SCRAM-SHA-512'))
    expect(refused.code).toBe(1)
    expect(oneLine(refused.stderr.toString())).toMatch(/CLUSTER_AUTHORIZATION_FAILED/)
    expect(await logsIn('dave', 'dave-secret', 'SCRAM-SHA-512')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)
  })
})
