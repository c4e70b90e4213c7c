// Connect workers as real processes (distributed mode) for what the other tests do not cover:
//   - exactly-once sources (exactly.once.source.support=enabled, KIP-618): a datagen connector whose only
//     worker is SIGKILLed mid-run and a new worker takes over; a read_committed consumer sees every
//     record exactly once (records and source offsets are committed in the same transactions, and the
//     new task's producer fences the dead one's);
//   - a transformation loaded from plugin.path (a folder module exporting plugin descriptors, importing
//     the plugin API from the package), listed by /connector-plugins?connectorsOnly=false;
//   - pause and resume, stop and an offsets alteration (PATCH) that makes a FileStreamSource read its
//     file again from the start;
//   - /admin/loggers: a namespace's level set on the worker, and read back.
import { appendFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Admin, Consumer, type ConsumedRecord } from '../../src/client/index.js'
import { REPO_ROOT, startTestBroker, type TestBroker } from '../harness/broker.js'
import { rest, startReadyWorker, waitFor, type WorkerProcess } from './helpers.js'

async function readTopic(bootstrap: string, topic: string, opts: { readCommitted?: boolean; min?: number; idleMs?: number } = {}): Promise<ConsumedRecord[]> {
  const admin = new Admin({ bootstrapServers: bootstrap })
  let partitions: number
  try {
    partitions = await waitFor(`topic ${topic}`, async () => (await admin.describeTopics([topic]))[0]!.partitions.length)
  } finally {
    await admin.close()
  }
  const c = new Consumer({ bootstrapServers: bootstrap, autoOffsetReset: 'earliest', isolationLevel: opts.readCommitted === true ? 'read_committed' : 'read_uncommitted' })
  const tps = Array.from({ length: partitions }, (_v, partition) => ({ topic, partition }))
  c.assign(tps)
  for (const tp of tps) c.seek(tp.topic, tp.partition, 'earliest')
  const out: ConsumedRecord[] = []
  const deadline = Date.now() + 90000
  let lastData = Date.now()
  try {
    while (Date.now() < deadline) {
      const got = await c.poll(500)
      if (got.length > 0) lastData = Date.now()
      out.push(...got)
      // Done when nothing came for idleMs with at least min records, or for 3 s without them.
      const idle = Date.now() - lastData
      if (idle >= (opts.idleMs ?? 1500) && (out.length >= (opts.min ?? 0) || idle >= 3000)) break
    }
  } finally {
    await c.close()
  }
  return out
}

describe('Connect runtime: exactly-once sources, plugin.path, pause/resume, offsets, loggers', () => {
  let broker: TestBroker
  const workers: WorkerProcess[] = []
  const dir = mkdtempSync(join(tmpdir(), 'skein-connect-runtime-'))
  const pluginDir = join(dir, 'plugins')

  const props = (): Record<string, string> => ({
    'bootstrap.servers': broker.bootstrap,
    'group.id': 'connect-rt',
    'config.storage.topic': 'connect-rt-configs',
    'offset.storage.topic': 'connect-rt-offsets',
    'status.storage.topic': 'connect-rt-status',
    'config.storage.replication.factor': '1',
    'offset.storage.replication.factor': '1',
    'status.storage.replication.factor': '1',
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'value.converter.schemas.enable': 'false',
    listeners: 'http://127.0.0.1:0',
    'exactly.once.source.support': 'enabled',
    'plugin.path': pluginDir,
    'scheduled.rebalance.max.delay.ms': '2000',
    'session.timeout.ms': '6000',
    'heartbeat.interval.ms': '1000',
    'offset.flush.interval.ms': '500',
  })

  beforeAll(async () => {
    broker = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'num.partitions=1', 'group.min.session.timeout.ms=1000', 'transaction.state.log.replication.factor=1', 'transaction.state.log.min.isr=1'])
    // A plugin as a user would write one: a folder module that imports the plugin API from the package.
    mkdirSync(join(pluginDir, 'prefix-router'), { recursive: true })
    writeFileSync(join(pluginDir, 'prefix-router', 'index.mjs'), `
import { ConfigDef } from ${JSON.stringify(pathToFileURL(join(REPO_ROOT, 'dist', 'src', 'connect', 'index.js')).href)}
export class PrefixRouter {
  config() { return new ConfigDef().define('prefix', 'STRING', 'routed-', 'HIGH', 'What is put before the topic name.') }
  configure(props) { this.prefix = this.config().parse(props)['prefix'] }
  apply(record) { return { ...record, topic: this.prefix + record.topic } }
}
export const plugins = [{ className: 'example.PrefixRouter', kind: 'transformation', aliases: ['PrefixRouter'], version: '0.1.0', create: () => new PrefixRouter() }]
`)
  }, 60000)

  afterAll(async () => {
    for (const w of workers) await w.kill('SIGTERM').catch(() => {})
    await broker?.stop().catch(() => {})
  }, 60000)

  test('an exactly-once datagen source survives SIGKILL of its worker with every record once', async () => {
    const a = await startReadyWorker('distributed', props())
    workers.push(a)
    const res = await rest(a.url, 'POST', '/connectors', {
      name: 'gen',
      config: {
        'connector.class': 'DatagenConnector', 'kafka.topic': 'orders', quickstart: 'orders', iterations: '20000', 'max.interval': '0', 'batch.size': '50',
        'tasks.max': '1', 'exactly.once.support': 'required', 'transaction.boundary': 'poll',
      },
    })
    expect(res.status).toBe(201)
    // Partway through: some transactions committed, more to come.
    await waitFor('some committed orders', async () => (await readTopic(broker.bootstrap, 'orders', { readCommitted: true, min: 1000, idleMs: 0 })).length >= 1000, 60000, 200)
    await a.kill('SIGKILL')
    const atKill = (await readTopic(broker.bootstrap, 'orders', { readCommitted: true, idleMs: 1000 })).length
    // Killed mid-run (else this test would prove nothing about the takeover).
    expect(atKill).toBeLessThan(20000)
    const b = await startReadyWorker('distributed', props())
    workers.push(b)
    const records = await waitFor('20000 committed orders', async () => {
      const r = await readTopic(broker.bootstrap, 'orders', { readCommitted: true, min: 20000, idleMs: 2000 })
      return r.length >= 20000 ? r : undefined
    }, 120000, 1000)
    const ids = records.map((r) => Number(r.key!.toString()))
    expect(ids.length).toBe(20000)
    expect(new Set(ids).size).toBe(20000)
    expect(Math.min(...ids)).toBe(0)
    expect(Math.max(...ids)).toBe(19999)
    const offsets = await rest(b.url, 'GET', '/connectors/gen/offsets')
    expect(offsets.body).toEqual({ offsets: [{ partition: { 'task.id': 0 }, offset: { iteration: 20000 } }] })
  }, 240000)

  test('a plugin.path transform, pause and resume, stop and an offsets alteration, /admin/loggers', async () => {
    const w = workers[workers.length - 1]!
    const plugins = await rest(w.url, 'GET', '/connector-plugins?connectorsOnly=false')
    expect(plugins.body).toContainEqual({ class: 'example.PrefixRouter', type: 'transformation', version: '0.1.0' })

    const file = join(dir, 'lines.txt')
    writeFileSync(file, 'one\ntwo\n')
    const created = await rest(w.url, 'PUT', '/connectors/lines/config', {
      'connector.class': 'FileStreamSource', file, topic: 'lines', 'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
      transforms: 'route', 'transforms.route.type': 'PrefixRouter', 'transforms.route.prefix': 'routed-',
    })
    expect(created.status).toBe(201)
    const values = async (min: number): Promise<string[]> => (await readTopic(broker.bootstrap, 'routed-lines', { min, idleMs: 1000 })).map((r) => r.value!.toString())
    expect(await values(2)).toEqual(['one', 'two'])

    expect((await rest(w.url, 'PUT', '/connectors/lines/pause')).status).toBe(202)
    await waitFor('lines paused', async () => {
      const s = (await rest(w.url, 'GET', '/connectors/lines/status')).body
      return s.connector.state === 'PAUSED' && s.tasks[0]?.state === 'PAUSED'
    })
    appendFileSync(file, 'three\n')
    await new Promise((r) => setTimeout(r, 1500))
    expect(await values(2)).toEqual(['one', 'two'])
    expect((await rest(w.url, 'PUT', '/connectors/lines/resume')).status).toBe(202)
    await waitFor('three copied after resume', async () => (await values(3)).length === 3)

    // Stopped, its offset set back to the start: resumed, it reads the whole file again.
    expect((await rest(w.url, 'PUT', '/connectors/lines/stop')).status).toBe(204)
    await waitFor('lines stopped', async () => (await rest(w.url, 'GET', '/connectors/lines/status')).body.connector.state === 'STOPPED')
    const altered = await rest(w.url, 'PATCH', '/connectors/lines/offsets', { offsets: [{ partition: { filename: file }, offset: { position: 0 } }] })
    expect(altered).toEqual({ status: 200, body: { message: 'The offsets for this connector have been altered successfully' } })
    expect((await rest(w.url, 'GET', '/connectors/lines/offsets')).body).toEqual({ offsets: [{ partition: { filename: file }, offset: { position: 0 } }] })
    expect((await rest(w.url, 'PUT', '/connectors/lines/resume')).status).toBe(202)
    await waitFor('the file read again', async () => (await values(6)).length === 6)
    expect(await values(6)).toEqual(['one', 'two', 'three', 'one', 'two', 'three'])

    const set = await rest(w.url, 'PUT', '/admin/loggers/skein.connect', { level: 'DEBUG' })
    expect(set.status).toBe(200)
    expect(set.body).toEqual(expect.arrayContaining(['skein.connect', 'skein.connect.herder', 'skein.connect.worker']))
    expect((await rest(w.url, 'GET', '/admin/loggers/skein.connect.worker')).body).toMatchObject({ level: 'DEBUG', last_modified: expect.any(Number) })
    expect((await rest(w.url, 'GET', '/admin/loggers')).body.root).toEqual({ level: 'INFO' })
    expect((await rest(w.url, 'PUT', '/admin/loggers/skein.connect', { level: 'LOUD' })).status).toBe(404)
  }, 180000)
})
