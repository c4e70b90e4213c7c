// Kafka Connect's REST API over https with mutual TLS (issue 31), Kafka Connect's names: listeners=https://,
// listeners.https.ssl.* (all or nothing, else the worker's ssl.*), ssl.client.auth=required. Two
// distributed workers in this process against a real broker: curl without a client certificate or with
// one of another CA is refused, with a trusted one it gets 200; a connector created on the follower is
// forwarded to the leader over https, with the worker's own certificate; the workers advertise https URLs.
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MirrorMakerConfig, startMirrorMaker } from '../../src/connect/mirror-maker.js'
import { type ConnectHandle, startConnect } from '../../src/connect/runtime/connect.js'
import { silentLogger } from '../../src/observability/logger.js'
import { makeTestCertificates, startTestBroker, type TestBroker, type TestCertificates } from '../harness/index.js'
import { waitFor, MIRROR_ONE_REPLICA } from './helpers.js'

let certs: TestCertificates
let tb: TestBroker
let dir: string
const workers: ConnectHandle[] = []

function curl(url: string, args: string[] = []): Promise<{ code: number; status: number; body: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '--max-time', '20', '--cacert', certs.ca, '-o', '-', '-w', '\n%{http_code}', ...args, url], (err, stdout) => {
      const cut = stdout.lastIndexOf('\n')
      resolve({ code: err === null ? 0 : Number((err as { code?: number }).code ?? -1), status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) })
    })
  })
}

const good = (): string[] => ['--cert', certs.clientCert, '--key', certs.clientKey]

function workerProps(extra: Record<string, string>): Record<string, string> {
  return {
    'bootstrap.servers': tb.bootstrap,
    'group.id': 'https-connect',
    'config.storage.topic': 'https-connect-configs',
    'offset.storage.topic': 'https-connect-offsets',
    'status.storage.topic': 'https-connect-status',
    'config.storage.replication.factor': '1',
    'offset.storage.replication.factor': '1',
    'status.storage.replication.factor': '1',
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
    listeners: 'https://127.0.0.1:0',
    ...extra,
  }
}

beforeAll(async () => {
  certs = makeTestCertificates()
  tb = await startTestBroker(['num.partitions=1'])
  dir = mkdtempSync(join(tmpdir(), 'skein-connect-https-'))
  // One worker with listeners.https.ssl.*, the other with the worker's ssl.* (the fallback).
  workers.push(await startConnect({ mode: 'distributed', log: silentLogger(), props: workerProps({
    'listeners.https.ssl.keystore.type': 'PEM',
    'listeners.https.ssl.keystore.location': certs.serverKeystore,
    'listeners.https.ssl.truststore.type': 'PEM',
    'listeners.https.ssl.truststore.location': certs.ca,
    'listeners.https.ssl.client.auth': 'required',
  }) }))
  workers.push(await startConnect({ mode: 'distributed', log: silentLogger(), props: workerProps({
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': certs.serverEncryptedKeystore,
    'ssl.key.password': certs.keyPassword,
    'ssl.truststore.location': certs.ca,
    'ssl.client.auth': 'required',
  }) }))
  for (const w of workers) await waitFor(`${w.url} ready`, async () => w.herder.ready, 60_000)
}, 120_000)

afterAll(async () => {
  for (const w of workers.splice(0)) await w.stop()
  await tb?.stop()
  certs?.cleanup()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe('Kafka Connect REST over https with ssl.client.auth=required', () => {
  it('advertises https URLs and refuses clients without a trusted certificate', async () => {
    for (const w of workers) {
      expect(w.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
      expect((await curl(`${w.url}/`)).code).not.toBe(0)
      expect((await curl(`${w.url}/`, ['--cert', certs.strangerCert, '--key', certs.strangerKey])).code).not.toBe(0)
      const root = await curl(`${w.url}/`, good())
      expect(root.status).toBe(200)
      expect(JSON.parse(root.body)).toMatchObject({ version: expect.any(String) })
    }
  })

  it('forwards a connector created on the follower to the leader over https', async () => {
    const file = join(dir, 'source.txt')
    writeFileSync(file, 'a line\n')
    // One connector through each worker: whichever is not the leader forwards its POST.
    for (const [i, w] of workers.entries()) {
      const body = JSON.stringify({ name: `https-source-${i}`, config: { 'connector.class': 'FileStreamSource', file, topic: 'https-connect-out', 'tasks.max': '1' } })
      const created = await curl(`${w.url}/connectors`, [...good(), '-H', 'Content-Type: application/json', '-d', body])
      expect(created.status, created.body).toBe(201)
    }
    for (const w of workers) {
      await waitFor(`${w.url} lists both connectors`, async () => {
        const list = await curl(`${w.url}/connectors`, good())
        return list.status === 200 && JSON.stringify((JSON.parse(list.body) as string[]).sort()) === JSON.stringify(['https-source-0', 'https-source-1'])
      }, 30_000)
    }
  })

  it('stops start-up naming the setting: https without a key store, a wrong key password', async () => {
    await expect(startConnect({ mode: 'distributed', log: silentLogger(), props: workerProps({}) })).rejects.toThrow('listeners=https://127.0.0.1:0 is https and needs a key store: set ssl.keystore.location')
    await expect(startConnect({ mode: 'distributed', log: silentLogger(), props: workerProps({ 'listeners.https.ssl.keystore.location': certs.serverEncryptedKeystore, 'listeners.https.ssl.key.password': 'wrong' }) }))
      .rejects.toThrow(/^listeners\.https\.ssl\.keystore\.location=.*: cannot load the key and certificate .*check listeners\.https\.ssl\.keystore\.type and listeners\.https\.ssl\.key\.password/)
  })
})

describe("MirrorMaker's own REST server (dedicated.mode.enable.internal.rest) over https", () => {
  const mirrorProps = (extra: Record<string, string>): MirrorMakerConfig => new MirrorMakerConfig({
    clusters: 'A, B',
    'A.bootstrap.servers': tb.bootstrap,
    'B.bootstrap.servers': tb.bootstrap,
    'A->B.enabled': 'true',
    'A->B.topics': 'https-mm-nothing',
    ...MIRROR_ONE_REPLICA,
    'dedicated.mode.enable.internal.rest': 'true',
    listeners: 'https://127.0.0.1:0',
    ...extra,
  })

  it('refuses to start without a key store, naming the setting', async () => {
    await expect(startMirrorMaker(mirrorProps({}), silentLogger())).rejects.toThrow('listeners=https://127.0.0.1:0 is https and needs a key store: set ssl.keystore.location')
  })

  it('serves /health over https with listeners.https.ssl.* and ssl.client.auth=required', async () => {
    const mm = await startMirrorMaker(mirrorProps({
      'listeners.https.ssl.keystore.location': certs.serverKeystore,
      'listeners.https.ssl.truststore.location': certs.ca,
      'listeners.https.ssl.client.auth': 'required',
    }), silentLogger())
    try {
      const base = mm.restUrls[0]!
      expect(base).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
      expect((await curl(`${base}/health`)).code).not.toBe(0)
      await waitFor('healthy over https', async () => (await curl(`${base}/health`, good())).status === 200, 60_000)
    } finally {
      await mm.stop()
    }
  }, 90_000)
})
