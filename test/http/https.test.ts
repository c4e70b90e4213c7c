// HTTPS and mutual TLS on the HTTP services (issue 31), over real sockets with certificates made by the
// openssl CLI at test time (test/harness/security.ts) and real clients (curl, node:tls): the REST Proxy,
// its console and WebSocket streams, the Schema Registry; ssl.client.authentication REQUIRED refuses a
// client without a certificate and one of another CA, REQUESTED lets the first in but not the second;
// BASIC authentication over https; start-up errors that name the setting. And the uWS fact that made
// src/http/tls-front.ts necessary, kept checked: uWS's own SSLApp with a CA lets a client without a
// certificate in.
import { execFile, execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/index.js'
import { ConfigException } from '../../src/client/errors.js'
import { httpListenerTls } from '../../src/client/http-tls.js'
import { webFront } from '../../src/console/index.js'
import { parseRegistryProperties, registrySettings } from '../../src/config/client-registry.js'
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import { loadBrokerConfig } from '../../src/config/broker-config.js'
import { createHttpServer, type HttpServer, type HttpTls, ListenError } from '../../src/http/index.js'
import { startEmbeddedServices } from '../../src/main.js'
import { silentLogger } from '../../src/observability/logger.js'
import { SchemaRegistryServer } from '../../src/registry/server.js'
import { RestProxy } from '../../src/rest/index.js'
import { makeTestCertificates, startTestBroker, type TestBroker, type TestCertificates } from '../harness/index.js'
import { TestWebSocket } from '../harness/ws-client.js'

let certs: TestCertificates
let tb: TestBroker
let dir: string
let usersFile: string

interface Curl {
  /** curl's exit code: 0 when an HTTP answer came (whatever its status), 35/56/... when TLS failed. */
  code: number
  status: number
  body: string
  stderr: string
}

/** curl with the test CA; `args` adds client certificates, credentials, a method and a body. */
function curl(url: string, args: string[] = []): Promise<Curl> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '--max-time', '10', '--cacert', certs.ca, '-o', '-', '-w', '\n%{http_code}', ...args, url], (err, stdout, stderr) => {
      const cut = stdout.lastIndexOf('\n')
      resolve({ code: err === null ? 0 : Number((err as { code?: number }).code ?? -1), status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut), stderr })
    })
  })
}

const GOOD = (): string[] => ['--cert', certs.clientCert, '--key', certs.clientKey]
const STRANGER = (): string[] => ['--cert', certs.strangerCert, '--key', certs.strangerKey]

beforeAll(async () => {
  certs = makeTestCertificates()
  tb = await startTestBroker(['num.partitions=1'])
  dir = mkdtempSync(join(tmpdir(), 'skein-https-test-'))
  usersFile = join(dir, 'users.properties')
  writeFileSync(usersFile, '# users of the https tests\nalice: alice-secret,admin\n')
}, 60_000)

afterAll(async () => {
  await tb?.stop()
  certs?.cleanup()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe('uWebSockets.js 3.0.6 SSLApp (why https goes through node:tls)', () => {
  it('lets a client without a certificate in although ca_file_name is set: REQUIRED cannot be built on it', async () => {
    const uws = (await import('uwebsockets')).default
    const app = uws.SSLApp({ key_file_name: certs.serverKeystore, cert_file_name: certs.serverKeystore, ca_file_name: certs.ca })
    app.get('/*', (res) => void res.end('in'))
    const socket = await new Promise<unknown>((resolve) => app.listen('127.0.0.1', 0, resolve))
    try {
      expect(socket).not.toBe(false)
      const port = uws.us_socket_local_port(socket as never)
      const anonymous = await curl(`https://127.0.0.1:${port}/`)
      expect(anonymous).toMatchObject({ code: 0, status: 200, body: 'in' })
    } finally {
      uws.us_listen_socket_close(socket as never)
      app.close()
    }
  })
})

describe('an HTTP server with https listeners', () => {
  const pem = (): HttpTls['options'] => ({ key: readFileSync(certs.serverKeystore), cert: readFileSync(certs.serverKeystore), ca: readFileSync(certs.ca) })

  async function serve(clientAuth: HttpTls['clientAuth'], listeners = ['https://127.0.0.1:0']): Promise<HttpServer> {
    const server = await createHttpServer({ tls: { options: pem(), clientAuth } })
    server.route('GET', '/hello', (_req, res) => res.send(200, null, 'hello'))
    server.route('POST', '/echo', (req, res) => res.send(200, null, req.body))
    for (const l of listeners) await server.listen(l)
    return server
  }

  it('REQUIRED: no certificate and one of another CA fail the handshake, a trusted one gets 200', async () => {
    const server = await serve('required')
    try {
      const url = `${server.listeners[0]!.url}/hello`
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/hello$/)
      const none = await curl(url)
      expect(none.code).not.toBe(0)
      expect(none.stderr).toMatch(/certificate required|alert/i)
      expect((await curl(url, STRANGER())).code).not.toBe(0)
      expect(await curl(url, GOOD())).toMatchObject({ code: 0, status: 200, body: 'hello' })
    } finally {
      await server.close()
    }
  })

  it('REQUESTED: no certificate gets in, one of another CA does not, a trusted one does', async () => {
    const server = await serve('requested')
    try {
      const url = `${server.listeners[0]!.url}/hello`
      expect(await curl(url)).toMatchObject({ code: 0, status: 200, body: 'hello' })
      expect((await curl(url, STRANGER())).code).not.toBe(0)
      expect(await curl(url, GOOD())).toMatchObject({ code: 0, status: 200, body: 'hello' })
    } finally {
      await server.close()
    }
  })

  it('serves http and https listeners side by side; plain HTTP on the https port gets no answer', async () => {
    const server = await serve('none', ['https://127.0.0.1:0', 'http://127.0.0.1:0'])
    try {
      const [tlsListener, plainListener] = server.listeners
      expect(await curl(`${tlsListener!.url}/hello`)).toMatchObject({ code: 0, status: 200 })
      expect(await curl(`${plainListener!.url}/hello`)).toMatchObject({ code: 0, status: 200 })
      expect((await curl(`http://127.0.0.1:${tlsListener!.port}/hello`)).status).not.toBe(200)
      // A large body both ways through the relay.
      const big = join(dir, 'big.bin')
      writeFileSync(big, Buffer.alloc(600_000, 'x'))
      const echoed = await curl(`${tlsListener!.url}/echo`, ['--data-binary', `@${big}`, '-H', 'Content-Type: application/octet-stream'])
      expect(echoed.status).toBe(200)
      expect(echoed.body.length).toBe(600_000)
    } finally {
      await server.close()
    }
  })

  it('opens two https listeners at once behind one private socket', async () => {
    const server = await createHttpServer({ tls: { options: pem(), clientAuth: 'none' } })
    try {
      server.route('GET', '/hello', (_req, res) => res.send(200, null, 'hello'))
      const [one, two] = await Promise.all([server.listen('https://127.0.0.1:0'), server.listen('https://127.0.0.1:0')])
      for (const l of [one!, two!]) expect(await curl(`${l.url}/hello`)).toMatchObject({ code: 0, status: 200, body: 'hello' })
    } finally {
      await server.close()
    }
  })

  it("takes the https listener's own origin for state-changing requests, refuses another", async () => {
    const server = await serve('none')
    try {
      const l = server.listeners[0]!
      expect((await curl(`${l.url}/echo`, ['-d', 'x', '-H', `Origin: https://127.0.0.1:${l.port}`])).status).toBe(200)
      expect((await curl(`${l.url}/echo`, ['-d', 'x', '-H', 'Origin: https://evil.example'])).status).toBe(403)
    } finally {
      await server.close()
    }
  })

  it('holds its port exclusively and names the setting when the port is taken; refuses https without TLS settings', async () => {
    const server = await serve('none')
    try {
      const err = await createHttpServer({ tls: { options: pem(), clientAuth: 'none' } }).then(async (second) => {
        try {
          return await second.listen(`https://127.0.0.1:${server.listeners[0]!.port}`, 'rest.listeners').then(() => null, (e: unknown) => e)
        } finally {
          await second.close()
        }
      })
      expect(err).toBeInstanceOf(ListenError)
      expect((err as Error).message).toMatch(/^rest\.listeners: cannot listen on https:\/\/127\.0\.0\.1:\d+: EADDRINUSE/)
      const bare = await createHttpServer()
      try {
        await expect(bare.listen('https://127.0.0.1:0')).rejects.toThrow(/listeners: https:\/\/127\.0\.0\.1:0 is an https listener but no key store is set \(ssl\.keystore\.location\)/)
      } finally {
        await bare.close()
      }
    } finally {
      await server.close()
    }
  })

  it('removes its private socket directory at close', async () => {
    const before = new Set(execFileSync('ls', [tmpdir()]).toString().split('\n').filter((n) => n.startsWith('skein-https-') && !n.startsWith('skein-https-test-')))
    const server = await serve('none')
    const made = execFileSync('ls', [tmpdir()]).toString().split('\n').filter((n) => n.startsWith('skein-https-') && !n.startsWith('skein-https-test-') && !before.has(n))
    expect(made).toHaveLength(1)
    expect(statSync(join(tmpdir(), made[0]!)).mode & 0o777).toBe(0o700)
    await server.close()
    expect(() => statSync(join(tmpdir(), made[0]!))).toThrow(/ENOENT/)
  })
})

describe('the REST Proxy, console and WebSocket streams over https', () => {
  let proxy: RestProxy
  let base: string
  beforeAll(async () => {
    const settings = restSettings(parseRestProperties([
      ['listeners', 'https://127.0.0.1:0'],
      ['bootstrap.servers', tb.bootstrap],
      ['ssl.keystore.location', certs.serverKeystore],
      ['ssl.keystore.type', 'PEM'],
      ['authentication.method', 'BASIC'],
      ['authentication.users.file', usersFile],
    ]))
    proxy = await RestProxy.start({ settings, bootstrapServers: [tb.bootstrap], extend: webFront({ settings, bootstrapServers: [tb.bootstrap], log: silentLogger(), health: false }) })
    base = proxy.listeners[0]!.url
  }, 30_000)
  afterAll(async () => {
    await proxy?.stop()
  })

  it('answers v3 with BASIC credentials over https (curl --cacert), 401 without', async () => {
    expect(base).toMatch(/^https:/)
    expect((await curl(`${base}/v3/clusters`)).status).toBe(401)
    const clusters = await curl(`${base}/v3/clusters`, ['-u', 'alice:alice-secret'])
    expect(clusters.status).toBe(200)
    expect(JSON.parse(clusters.body).data[0].cluster_id).toEqual(expect.any(String))
  })

  it('serves the console page and upgrades /ws/topics over wss', async () => {
    const page = await curl(`${base}/console/`, ['-u', 'alice:alice-secret'])
    expect(page.status).toBe(200)
    expect(page.body).toContain('<html')
    const created = await curl(`${base}/v3/clusters/${JSON.parse((await curl(`${base}/v3/clusters`, ['-u', 'alice:alice-secret'])).body).data[0].cluster_id}/topics`, ['-u', 'alice:alice-secret', '-H', 'Content-Type: application/json', '-d', '{"topic_name":"https-ws","partitions_count":1}'])
    expect(created.status).toBe(201)
    const auth = { Authorization: `Basic ${Buffer.from('alice:alice-secret').toString('base64')}` }
    const ws = await TestWebSocket.open(proxy.listeners[0]!.port, '/ws/topics/https-ws?offset=earliest', auth, { ca: readFileSync(certs.ca), servername: 'localhost' })
    try {
      ws.send(JSON.stringify({ type: 'produce', id: 'w1', value: 'over wss' }))
      // subscribed, the ack, and the record itself coming back (the socket reads from earliest).
      const seen = async (type: string): Promise<Record<string, unknown>> => {
        for (let n = 1; n <= 5; n++) {
          const found = (await ws.waitFor(n, 10_000)).map((m) => JSON.parse(m.data.toString()) as Record<string, unknown>).find((m) => m.type === type)
          if (found !== undefined) return found
        }
        throw new Error(`no ${type} message`)
      }
      expect(await seen('ack')).toMatchObject({ type: 'ack', id: 'w1' })
      expect(JSON.stringify(await seen('records'))).toContain('over wss')
    } finally {
      ws.close()
    }
    await expect(TestWebSocket.open(proxy.listeners[0]!.port, '/ws/topics/https-ws', {}, { ca: readFileSync(certs.ca), servername: 'localhost' })).rejects.toThrow(/401/)
  })
})

describe('the Schema Registry over https with mutual TLS REQUIRED', () => {
  let registry: SchemaRegistryServer
  let base: string
  beforeAll(async () => {
    const settings = registrySettings(parseRegistryProperties([
      ['listeners', 'https://127.0.0.1:0'],
      ['kafkastore.bootstrap.servers', tb.bootstrap],
      ['kafkastore.topic', '_schemas_https'],
      ['ssl.keystore.location', certs.serverEncryptedKeystore],
      ['ssl.key.password', certs.keyPassword],
      ['ssl.truststore.location', certs.ca],
      ['ssl.client.authentication', 'REQUIRED'],
    ]))
    registry = await SchemaRegistryServer.start({ settings, bootstrapServers: [tb.bootstrap] })
    base = registry.urls[0]!
  }, 60_000)
  afterAll(async () => {
    await registry?.stop()
  })

  it('refuses a client without a certificate and one of another CA, registers and reads with a trusted one', async () => {
    expect(base).toMatch(/^https:/)
    expect((await curl(`${base}/subjects`)).code).not.toBe(0)
    expect((await curl(`${base}/subjects`, STRANGER())).code).not.toBe(0)
    const schema = JSON.stringify({ schema: JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }] }) })
    const posted = await curl(`${base}/subjects/https-value/versions`, [...GOOD(), '-H', 'Content-Type: application/vnd.schemaregistry.v1+json', '-d', schema])
    expect(posted.status).toBe(200)
    expect(JSON.parse(posted.body)).toEqual({ id: expect.any(Number) })
    const subjects = await curl(`${base}/subjects`, GOOD())
    expect(JSON.parse(subjects.body)).toContain('https-value')
  })

  it('a secondary forwards a write to the https primary with its own certificate', async () => {
    const secondary = await SchemaRegistryServer.start({ settings: registrySettings(parseRegistryProperties([
      ['listeners', 'https://127.0.0.1:0'],
      ['kafkastore.bootstrap.servers', tb.bootstrap],
      ['kafkastore.topic', '_schemas_https'],
      ['leader.eligibility', 'false'],
      ['ssl.keystore.location', certs.serverKeystore],
      ['ssl.truststore.location', certs.ca],
      ['ssl.client.authentication', 'REQUIRED'],
    ])), bootstrapServers: [tb.bootstrap] })
    try {
      const schema = JSON.stringify({ schema: JSON.stringify({ type: 'record', name: 'S', fields: [{ name: 'b', type: 'string' }] }) })
      const posted = await curl(`${secondary.urls[0]!}/subjects/forwarded-value/versions`, [...GOOD(), '-H', 'Content-Type: application/vnd.schemaregistry.v1+json', '-d', schema])
      expect(posted.status, posted.body).toBe(200)
      // The primary has it: the write went there.
      expect(JSON.parse((await curl(`${base}/subjects`, GOOD())).body)).toContain('forwarded-value')
    } finally {
      await secondary.stop()
    }
  }, 60_000)

  it('the REST Proxy registers avro schemas in it through schema.registry.url=https:// with schema.registry.ssl.*', async () => {
    const settings = restSettings(parseRestProperties([
      ['listeners', 'http://127.0.0.1:0'],
      ['bootstrap.servers', tb.bootstrap],
      ['schema.registry.url', base],
      ['schema.registry.ssl.truststore.location', certs.ca],
      ['schema.registry.ssl.keystore.location', certs.serverKeystore],
    ]))
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    await admin.createTopics([{ name: 'https-avro', numPartitions: 1, replicationFactor: 1 }]).finally(() => admin.close())
    const proxy = await RestProxy.start({ settings, bootstrapServers: [tb.bootstrap] })
    try {
      const valueSchema = JSON.stringify({ type: 'record', name: 'V', fields: [{ name: 'n', type: 'int' }] })
      const res = await fetch(`${proxy.listeners[0]!.url}/topics/https-avro`, { method: 'POST', headers: { 'Content-Type': 'application/vnd.kafka.avro.v2+json' }, body: JSON.stringify({ value_schema: valueSchema, records: [{ value: { n: 7 } }] }) })
      const body = await res.json() as { value_schema_id?: number; offsets?: { error_code?: number | null }[] }
      expect(res.status, JSON.stringify(body)).toBe(200)
      expect(body.value_schema_id).toEqual(expect.any(Number))
      expect(JSON.parse((await curl(`${base}/subjects`, GOOD())).body)).toContain('https-avro-value')
    } finally {
      await proxy.stop()
    }
  }, 60_000)
})

describe('https start-up errors name the setting', () => {
  const tlsOf = (props: [string, string][], listeners = ['https://127.0.0.1:0'], prefix = ''): HttpTls | undefined => httpListenerTls(new Map(props), listeners, prefix)

  it('an https listener without a key store', () => {
    expect(() => tlsOf([])).toThrow(ConfigException)
    expect(() => tlsOf([], ['https://127.0.0.1:0'], 'rest.')).toThrow('rest.listeners=https://127.0.0.1:0 is https and needs a key store: set rest.ssl.keystore.location')
    expect(tlsOf([], ['http://127.0.0.1:0'])).toBeUndefined()
  })

  it('a missing key store, a wrong key password, a wrong PKCS12 password, a JKS store', () => {
    expect(() => tlsOf([['ssl.keystore.location', join(dir, 'absent.pem')]], undefined, 'schema.registry.')).toThrow(/^schema\.registry\.ssl\.keystore\.location=.*absent\.pem: ENOENT/)
    expect(() => tlsOf([['ssl.keystore.location', certs.serverEncryptedKeystore], ['ssl.key.password', 'wrong']])).toThrow(/ssl\.keystore\.location=.*: cannot load the key and certificate .*check ssl\.keystore\.type and ssl\.key\.password/)
    const p12 = join(dir, 'server.p12')
    execFileSync('openssl', ['pkcs12', '-export', '-in', certs.serverKeystore, '-out', p12, '-passout', 'pass:p12-secret'], { stdio: 'ignore' })
    expect(() => tlsOf([['ssl.keystore.location', p12], ['ssl.keystore.type', 'PKCS12'], ['ssl.keystore.password', 'wrong']])).toThrow(/check ssl\.keystore\.type and ssl\.keystore\.password/)
    expect(tlsOf([['ssl.keystore.location', p12], ['ssl.keystore.type', 'PKCS12'], ['ssl.keystore.password', 'p12-secret']])?.options.pfx).toBeInstanceOf(Buffer)
    expect(() => tlsOf([['ssl.keystore.location', certs.serverKeystore], ['ssl.keystore.type', 'JKS']])).toThrow(/ssl\.keystore\.type=JKS: JKS stores cannot be read here/)
  })

  it('client authentication without a trust store; the older ssl.client.auth=true is REQUIRED', () => {
    expect(() => tlsOf([['ssl.keystore.location', certs.serverKeystore], ['ssl.client.authentication', 'REQUIRED']], undefined, 'rest.')).toThrow('rest.ssl.client.authentication=REQUIRED needs rest.ssl.truststore.location')
    expect(tlsOf([['ssl.keystore.location', certs.serverKeystore], ['ssl.client.auth', 'true'], ['ssl.truststore.location', certs.ca]])?.clientAuth).toBe('required')
    expect(tlsOf([['ssl.keystore.location', certs.serverKeystore], ['ssl.client.auth', 'false'], ['ssl.client.authentication', 'REQUESTED'], ['ssl.truststore.location', certs.ca]])?.clientAuth).toBe('requested')
  })

  it('a PKCS12 key store serves https', async () => {
    const p12 = join(dir, 'serve.p12')
    execFileSync('openssl', ['pkcs12', '-export', '-in', certs.serverKeystore, '-out', p12, '-passout', 'pass:p12-secret'], { stdio: 'ignore' })
    const tls = tlsOf([['ssl.keystore.location', p12], ['ssl.keystore.type', 'PKCS12'], ['ssl.keystore.password', 'p12-secret']])!
    const server = await createHttpServer({ tls })
    try {
      server.route('GET', '/hello', (_req, res) => res.send(200, null, 'pkcs12'))
      const l = await server.listen('https://127.0.0.1:0')
      expect(await curl(`${l.url}/hello`)).toMatchObject({ code: 0, status: 200, body: 'pkcs12' })
    } finally {
      await server.close()
    }
  })

  it("a broker's embedded REST Proxy and Schema Registry serve https with rest.ssl.* and schema.registry.ssl.*", async () => {
    const config = loadBrokerConfig({ overrides: [
      `listeners=PLAINTEXT://127.0.0.1:${tb.port}`, `log.dirs=${tb.dataDir}`,
      'rest.listeners=https://127.0.0.1:0', `rest.ssl.keystore.location=${certs.serverKeystore}`,
      'schema.registry.listeners=https://127.0.0.1:0', `schema.registry.ssl.keystore.location=${certs.serverKeystore}`,
      'schema.registry.kafkastore.topic=_schemas_embedded_https',
      `schema.registry.ssl.truststore.location=${certs.ca}`, 'schema.registry.ssl.client.authentication=REQUIRED',
    ] })
    const services = await startEmbeddedServices(tb.broker, config, silentLogger())
    try {
      expect(services.restUrls[0]).toMatch(/^https:/)
      expect((await curl(`${services.restUrls[0]!}/v3/clusters`)).status).toBe(200)
      expect((await curl(`${services.registryUrls[0]!}/subjects`)).code).not.toBe(0)
      expect((await curl(`${services.registryUrls[0]!}/subjects`, GOOD())).status).toBe(200)
    } finally {
      await services.stop()
    }
  }, 60_000)

  it("a broker's embedded REST Proxy: rest.listeners=https without rest.ssl.keystore.location stops start-up", async () => {
    const config = loadBrokerConfig({ overrides: [`listeners=PLAINTEXT://127.0.0.1:${tb.port}`, `log.dirs=${tb.dataDir}`, 'rest.listeners=https://127.0.0.1:0'] })
    await expect(startEmbeddedServices(tb.broker, config, silentLogger())).rejects.toThrow('rest.listeners=https://127.0.0.1:0 is https and needs a key store: set rest.ssl.keystore.location')
  })
})
