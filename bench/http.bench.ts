// HTTP benchmark (npm run bench:http -> node dist/bench/http.bench.js), side by side in one run:
// - produce of 100-byte records through the Kafka protocol (Skein's producer, the baseline);
// - the same records through the REST Proxy's v3 records endpoint: the streaming form (one chunked
//   request, one record per line in, one report per line out), keep-alive requests of one record each
//   (what most REST callers do) and of 100 records each, against `skein rest` in its own process and
//   against the proxy embedded in the broker process (rest.listeners);
// - consume of the records the Kafka-protocol run wrote, from offset 0: Skein's consumer over the Kafka
//   protocol (the baseline) and a WebSocket client reading /ws/topics/{t}?offset=0 in binary and in JSON
//   frames, from `skein rest` and from the broker's embedded proxy (bench/http/consume.ts, a child process
//   per run);
// - the HTTP server alone: hello-world requests/s on uWebSockets.js (src/http) and on node:http, each in
//   its own process, driven by 64 keep-alive connections.
// The machine is shared and small: read the ratios, not the absolute numbers. Each row also gives its
// rate per CPU-second of the server-side processes (broker, proxy, hello server; /proc/<pid>/stat), which
// a loaded machine disturbs less than the wall-clock rate.
//
// Flags: --records N (streaming, Kafka-protocol and consume records, default 1000000), --seconds S
// (keep-alive and hello-world runs, default 5), --only produce,consume,hello (default all),
// --no-write (print only; bench/results/HTTP-RESULTS.md stays untouched).
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { cpus, loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { Admin } from '../src/client/admin.js'
import { Producer } from '../src/client/producer.js'
import { benchDir, freePort, processCpuMicros, REPO_ROOT, startBroker, type RunningBroker } from './broker/broker-process.js'
import { lastJsonLine } from './broker/machine.js'
import { runNode } from './broker/run.js'
import { flag } from './lib/flags.js'
import { BENCH_RESULTS_DIR } from './lib/results-dir.js'

const BENCH_DIR = dirname(fileURLToPath(import.meta.url)) // dist/bench
const HELLO_JS = join(BENCH_DIR, 'http', 'hello-server.js')
const CONSUME_JS = join(BENCH_DIR, 'http', 'consume.js')
const SKEIN_JS = join(REPO_ROOT, 'dist', 'src', 'skein.js')

const RECORDS = Number(flag('records') ?? 1_000_000)
const SECONDS = Number(flag('seconds') ?? 5)
const write = !process.argv.includes('--no-write')
const ONLY = (flag('only') ?? 'produce,consume,hello').split(',')
for (const o of ONLY) if (!['produce', 'consume', 'hello'].includes(o)) throw new Error(`--only: unknown part '${o}' (produce, consume, hello)`)
const VALUE_BYTES = 100
const PARTITIONS = 6
const log = (s: string): void => {
  process.stderr.write(`[bench:http] ${s}\n`)
}

interface Row {
  workload: string
  rate: number
  unit: string
  /** Records or requests per CPU-second of the server side (broker, proxy): steadier than the rate on a shared machine. */
  perCpu: number
  note: string
}

/** Runs fn and measures the CPU the given server processes spent meanwhile; rate per CPU-second too. */
async function measured(pids: number[], fn: () => Promise<{ rate: number; count: number }>): Promise<{ rate: number; perCpu: number }> {
  const cpu0 = pids.map(processCpuMicros)
  const { rate, count } = await fn()
  const cpuSeconds = pids.reduce((sum, pid, i) => sum + (processCpuMicros(pid) - cpu0[i]!), 0) / 1e6
  // /proc counts CPU in 10 ms ticks: a run too short to register any has no per-CPU figure.
  return { rate, perCpu: cpuSeconds > 0 ? count / cpuSeconds : NaN }
}
const rows: Row[] = []

const value = Buffer.alloc(VALUE_BYTES, 0x61)
const RECORD_LINE = `${JSON.stringify({ value: { type: 'BINARY', data: value.toString('base64') } })}\n`

/** The Kafka-protocol baseline: appendBatched as fast as the producer takes records. */
async function kafkaProduce(bootstrap: string, topic: string, n: number): Promise<number> {
  const p = new Producer({ bootstrapServers: bootstrap, lingerMs: 5, batchSize: 65536 })
  await p.topicInfo(topic)
  let acked = 0
  let failed = 0
  let done!: () => void
  const finished = new Promise<void>((r) => (done = r))
  const cb = (err: Error | null, d: { from: number; to: number }): void => {
    if (err !== null) failed += d.to - d.from
    else acked += d.to - d.from
    if (acked + failed === n) done()
  }
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    if (!p.hasCapacity) await p.waitForCapacity()
    p.appendBatched(topic, undefined, null, value, undefined, cb, i)
  }
  await finished
  const s = (performance.now() - t0) / 1000
  await p.close()
  if (failed > 0) throw new Error(`${failed} records failed`)
  return n / s
}

/** Streaming produce: `streams` chunked requests at once, each writing its share of n records. */
async function restStreaming(base: string, clusterId: string, topic: string, n: number, streams: number): Promise<number> {
  const url = new URL(`${base}/v3/clusters/${clusterId}/topics/${topic}/records`)
  const perChunk = 1000
  const chunk = Buffer.from(RECORD_LINE.repeat(perChunk))
  const one = (count: number): Promise<number> =>
    new Promise((resolve, reject) => {
      let ok = 0
      let tail = ''
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } })
      req.on('error', reject)
      req.on('response', (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`))
        res.setEncoding('latin1')
        res.on('data', (d: string) => {
          const text = tail + d
          let i = 0
          for (;;) {
            const at = text.indexOf('"error_code":200', i)
            if (at < 0) break
            ok++
            i = at + 16
          }
          if (text.includes('"error_code":4') || text.includes('"error_code":5')) reject(new Error(`a record failed: ${text.slice(0, 300)}`))
          tail = text.slice(Math.max(i, text.length - 16))
        })
        res.on('end', () => resolve(ok))
      })
      void (async () => {
        let sent = 0
        while (sent < count) {
          const k = Math.min(perChunk, count - sent)
          const ok = req.write(k === perChunk ? chunk : Buffer.from(RECORD_LINE.repeat(k)))
          sent += k
          if (!ok) await new Promise((r) => req.once('drain', r))
        }
        req.end()
      })()
    })
  const t0 = performance.now()
  const share = Math.floor(n / streams)
  const oks = await Promise.all(Array.from({ length: streams }, (_, i) => one(i === streams - 1 ? n - share * (streams - 1) : share)))
  const s = (performance.now() - t0) / 1000
  const total = oks.reduce((a, b) => a + b, 0)
  if (total !== n) throw new Error(`${total} of ${n} records acknowledged`)
  return n / s
}

/** Keep-alive requests, `perRequest` records each, `concurrency` at once, for `seconds`. */
async function restKeepAlive(base: string, clusterId: string, topic: string, perRequest: number, concurrency: number, seconds: number): Promise<number> {
  const url = new URL(`${base}/v3/clusters/${clusterId}/topics/${topic}/records`)
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const body = Buffer.from(RECORD_LINE.repeat(perRequest))
  let records = 0
  const end = performance.now() + seconds * 1000
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      await new Promise<void>((resolve, reject) => {
        const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } }, (res) => {
          let text = ''
          res.setEncoding('latin1')
          res.on('data', (d: string) => (text += d))
          res.on('end', () => {
            let ok = 0
            for (let i = text.indexOf('"error_code":200'); i >= 0; i = text.indexOf('"error_code":200', i + 16)) ok++
            if (ok !== perRequest) reject(new Error(`${ok} of ${perRequest} acknowledged: ${text.slice(0, 200)}`))
            records += ok
            resolve()
          })
        })
        req.on('error', reject)
        req.end(body)
      })
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const s = (performance.now() - t0) / 1000
  agent.destroy()
  return records / s
}

/** One consume run (bench/http/consume.js in its own process); records/s. */
async function consumeRun(args: string[]): Promise<number> {
  const out = await runNode([CONSUME_JS, ...args], 600000)
  const r = JSON.parse(lastJsonLine(out)) as { records: number; recordsPerSec: number }
  return r.recordsPerSec
}

/** A child process that prints its port on its first stdout line. */
async function spawnServer(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; firstLine: string }> {
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_LEVEL: 'warn', ...env } })
  let out = ''
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const firstLine = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no output from ${args.join(' ')}: ${out}`)), 30000)
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const i = out.indexOf('\n')
      if (i >= 0) {
        clearTimeout(t)
        resolve(out.slice(0, i).trim())
      }
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)))
  })
  return { child, firstLine }
}

/** Hello-world load: `connections` keep-alive sockets, one request in flight on each, for `seconds`. */
async function helloLoad(port: number, connections: number, seconds: number): Promise<number> {
  const req = Buffer.from('GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  const token = 'HTTP/1.1 200'
  let responses = 0
  let running = true
  const sockets = await Promise.all(
    Array.from({ length: connections }, () => new Promise<ReturnType<typeof connect>>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => resolve(s))
      s.once('error', reject)
    })),
  )
  const t0 = performance.now()
  for (const s of sockets) {
    let tail = ''
    s.setEncoding('latin1')
    s.on('data', (d: string) => {
      const text = tail + d
      let i = 0
      let n = 0
      for (;;) {
        const at = text.indexOf(token, i)
        if (at < 0) break
        n++
        i = at + token.length
      }
      tail = text.slice(Math.max(i, text.length - token.length))
      responses += n
      if (running) for (let k = 0; k < n; k++) s.write(req)
    })
    s.write(req)
  }
  await new Promise((r) => setTimeout(r, seconds * 1000))
  running = false
  const rate = responses / ((performance.now() - t0) / 1000)
  for (const s of sockets) s.destroy()
  return rate
}

async function main(): Promise<void> {
  const load0 = loadavg()
  log(`machine: ${cpus().length} cores, load average ${load0.map((l) => l.toFixed(1)).join(' ')} (shared with other work)`)
  const dataDir = benchDir('http')
  const restPort = await freePort()
  const broker: RunningBroker = await startBroker({ dataDir, overrides: ['io.threads=0', `rest.listeners=http://127.0.0.1:${restPort}`, 'group.initial.rebalance.delay.ms=0'] })
  const procs: ChildProcess[] = []
  try {
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics(['kafka', 'stream-standalone', 'stream-embedded', 'keepalive-1', 'keepalive-100'].map((name) => ({ name, numPartitions: PARTITIONS })))
    const clusterId = (await admin.describeCluster()).clusterId ?? 'skein'
    await admin.close()

    log(`Kafka protocol: ${RECORDS} records of ${VALUE_BYTES} B`)
    const kafkaRun = await measured([broker.pid], async () => ({ rate: await kafkaProduce(broker.bootstrap, 'kafka', RECORDS), count: RECORDS }))
    const kafka = kafkaRun.rate
    rows.push({ workload: 'produce, Kafka protocol (Skein producer)', rate: kafka, unit: 'records/s', perCpu: kafkaRun.perCpu, note: 'baseline' })

    const standalonePort = await freePort()
    const standalone = await spawnServer([SKEIN_JS, 'rest', '--bootstrap-server', broker.bootstrap, '--listeners', `http://127.0.0.1:${standalonePort}`])
    procs.push(standalone.child)
    const standaloneBase = `http://127.0.0.1:${standalonePort}`
    const embeddedBase = `http://127.0.0.1:${restPort}`
    // The embedded proxy starts right after the broker's Kafka listener: wait until it answers.
    for (let i = 0; i < 200; i++) {
      if (await fetch(`${embeddedBase}/v3/clusters`).then((r) => r.ok, () => false)) break
      await new Promise((r) => setTimeout(r, 50))
    }

    if (ONLY.includes('produce')) {
      log('REST v3 streaming, standalone proxy (skein rest)')
      const ss = await measured([broker.pid, standalone.child.pid!], async () => ({ rate: await restStreaming(standaloneBase, clusterId, 'stream-standalone', RECORDS, 2), count: RECORDS }))
      const streamStandalone = ss.rate
      rows.push({ workload: 'REST v3 streaming produce, skein rest (own process)', rate: streamStandalone, unit: 'records/s', perCpu: ss.perCpu, note: `${(streamStandalone / kafka).toFixed(2)}x Kafka protocol` })
      log('REST v3 streaming, proxy embedded in the broker')
      const se = await measured([broker.pid], async () => ({ rate: await restStreaming(embeddedBase, clusterId, 'stream-embedded', RECORDS, 2), count: RECORDS }))
      const streamEmbedded = se.rate
      rows.push({ workload: 'REST v3 streaming produce, embedded in the broker', rate: streamEmbedded, unit: 'records/s', perCpu: se.perCpu, note: `${(streamEmbedded / kafka).toFixed(2)}x Kafka protocol` })
      log(`REST v3 keep-alive, one record per request, ${SECONDS} s`)
      const k1 = await measured([broker.pid, standalone.child.pid!], async () => {
        const rate = await restKeepAlive(standaloneBase, clusterId, 'keepalive-1', 1, 32, SECONDS)
        return { rate, count: rate * SECONDS }
      })
      const ka1 = k1.rate
      rows.push({ workload: 'REST v3 keep-alive, 1 record/request, 32 in flight, skein rest', rate: ka1, unit: 'records/s', perCpu: k1.perCpu, note: `${(ka1 / kafka).toFixed(3)}x Kafka protocol` })
      log(`REST v3 keep-alive, 100 records per request, ${SECONDS} s`)
      const k100 = await measured([broker.pid, standalone.child.pid!], async () => {
        const rate = await restKeepAlive(standaloneBase, clusterId, 'keepalive-100', 100, 8, SECONDS)
        return { rate, count: rate * SECONDS }
      })
      const ka100 = k100.rate
      rows.push({ workload: 'REST v3 keep-alive, 100 records/request, 8 in flight, skein rest', rate: ka100, unit: 'records/s', perCpu: k100.perCpu, note: `${(ka100 / kafka).toFixed(2)}x Kafka protocol` })
    }
    if (ONLY.includes('consume')) {
      // The topic the Kafka-protocol run filled, read from offset 0 by each reader in turn (page cache warm).
      const kafkaConsume = await measured([broker.pid], async () => {
        log(`consume ${RECORDS} records, Kafka protocol (Skein consumer)`)
        return { rate: await consumeRun(['kafka', broker.bootstrap, 'kafka', String(RECORDS)]), count: RECORDS }
      })
      rows.push({ workload: 'consume from offset 0, Kafka protocol (Skein consumer)', rate: kafkaConsume.rate, unit: 'records/s', perCpu: kafkaConsume.perCpu, note: 'baseline' })
      for (const [where, port, pids] of [['skein rest', standalonePort, [broker.pid, standalone.child.pid!]], ['embedded in the broker', restPort, [broker.pid]]] as const) {
        for (const format of ['binary', 'json'] as const) {
          log(`WebSocket consume, ${format} frames, ${where}`)
          const m = await measured([...pids], async () => ({ rate: await consumeRun(['ws', `127.0.0.1:${port}`, 'kafka', String(RECORDS), format]), count: RECORDS }))
          rows.push({ workload: `WebSocket consume /ws/topics/{t}?offset=0, ${format} frames, ${where}`, rate: m.rate, unit: 'records/s', perCpu: m.perCpu, note: `${(m.rate / kafkaConsume.rate).toFixed(2)}x Kafka protocol; target 500,000: ${m.rate >= 500_000 ? 'met' : 'NOT met'}` })
        }
      }
    }
    standalone.child.kill('SIGTERM')
    await broker.stop()

    for (const kind of ONLY.includes('hello') ? (['uws', 'node'] as const) : []) {
      log(`hello world on ${kind}, ${SECONDS} s`)
      const server = await spawnServer([HELLO_JS, kind])
      procs.push(server.child)
      const m = await measured([server.child.pid!], async () => {
        const rate = await helloLoad(Number(server.firstLine), 64, SECONDS)
        return { rate, count: rate * SECONDS }
      })
      server.child.kill('SIGKILL')
      rows.push({ workload: `hello world, ${kind === 'uws' ? 'uWebSockets.js (src/http)' : 'node:http'}, 64 keep-alive connections`, rate: m.rate, unit: 'requests/s', perCpu: m.perCpu, note: '' })
    }
    const uws = rows.find((r) => r.workload.includes('uWebSockets'))
    const node = rows.find((r) => r.workload.includes('node:http'))
    if (uws !== undefined && node !== undefined) uws.note = `${(uws.rate / node.rate).toFixed(2)}x node:http requests/s, ${(uws.perCpu / node.perCpu).toFixed(2)}x per server CPU-second`
  } finally {
    for (const p of procs) p.kill('SIGKILL')
    await broker.stop().catch(() => {})
  }
  const load1 = loadavg()
  const table = [
    '| Workload | Rate | Unit | Per server CPU-second | Ratio |',
    '| --- | ---: | --- | ---: | --- |',
    ...rows.map((r) => `| ${r.workload} | ${Math.round(r.rate).toLocaleString('en-US')} | ${r.unit} | ${Number.isNaN(r.perCpu) ? '-' : Math.round(r.perCpu).toLocaleString('en-US')} | ${r.note} |`),
  ].join('\n')
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load average ${load0[0]!.toFixed(1)} before and ${load1[0]!.toFixed(1)} after the run; the machine was shared with other work while it ran, so the absolute rates are low and noisy: compare the ratios.`
  process.stdout.write(`${table}\n\n${machine}\n`)
  if (write) {
    const md = `# bench:http results\n\n\`npm run bench:http\` (bench/http.bench.ts): ${RECORDS.toLocaleString('en-US')} records of ${VALUE_BYTES} B for the produce and consume rows (consumers read the Kafka-protocol run's topic from offset 0; the WebSocket client is bench/http/consume.ts, counting records without decoding them), ${SECONDS} s runs for keep-alive and hello world. Broker with io.threads=0, topics of ${PARTITIONS} partitions, everything on 127.0.0.1.\n\n${table}\n\n${machine}\n`
    writeFileSync(join(BENCH_RESULTS_DIR, 'HTTP-RESULTS.md'), md)
  }
}

await main()
