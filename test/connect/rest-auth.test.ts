// Connect's REST API behind Kafka's BasicAuthSecurityRestExtension (src/connect/runtime/rest-auth.ts):
// two distributed worker processes against a real broker, with rest.extension.classes and a JAAS file
// whose KafkaConnect section names a password file. Requests without or with wrong credentials get 401
// and the realm's challenge; good ones are served; a write sent to either worker reaches the leader (a
// follower forwards it with the caller's Authorization header); connectors running on the follower get
// their tasks, whose configs the follower sends the leader signed, while a forged internal request is
// refused. A worker naming an unknown extension class stops at start-up naming it. MirrorMaker's dedicated
// REST and its flows' workers take the same settings. The JAAS file
// parsing, the KAFKA_OPTS flag and the signature are checked as functions too.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Admin } from '../../src/client/index.js'
import { MirrorMakerConfig, startMirrorMaker } from '../../src/connect/mirror-maker.js'
import { silentLogger } from '../../src/observability/logger.js'
import { BASIC_AUTH_EXTENSION, connectRestAuth, InternalRequestSigner, loginConfigFromKafkaOpts, passwordFileFromJaas } from '../../src/connect/runtime/rest-auth.js'
import { parsePasswordProperties } from '../../src/http/index.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'
import { startWorker, waitFor, type WorkerProcess, MIRROR_ONE_REPLICA } from './helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-connect-auth-'))
const passwordFile = join(dir, 'connect.password')
const jaasFile = join(dir, 'connect_jaas.conf')
writeFileSync(passwordFile, '# Kafka Connect REST users\nadmin=admin-secret\nops: pass,with,commas\n')
writeFileSync(jaasFile, `// Kafka's example, as a deployment would have it\nKafkaConnect {\n  ${'org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule'} required\n  file="${passwordFile}";\n};\n`)

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
const ADMIN = basic('admin', 'admin-secret')

async function call(url: string, method: string, path: string, opts: { authorization?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.authorization !== undefined) headers['Authorization'] = opts.authorization
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json'
  const res = await fetch(url + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), signal: AbortSignal.timeout(60000) })
  const text = await res.text()
  let body: unknown = text
  try {
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    // not JSON: the text
  }
  return { status: res.status, body, headers: res.headers }
}

describe('Connect REST: the JAAS file, KAFKA_OPTS and internal signatures', () => {
  test('the KafkaConnect section names the password file; comments, other sections and quoting are read', () => {
    const text = `/* other services */ KafkaServer { x.Y required a="b"; };\n// c\nKafkaConnect {\n org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required file="/etc/a \\"b\\".pw" debug=true;\n};`
    expect(passwordFileFromJaas(text, 'j')).toBe('/etc/a "b".pw')
  })

  test('a JAAS file without the section, with another module or without file= is refused by name', () => {
    expect(() => passwordFileFromJaas('KafkaServer { a.B required; };', 'j.conf')).toThrow('j.conf: no KafkaConnect { ... }; section')
    expect(() => passwordFileFromJaas('KafkaConnect { com.example.Ldap required file="/x"; };', 'j.conf')).toThrow('login module com.example.Ldap is not supported')
    expect(() => passwordFileFromJaas('KafkaConnect { org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required; };', 'j.conf')).toThrow('needs file="/path/to/password-file"')
  })

  test('KAFKA_OPTS -Djava.security.auth.login.config=... is found, plain or quoted', () => {
    expect(loginConfigFromKafkaOpts('-Xmx1g -Djava.security.auth.login.config=/etc/kafka/connect_jaas.conf -Dx=y')).toBe('/etc/kafka/connect_jaas.conf')
    expect(loginConfigFromKafkaOpts('-Djava.security.auth.login.config="/a b/jaas.conf"')).toBe('/a b/jaas.conf')
    expect(loginConfigFromKafkaOpts('-Xmx1g')).toBeNull()
  })

  test('the extension reads the file that KAFKA_OPTS names when the worker config names none', () => {
    const auth = connectRestAuth([BASIC_AUTH_EXTENSION], null, { KAFKA_OPTS: `-Djava.security.auth.login.config=${jaasFile}` })
    expect(auth).not.toBeNull()
    expect(auth!.authenticator.check('/connectors', ADMIN).kind).toBe('ok')
    expect(auth!.authenticator.check('/connectors', basic('ops', 'pass,with,commas')).kind).toBe('ok')
    expect(auth!.authenticator.check('/connectors', basic('admin', 'wrong'))).toMatchObject({ kind: 'refused', status: 401, headers: { 'WWW-Authenticate': 'Basic realm="KafkaConnect"' } })
    expect(() => connectRestAuth([BASIC_AUTH_EXTENSION], null, {})).toThrow('needs a JAAS file with a KafkaConnect section')
    expect(() => connectRestAuth(['com.example.Nope'], null, {})).toThrow('unknown REST extension class com.example.Nope')
    expect(connectRestAuth([], null, {})).toBeNull()
  })

  test('a signature checks only for the same key, method, path and body', () => {
    const users = parsePasswordProperties('admin=admin-secret\n')
    const a = InternalRequestSigner.fromUsers(users)
    const sig = a.sign('POST', '/connectors/c/tasks', '[{}]')['X-Connect-Authorization']!
    expect(a.verify('POST', '/connectors/c/tasks', Buffer.from('[{}]'), sig)).toBe(true)
    expect(a.verify('POST', '/connectors/d/tasks', Buffer.from('[{}]'), sig)).toBe(false)
    expect(a.verify('POST', '/connectors/c/tasks', Buffer.from('[{"a":"b"}]'), sig)).toBe(false)
    expect(a.verify('POST', '/connectors/c/tasks', Buffer.from('[{}]'), 'bm90IGEgc2lnbmF0dXJl')).toBe(false)
    const other = InternalRequestSigner.fromUsers(parsePasswordProperties('admin=other\n'))
    expect(other.verify('POST', '/connectors/c/tasks', Buffer.from('[{}]'), sig)).toBe(false)
  })
})

describe('Connect REST BASIC authentication: two workers', () => {
  let broker: TestBroker
  let workers: WorkerProcess[] = []

  const workerProps = (): Record<string, string> => ({
    'bootstrap.servers': broker.bootstrap,
    'group.id': 'connect-auth',
    'config.storage.topic': 'connect-auth-configs',
    'offset.storage.topic': 'connect-auth-offsets',
    'status.storage.topic': 'connect-auth-status',
    'config.storage.replication.factor': '1',
    'offset.storage.replication.factor': '1',
    'status.storage.replication.factor': '1',
    'offset.storage.partitions': '2',
    'status.storage.partitions': '1',
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
    listeners: 'http://127.0.0.1:0',
    'scheduled.rebalance.max.delay.ms': '2000',
    'session.timeout.ms': '6000',
    'heartbeat.interval.ms': '1000',
    'rebalance.timeout.ms': '30000',
    'offset.flush.interval.ms': '1000',
    'rest.extension.classes': BASIC_AUTH_EXTENSION,
    'java.security.auth.login.config': jaasFile,
  })

  beforeAll(async () => {
    broker = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'num.partitions=1', 'group.min.session.timeout.ms=1000'])
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([{ name: 'auth-lines', numPartitions: 1, replicationFactor: 1 }])
    await admin.close()
    workers = await Promise.all([startWorker('distributed', workerProps()), startWorker('distributed', workerProps())])
    for (const w of workers) await waitFor(`${w.url} healthy`, async () => (await call(w.url, 'GET', '/health', { authorization: ADMIN })).status === 200)
  }, 120000)

  afterAll(async () => {
    for (const w of workers) await w.kill('SIGTERM').catch(() => {})
    await broker?.stop()
  }, 60000)

  test('no credentials and wrong credentials get 401 with the KafkaConnect challenge; good ones are served', async () => {
    for (const w of workers) {
      const none = await call(w.url, 'GET', '/connectors')
      expect(none.status).toBe(401)
      expect(none.headers.get('www-authenticate')).toBe('Basic realm="KafkaConnect"')
      expect((await call(w.url, 'GET', '/connectors', { authorization: basic('admin', 'nope') })).status).toBe(401)
      expect((await call(w.url, 'GET', '/connectors', { authorization: basic('nobody', 'admin-secret') })).status).toBe(401)
      expect((await call(w.url, 'GET', '/health')).status).toBe(401)
      const put = await call(w.url, 'PUT', '/connectors/unauthenticated/config', { body: { 'connector.class': 'FileStreamSource', file: '/dev/null', topic: 'auth-lines' } })
      expect(put.status).toBe(401)
      const ok = await call(w.url, 'GET', '/connectors', { authorization: ADMIN })
      expect(ok.status).toBe(200)
      expect(ok.body).toEqual([])
    }
  })

  test('writes through either worker reach the leader with the caller\'s credentials; connectors on the follower get their tasks', async () => {
    const names = ['src-0', 'src-1', 'src-2', 'src-3']
    for (const [i, name] of names.entries()) {
      const file = join(dir, `${name}.txt`)
      writeFileSync(file, `line of ${name}\n`)
      // Half through each worker: one of them is a follower, which forwards the PUT to the leader.
      const w = workers[i % 2]!
      const res = await call(w.url, 'PUT', `/connectors/${name}/config`, { authorization: i === 3 ? basic('ops', 'pass,with,commas') : ADMIN, body: { 'connector.class': 'FileStreamSource', file, topic: 'auth-lines' } })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      expect(res.body.name).toBe(name)
    }
    // Each worker lists what it has read from the config topic: the other worker's last write may arrive
    // a moment later (Kafka's workers are the same), so each is asked until it lists all four.
    for (const w of workers) {
      const listed = await waitFor(`every connector listed by ${w.url}`, async () => {
        const got = ((await call(w.url, 'GET', '/connectors', { authorization: ADMIN })).body as string[]).sort()
        return got.length === names.length ? got : null
      }, 30000)
      expect(listed).toEqual(names)
    }
    // Task configs of a connector running on the follower are sent to the leader signed.
    const statuses = await waitFor('every connector with a running task', async () => {
      const all = await Promise.all(names.map(async (n) => (await call(workers[0]!.url, 'GET', `/connectors/${n}/status`, { authorization: ADMIN })).body))
      return all.every((s) => s?.connector?.state === 'RUNNING' && s.tasks?.length === 1 && s.tasks[0].state === 'RUNNING') ? all : null
    }, 60000)
    const ids = workers.map((w) => new URL(w.url).host)
    const running = new Set(statuses.map((s) => s.connector.worker_id as string))
    expect([...running].sort()).toEqual([...ids].sort())
    const edited = await call(workers[1]!.url, 'PUT', '/connectors/src-0/pause', { authorization: ADMIN })
    expect(edited.status).toBe(202)
  }, 120000)

  test('an internal task-config request without a valid signature is refused, with or without a user', async () => {
    for (const w of workers) {
      expect((await call(w.url, 'POST', '/connectors/src-1/tasks?forward=false', { body: [{ evil: 'x' }] })).status).toBe(401)
      const forged = await call(w.url, 'POST', '/connectors/src-1/tasks?forward=false', { body: [{ evil: 'x' }], headers: { 'X-Connect-Authorization': Buffer.alloc(32).toString('base64'), 'X-Connect-Request-Signature-Algorithm': 'HmacSHA256' } })
      expect(forged.status).toBe(403)
      expect(forged.body.message).toContain('invalid signature')
      // A user's credentials do not stand in for a worker's signature.
      const unsigned = await call(w.url, 'POST', '/connectors/src-1/tasks?forward=false', { authorization: ADMIN, body: [{ evil: 'x' }] })
      expect(unsigned.status).toBe(400)
      expect(unsigned.body.message).toContain('missing required signature')
    }
    const tasks = await call(workers[0]!.url, 'GET', '/connectors/src-1/tasks', { authorization: ADMIN })
    expect(JSON.stringify(tasks.body)).not.toContain('evil')
  })

  test('an unknown class in rest.extension.classes stops the worker at start-up, naming it', async () => {
    const props = { ...workerProps(), 'rest.extension.classes': `${BASIC_AUTH_EXTENSION},com.example.NoSuchExtension` }
    await expect(startWorker('distributed', props, [], 30000)).rejects.toThrow(/com\.example\.NoSuchExtension/)
  })

  test('MirrorMaker\'s dedicated REST and its flows\' worker REST take the same two settings', async () => {
    const mm = await startMirrorMaker(new MirrorMakerConfig({
      clusters: 'A, B',
      'A.bootstrap.servers': broker.bootstrap,
      'B.bootstrap.servers': broker.bootstrap,
      'A->B.enabled': 'true',
      'A->B.topics': 'no-such-topic-for-auth',
      'B->A.emit.heartbeats.enabled': 'false',
      'A->B.emit.heartbeats.enabled': 'false',
      ...MIRROR_ONE_REPLICA,
      'dedicated.mode.enable.internal.rest': 'true',
      listeners: 'http://127.0.0.1:0',
      'rest.extension.classes': BASIC_AUTH_EXTENSION,
      'java.security.auth.login.config': jaasFile,
    }), silentLogger())
    try {
      const base = mm.restUrls[0]!
      const none = await call(base, 'GET', '/')
      expect(none.status).toBe(401)
      expect(none.headers.get('www-authenticate')).toBe('Basic realm="KafkaConnect"')
      expect((await call(base, 'GET', '/', { authorization: ADMIN })).status).toBe(200)
      for (const f of mm.flows) {
        expect((await call(f.connect.url, 'GET', '/connectors')).status).toBe(401)
        expect((await call(f.connect.url, 'GET', '/connectors', { authorization: ADMIN })).status).toBe(200)
      }
    } finally {
      await mm.stop()
    }
  }, 60000)
})
