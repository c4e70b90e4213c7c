// `skein configs --entity-type users` with SCRAM credentials, as kafka-configs: --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=...]' makes credentials as kafka-configs makes them (salted by the
// client, sent with AlterUserScramCredentials); a SCRAM client (kcat, librdkafka; and the skein tools) then
// logs in with that mechanism and password only, --describe shows the mechanisms and iterations (never the
// password), --delete-config removes one mechanism and its login stops working. One broker with an
// authorizer: the administrator (a super user) logs in with SASL/PLAIN on its own listener through
// --command-config, the users by SCRAM on another; a user without Alter on the cluster gets Kafka's error.
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasKcat, startTestBroker, type TestBroker } from '../harness/index.js'
import { oneLine, skein } from './helpers.js'

let tb: TestBroker
let adminBootstrap = ''
let scramBootstrap = ''

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=ADMIN://127.0.0.1:0,CLIENTS://127.0.0.1:0',
    'listener.security.protocol.map=ADMIN:SASL_PLAINTEXT,CLIENTS:SASL_PLAINTEXT',
    'inter.broker.listener.name=ADMIN',
    'sasl.mechanism.inter.broker.protocol=PLAIN',
    'listener.name.admin.sasl.enabled.mechanisms=PLAIN',
    'listener.name.admin.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";',
    'listener.name.clients.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512',
    'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
    'super.users=User:admin',
    'allow.everyone.if.no.acl.found=false',
  ])
  const port = (name: string): number => tb.broker.endpoints.find((e) => e.listenerName === name)!.port
  adminBootstrap = `127.0.0.1:${port('ADMIN')}`
  scramBootstrap = `127.0.0.1:${port('CLIENTS')}`
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

/** `skein configs` as the administrator (PLAIN, ADMIN listener), or as a SCRAM user on the CLIENTS listener. */
const configs = (args: string[], as?: { user: string; password: string; mechanism: string }) =>
  as === undefined
    ? skein(['configs', '--bootstrap-server', adminBootstrap, '--command-config', loginFile('admin', 'admin-secret', 'PLAIN'), ...args])
    : skein(['configs', '--bootstrap-server', scramBootstrap, '--command-config', loginFile(as.user, as.password, as.mechanism), ...args])
const users = (args: string[]) => configs(['--entity-type', 'users', ...args])

/** Lists the cluster's metadata with kcat logged in by SCRAM; its exit status says whether the login worked. */
function kcatLogin(mechanism: string, user: string, password: string): Promise<{ ok: boolean; err: string }> {
  // Asynchronously: the broker runs in this process and must go on answering.
  const child = spawn('kcat', ['-L', '-b', scramBootstrap, '-m', '3', '-X', 'security.protocol=SASL_PLAINTEXT', '-X', `sasl.mechanisms=${mechanism}`, '-X', `sasl.username=${user}`, '-X', `sasl.password=${password}`])
  let out = ''
  let err = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (err += d.toString()))
  return new Promise((resolve) => child.on('close', (code) => resolve({ ok: code === 0 && / broker/.test(out), err })))
}

/** Whether user can log in with the skein tools (a metadata request: listing topics needs no ACL, it lists what the user may see). */
const logsIn = async (user: string, password: string, mechanism: string) => {
  const r = await skein(['topics', '--bootstrap-server', scramBootstrap, '--command-config', loginFile(user, password, mechanism), '--list'])
  return r.code === 0 ? 'yes' : oneLine(r.stderr.toString())
}

describe('skein configs: SCRAM credentials', () => {
  it('adds credentials a SCRAM client (kcat) logs in with, describes them, deletes one mechanism', async () => {
    const added = await users(['--entity-name', 'alice', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-512]'])
    expect(added.code, added.stderr.toString()).toBe(0)
    expect(added.out).toBe('Completed updating config for user alice.\n')

    const described = await users(['--entity-name', 'alice', '--describe'])
    expect(described.code, described.stderr.toString()).toBe(0)
    expect(described.out).toBe("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    expect(described.out).not.toContain('secret')

    if (hasKcat()) {
      const login = await kcatLogin('SCRAM-SHA-256', 'alice', 'alice-secret')
      expect(login.ok, login.err).toBe(true)
      expect((await kcatLogin('SCRAM-SHA-512', 'alice', 'alice-512')).ok).toBe(true)
      expect((await kcatLogin('SCRAM-SHA-256', 'alice', 'wrong')).ok).toBe(false)
    }

    const deleted = await users(['--entity-name', 'alice', '--alter', '--delete-config', 'SCRAM-SHA-512'])
    expect(deleted.code, deleted.stderr.toString()).toBe(0)
    expect((await users(['--entity-name', 'alice', '--describe'])).out).toBe("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n")
    if (hasKcat()) expect((await kcatLogin('SCRAM-SHA-512', 'alice', 'alice-512')).ok).toBe(false)

    // Every user's credentials without --entity-name; a quota and a credential in one --alter.
    const both = await users(['--entity-name', 'bob', '--alter', '--add-config', 'SCRAM-SHA-512=[password=bob-secret],producer_byte_rate=1048576'])
    expect(both.code, both.stderr.toString()).toBe(0)
    const all = await users(['--describe'])
    expect(all.out).toContain("Quota configs for user-principal 'bob' are producer_byte_rate=1048576.0\n")
    expect(all.out).toContain("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n")
    expect(all.out).toContain("SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096\n")
  }, 60_000)

  it('creates a user that then logs in with that mechanism and password only (skein tools), and deletes it', async () => {
    const added = await users(['--entity-name', 'erin', '--alter', '--add-config', 'SCRAM-SHA-512=[password=erin-secret]'])
    expect([added.code, added.out, added.stderr.toString()]).toEqual([0, 'Completed updating config for user erin.\n', ''])
    expect(await logsIn('erin', 'erin-secret', 'SCRAM-SHA-512')).toBe('yes')
    expect(await logsIn('erin', 'wrong', 'SCRAM-SHA-512')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)
    expect(await logsIn('erin', 'erin-secret', 'SCRAM-SHA-256')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)

    const deleted = await users(['--entity-name', 'erin', '--alter', '--delete-config', 'SCRAM-SHA-512'])
    expect([deleted.code, deleted.out]).toEqual([0, 'Completed updating config for user erin.\n'])
    expect(await logsIn('erin', 'erin-secret', 'SCRAM-SHA-512')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)
  })

  it('takes both mechanisms at once, iterations, and the --user shorthand', async () => {
    const added = await configs(['--user', 'frank', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=8192,password=frank-256],SCRAM-SHA-512=[password=frank-512]'])
    expect([added.code, added.stderr.toString()]).toEqual([0, ''])
    expect(await logsIn('frank', 'frank-256', 'SCRAM-SHA-256')).toBe('yes')
    expect(await logsIn('frank', 'frank-512', 'SCRAM-SHA-512')).toBe('yes')
  })

  it('refuses what kafka-configs refuses with one line before any request, and a user without Alter on the cluster with Kafka\'s error', async () => {
    const cases: [string[], RegExp][] = [
      [['--entity-name', 'carol', '--alter', '--add-config', 'SCRAM-SHA-1=[password=p]'], /'SCRAM-SHA-1' is not a SCRAM mechanism/],
      [['--entity-name', 'carol', '--alter', '--add-config', 'SCRAM-SHA-512=[iterations=4096]'], /SCRAM-SHA-512=\[\.\.\.\] needs password=/],
      [['--entity-name', 'carol', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=4096]'], /SCRAM-SHA-256=\[\.\.\.\] needs password=/],
      [['--entity-name', 'carol', '--alter', '--add-config', 'SCRAM-SHA-512=[iterations=100,password=p]'], /iterations must be an integer from 4096 to 16384/],
      [['--entity-name', 'carol', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=100,password=x]'], /iterations must be an integer from 4096 to 16384/],
      [['--entity-default', '--alter', '--add-config', 'SCRAM-SHA-512=[password=p]'], /SCRAM credentials belong to one user/],
      [['--entity-default', '--alter', '--add-config', 'SCRAM-SHA-256=[password=x]'], /SCRAM credentials belong to one user/],
    ]
    for (const [args, message] of cases) {
      const r = await users(args)
      expect(r.code, args.join(' ')).toBe(1)
      expect(oneLine(r.stderr.toString()), args.join(' ')).toMatch(message)
    }
    // None of them reached the broker.
    expect((await users(['--entity-name', 'carol', '--describe'])).out).toBe('')

    await configs(['--user', 'carol', '--alter', '--add-config', 'SCRAM-SHA-512=[password=carol-secret]'])
    const refused = await configs(['--user', 'dave', '--alter', '--add-config', 'SCRAM-SHA-512=[password=dave-secret]'], { user: 'carol', password: 'carol-secret', mechanism: 'SCRAM-SHA-512' })
    expect(refused.code).toBe(1)
    expect(oneLine(refused.stderr.toString())).toMatch(/CLUSTER_AUTHORIZATION_FAILED/)
    expect(await logsIn('dave', 'dave-secret', 'SCRAM-SHA-512')).toMatch(/SASL_AUTHENTICATION_FAILED|authentication failed/i)
  })
})
