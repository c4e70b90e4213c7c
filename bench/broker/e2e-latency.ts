// End-to-end latency (produce -> consume) as two child processes, so that producer, consumer and broker
// each have their own event loop, as they would on separate machines:
//   node e2e-latency.js consume BOOTSTRAP TOPIC SECONDS WARMUP_SECONDS   -> prints `ready`, then one JSON line
// (the warm-up counts from the first record received)
//   node e2e-latency.js produce BOOTSTRAP TOPIC RATE SECONDS [ACKS] [WARMUP_SECONDS] -> prints one JSON line
// The first 8 bytes of each 100-byte value are process.hrtime.bigint() at send (CLOCK_MONOTONIC, the same
// clock in every process of the machine); the consumer records now - that per record. The producer sends
// RATE records/s paced on a 1 ms timer (acks=1 unless ACKS says otherwise, e.g. -1 for acks=all on a
// replicated topic; linger.ms=0: latency, not batching, is measured). The producer also reports its
// acknowledgement latency (append to the delivery callback) after WARMUP_SECONDS, and each process its own
// CPU time over the measured window (cpuMs), so CPU per record is known for the clients too.
// SKEIN_E2E_CLIENT_ROOT=DIR takes the Skein client from another built checkout (DIR/dist/src/client), so
// bench/broker/cluster-latency.ts can run an older build's client beside this one's.
// SKEIN_E2E_PRERUN_TOPIC=T and SKEIN_E2E_PRERUN_SECONDS=S: the producer first sends the same load to T for S
// seconds, unmeasured, and the consumer reads T beside TOPIC and ignores its records; the measured run on
// TOPIC then starts with client processes whose code is already compiled (the first seconds of a new topic
// without the first seconds of a new process).
// SKEIN_E2E_TRACE=FILE (per process: the runner gives each its own) writes, for every measured record, its
// send time and the time its acknowledgement (producer) or the poll that handed it out (consumer) came, as
// pairs of float64 nanoseconds of the monotonic clock; the runner joins them on the send time, so each
// record's latency splits into append-to-ack and ack-to-poll.
import { writeFileSync } from 'node:fs'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { LatencyRecorder } from '../../src/cli/stats.js'
import type { Consumer as ConsumerType } from '../../src/client/consumer.js'
import type { Producer as ProducerType } from '../../src/client/producer.js'

const clientRoot = process.env.SKEIN_E2E_CLIENT_ROOT
const clientModule = (name: string): string => (clientRoot !== undefined && clientRoot !== '' ? `file://${clientRoot}/dist/src/client/${name}.js` : `../../src/client/${name}.js`)
const { Consumer } = (await import(clientModule('consumer'))) as { Consumer: typeof ConsumerType }
const { Producer } = (await import(clientModule('producer'))) as { Producer: typeof ProducerType }

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Pairs (send ns, event ns) of measured records, written to SKEIN_E2E_TRACE at the end. */
class Trace {
  readonly file = process.env.SKEIN_E2E_TRACE
  #pairs = new Float64Array(this.file === undefined ? 0 : 1 << 20)
  #n = 0
  /** Reserves a slot for a record sent at sendNs; answers its index (-1 when not tracing). */
  add(sendNs: number, eventNs = 0): number {
    if (this.file === undefined) return -1
    if (this.#n * 2 === this.#pairs.length) {
      const bigger = new Float64Array(this.#pairs.length * 2)
      bigger.set(this.#pairs)
      this.#pairs = bigger
    }
    this.#pairs[this.#n * 2] = sendNs
    this.#pairs[this.#n * 2 + 1] = eventNs
    return this.#n++
  }
  set(i: number, eventNs: number): void {
    if (i >= 0) this.#pairs[i * 2 + 1] = eventNs
  }
  write(): void {
    if (this.file !== undefined) writeFileSync(this.file, this.#pairs.subarray(0, this.#n * 2))
  }
}

// Each process's own event-loop delay (how late its timers and I/O callbacks ran: GC pauses, long
// synchronous work, or the process waiting for a CPU on a busy machine), to tell them apart from
// delays in the broker.
function loopDelay(): { stop: () => { p99: number; max: number } } {
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  return {
    stop: () => {
      h.disable()
      return { p99: h.percentile(99) / 1e6, max: h.max / 1e6 }
    },
  }
}

/** A 100-byte value whose first 8 bytes are its send time (process.hrtime.bigint()). */
function stampedValue(): { value: Buffer; sendNs: bigint } {
  const value = Buffer.allocUnsafe(100)
  value.fill(0x61, 8)
  const sendNs = process.hrtime.bigint()
  value.writeBigInt64BE(sendNs, 0)
  return { value, sendNs }
}

async function produce(bootstrap: string, topic: string, rate: number, seconds: number, acks: number, warmupSeconds: number): Promise<void> {
  const producer = new Producer({ bootstrapServers: bootstrap, clientId: 'bench-e2e-producer', acks, lingerMs: 0, batchSize: 65536 })
  if (prerunTopic !== undefined) {
    await producer.topicInfo(prerunTopic)
    const t0 = performance.now()
    let n = 0
    for (let now = t0; now < t0 + prerunSeconds * 1000; now = performance.now()) {
      for (const due = Math.floor(((now - t0) / 1000) * rate); n < due; n++) {
        producer.append(prerunTopic, undefined, null, stampedValue().value, undefined, () => {}, -1)
      }
      await sleep(1)
    }
    await producer.flush()
  }
  await producer.topicInfo(topic)
  let sent = 0
  let failed = 0
  let acked = 0
  const ack = new LatencyRecorder(seconds * 100_000, 1)
  const trace = new Trace()
  const delay = loopDelay()
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  const measureFrom = t0 + warmupSeconds * 1000
  let cpu0: NodeJS.CpuUsage | null = null
  for (;;) {
    const now = performance.now()
    if (now >= end) break
    if (cpu0 === null && now >= measureFrom) cpu0 = process.cpuUsage()
    const due = Math.floor(((now - t0) / 1000) * rate)
    // One callback per tick: the records of a tick share their append time (and a callback run).
    const measured = now >= measureFrom
    const onAck = (err: Error | null, _meta: unknown, slot: number): void => {
      if (err !== null) failed++
      else acked++
      if (measured && err === null) {
        ack.record(performance.now() - now)
        trace.set(slot, Number(process.hrtime.bigint()))
      }
    }
    for (; sent < due; sent++) {
      const { value, sendNs } = stampedValue()
      producer.append(topic, undefined, null, value, undefined, onAck, measured ? trace.add(Number(sendNs)) : -1)
    }
    await sleep(1)
  }
  await producer.flush()
  const cpu = process.cpuUsage(cpu0 ?? undefined)
  const loopDelayMs = delay.stop()
  // After the measurements: writing the trace blocks the loop for tens of milliseconds.
  trace.write()
  await producer.close()
  const elapsed = (performance.now() - t0) / 1000
  const [p50, p99, p999] = ack.percentiles([0.5, 0.99, 0.999])
  const ackMs = { avg: ack.avg, p50, p99, p999, max: ack.max, count: ack.count }
  process.stdout.write(JSON.stringify({ sent, acked, failed, ratePerSec: Math.round(sent / elapsed), loopDelayMs, ackMs, cpuMs: (cpu.user + cpu.system) / 1000 }) + '\n')
}

async function consume(bootstrap: string, topic: string, seconds: number, warmupSeconds: number): Promise<void> {
  const consumer = new Consumer({ bootstrapServers: bootstrap, clientId: 'bench-e2e-consumer', fetchMaxWaitMs: 100, fetchMinBytes: 1 })
  const info = await consumer.cluster.topic(topic)
  const assigned = info.partitions.map((p) => ({ topic, partition: p.partition }))
  if (prerunTopic !== undefined) for (const p of (await consumer.cluster.topic(prerunTopic)).partitions) assigned.push({ topic: prerunTopic, partition: p.partition })
  consumer.assign(assigned)
  for (const p of assigned) consumer.seek(p.topic, p.partition, 'latest')
  // One poll positions every partition (a ListOffsets) before the producer is told to start.
  await consumer.poll(50)
  process.stdout.write('ready\n')
  const lat = new LatencyRecorder(seconds * 100_000, 1)
  const trace = new Trace()
  // Per-second windows (from the first record, warm-up included): a latency that grows window after window
  // is a backlog (the consumer or the broker not keeping up), a flat one with spikes is stalls, and the
  // first windows show what the start of a run waits on.
  const series: { second: number; records: number; avgMs: number; p50Ms: number; p99Ms: number; maxMs: number }[] = []
  const win = new LatencyRecorder(100_000, 1)
  // The first 3 s from the first record, warm-up or not: what the start of a run costs.
  const first3s = new LatencyRecorder(300_000, 1)
  const closeWindow = (): void => {
    const [p50Ms, p99Ms] = win.percentiles([0.5, 0.99])
    series.push({ second: series.length + 1, records: winRecords, avgMs: winRecords === 0 ? 0 : winSum / winRecords, p50Ms: p50Ms!, p99Ms: p99Ms!, maxMs: winMax })
    win.reset()
  }
  let winRecords = 0
  let winSum = 0
  let winMax = 0
  let records = 0
  let measured = 0
  const t0 = performance.now()
  const end = t0 + (seconds + prerunSeconds) * 1000
  const hardEnd = end + 30_000
  let firstAt = -1
  let winStart = 0
  let lastRecordAt = t0
  let delay: ReturnType<typeof loopDelay> | null = null
  let cpu0: NodeJS.CpuUsage | null = null
  for (;;) {
    const before = performance.now()
    if (before > hardEnd || (before > end && before - lastRecordAt > 500)) break
    const polled = await consumer.poll(100)
    const nowNs = process.hrtime.bigint()
    const now = performance.now()
    const batch = prerunTopic === undefined ? polled : polled.filter((r) => r.topic === topic)
    if (batch.length === 0) {
      // Still in the producer's prerun: the measured run's clock starts at its first record.
      if (polled.length > 0 && firstAt < 0) lastRecordAt = now
      continue
    }
    lastRecordAt = now
    if (firstAt < 0) {
      firstAt = now
      winStart = now
    }
    while (now - winStart >= 1000) {
      closeWindow()
      winStart += 1000
      winRecords = 0
      winSum = 0
      winMax = 0
    }
    const warm = now - firstAt >= warmupSeconds * 1000
    if (warm && delay === null) {
      delay = loopDelay()
      cpu0 = process.cpuUsage()
    }
    for (const r of batch) {
      records++
      const v = r.value
      if (v === null || v.length < 8) continue
      const ms = Number(nowNs - v.readBigInt64BE(0)) / 1e6
      winRecords++
      win.record(ms)
      if (now - firstAt < 3000) first3s.record(ms)
      winSum += ms
      if (ms > winMax) winMax = ms
      if (!warm) continue
      trace.add(Number(v.readBigInt64BE(0)), Number(nowNs))
      lat.record(ms)
      measured++
    }
  }
  if (winRecords > 0) closeWindow()
  const loopDelayMs = delay?.stop() ?? null
  const cpu = cpu0 === null ? null : process.cpuUsage(cpu0)
  trace.write()
  await consumer.close()
  const [p50, p99, p999] = lat.percentiles([0.5, 0.99, 0.999])
  const [f50, f99, f999] = first3s.percentiles([0.5, 0.99, 0.999])
  const first3sMs = { count: first3s.count, p50: f50, p99: f99, p999: f999, max: first3s.max }
  process.stdout.write(JSON.stringify({ records, measured, latencyMs: { avg: lat.avg, p50, p99, p999, max: lat.max }, first3sMs, series, loopDelayMs, cpuMs: cpu === null ? null : (cpu.user + cpu.system) / 1000 }) + '\n')
}

const prerunTopic = process.env.SKEIN_E2E_PRERUN_TOPIC || undefined
const prerunSeconds = Number(process.env.SKEIN_E2E_PRERUN_SECONDS ?? 0)
const [mode, bootstrap, topic, a, b, c, d] = process.argv.slice(2)
if (bootstrap === undefined || topic === undefined) throw new Error('usage: e2e-latency.js produce|consume BOOTSTRAP TOPIC ...')
if (mode === 'produce') await produce(bootstrap, topic, Number(a), Number(b), Number(c ?? 1), Number(d ?? 0))
else if (mode === 'consume') await consume(bootstrap, topic, Number(a), Number(b))
else throw new Error(`unknown mode ${mode}`)
process.exit(0)
