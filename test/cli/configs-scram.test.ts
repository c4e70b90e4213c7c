// `skein configs --entity-type users` with SCRAM credentials, as kafka-configs: --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=...]' creates a user a SCRAM client (kcat, librdkafka) then logs
// in as, --describe shows the mechanisms and iterations (never the password), --delete-config removes one
// mechanism and its login stops working. The admin reaches the broker over SASL/PLAIN with --command-config.
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasKcat, startTestBroker, type TestBroker } from '../harness/index.js'
import { skein } from './helpers.js'

let tb: TestBroker
let adminBootstrap = ''
let scramBootstrap = ''
let config = ''

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=ADMIN://127.0.0.1:0,CLIENTS://127.0.0.1:0',
    'listener.security.protocol.map=ADMIN:SASL_PLAINTEXT,CLIENTS:SASL_PLAINTEXT',
    'inter.broker.listener.name=ADMIN',
    'sasl.mechanism.inter.broker.protocol=PLAIN',
    'listener.name.admin.sasl.enabled.mechanisms=PLAIN',
    'listener.name.admin.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";',
    'listener.name.clients.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512',
  ])
  const port = (name: string): number => tb.broker.endpoints.find((e) => e.listenerName === name)!.port
  adminBootstrap = `127.0.0.1:${port('ADMIN')}`
  scramBootstrap = `127.0.0.1:${port('CLIENTS')}`
  config = join(tb.dataDir, '..', `configs-scram-${process.pid}.properties`)
  writeFileSync(config, ['security.protocol=SASL_PLAINTEXT', 'sasl.mechanism=PLAIN', 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'].join('\n'))
}, 30_000)

afterAll(async () => {
  await tb?.stop()
})

const configs = (args: string[]) => skein(['configs', '--bootstrap-server', adminBootstrap, '--command-config', config, '--entity-type', 'users', ...args])

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

describe('skein configs: SCRAM credentials', () => {
  it('adds credentials a SCRAM client logs in with, describes them, deletes one mechanism', async () => {
    const added = await configs(['--entity-name', 'alice', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-512]'])
    expect(added.code, added.stderr.toString()).toBe(0)
    expect(added.out).toBe('Completed updating config for user alice.\n')

    const described = await configs(['--entity-name', 'alice', '--describe'])
    expect(described.code, described.stderr.toString()).toBe(0)
    expect(described.out).toBe("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    expect(described.out).not.toContain('secret')

    if (hasKcat()) {
      const login = await kcatLogin('SCRAM-SHA-256', 'alice', 'alice-secret')
      expect(login.ok, login.err).toBe(true)
      expect((await kcatLogin('SCRAM-SHA-512', 'alice', 'alice-512')).ok).toBe(true)
      expect((await kcatLogin('SCRAM-SHA-256', 'alice', 'wrong')).ok).toBe(false)
    }

    const deleted = await configs(['--entity-name', 'alice', '--alter', '--delete-config', 'SCRAM-SHA-512'])
    expect(deleted.code, deleted.stderr.toString()).toBe(0)
    expect((await configs(['--entity-name', 'alice', '--describe'])).out).toBe("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n")
    if (hasKcat()) expect((await kcatLogin('SCRAM-SHA-512', 'alice', 'alice-512')).ok).toBe(false)

    // Every user's credentials without --entity-name; a quota and a credential in one --alter.
    const both = await configs(['--entity-name', 'bob', '--alter', '--add-config', 'SCRAM-SHA-512=[password=bob-secret],producer_byte_rate=1048576'])
    expect(both.code, both.stderr.toString()).toBe(0)
    const all = await configs(['--describe'])
    expect(all.out).toContain("Quota configs for user-principal 'bob' are producer_byte_rate=1048576.0\n")
    expect(all.out).toContain("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n")
    expect(all.out).toContain("SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096\n")
  }, 60_000)

  it('refuses what kafka-configs refuses, before any request', async () => {
    for (const [args, message] of [
      [['--entity-name', 'carol', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=100,password=x]'], 'iterations must be an integer from 4096 to 16384'],
      [['--entity-name', 'carol', '--alter', '--add-config', 'SCRAM-SHA-256=[iterations=4096]'], 'needs password='],
      [['--entity-default', '--alter', '--add-config', 'SCRAM-SHA-256=[password=x]'], 'SCRAM credentials belong to one user'],
    ] as const) {
      const r = await configs([...args])
      expect(r.code).not.toBe(0)
      expect(r.stderr.toString()).toContain(message)
    }
    expect((await configs(['--entity-name', 'carol', '--describe'])).out).toBe('')
  }, 30_000)
})
