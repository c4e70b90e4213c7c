// Reassignment benchmark (npm run bench:reassign -> node dist/bench/reassign.bench.js; issue 15's figure
// "Reassignment of a 1 GiB partition: time and the throttle held"): Debian's ZooKeeper (test/harness) and
// three broker processes (bench/broker/broker-process.ts) with Kafka's replication quota windows
// (replication.quota.window.num=11 x replication.quota.window.size.seconds=1). One partition, replicas
// [1, 2], is filled with --bytes of 10 kB records (acks=1, then both replicas in sync); then it is moved
// three times, each move copying the whole log to a broker that has none of it:
//
//   unthrottled          [1,2] -> [2,3]  AlterPartitionReassignments, no throttle
//   --throttle (both)    [2,3] -> [3,1]  `skein reassign-partitions --execute --throttle B` (the leader and
//                                        follower rates and throttled-replica lists, as Kafka's tool), then
//                                        `--verify`, which clears them
//   leader throttle only [3,1] -> [1,2]  leader.replication.throttled.rate=B on the leader and its replicas
//                                        in leader.replication.throttled.replicas; no follower rate
//
// Per move: the catch-up (from the request to the new replica in the ISR) and the whole reassignment
// (until ListPartitionReassignments no longer lists it and the replicas are the target), the average
// catch-up rate (the log's bytes over the catch-up time) against the throttle, and the shortest catch-up a
// throttle allows: Kafka's rate is measured over at least (window.num - 1) windows, so the first
// (window.num - 1) x window.size x B bytes may pass at once; the rest goes at most at B. "Held" means the
// catch-up took at least that long (5% tolerance for timer granularity). The peak rate over any
// window.num x window.size span of the new replica's size (sampled every 500 ms) is printed when the
// catch-up lasts that long.
//
// Flags: --bytes N (default 1 GiB; k/m/g suffixes, powers of 2), --throttle B (bytes/s, default 25 MB/s;
// same suffixes), --data-dir DIR (parent of the brokers' temp dirs), --no-write (print only; otherwise
// bench/results/REASSIGN-RESULTS.md is written).
import { rmSync, writeFileSync, mkdtempSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Admin, type AlterOp } from '../src/client/admin.js'
import { Producer } from '../src/client/producer.js'
import { startZooKeeper, zookeeperMissing } from '../test/harness/zookeeper.js'
import { benchDir, freePort, SKEIN_JS, startBroker, type RunningBroker } from './broker/broker-process.js'
import { machineInfo } from './broker/machine.js'
import { fmtInt, machineMarkdown } from './broker/report.js'
import { runNode } from './broker/run.js'
import { flag } from './lib/flags.js'
import { BENCH_RESULTS_DIR } from './lib/results-dir.js'

const TOPIC = 'reassign'
const WINDOW_NUM = 11
const WINDOW_SECONDS = 1
const RECORD_BYTES = 10_000
const SAMPLE_MS = 500


function size(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)([kmg]?)i?b?$/i.exec(text.trim())
  if (m === null) throw new Error(`${what}: expected a number with an optional k, m or g suffix, not '${text}'`)
  const n = Math.round(Number(m[1]) * 1024 ** ' kmg'.indexOf((m[2] || ' ').toLowerCase()))
  if (!(n >= 1)) throw new Error(`${what} must be at least 1`)
  return n
}

const bytes = size(flag('bytes') ?? '1g', '--bytes')
const throttle = size(flag('throttle') ?? '25000000', '--throttle')
const dataParent = flag('data-dir') ?? tmpdir()
const write = !process.argv.includes('--no-write')
const log = (s: string): void => void process.stderr.write(`[bench:reassign] ${s}\n`)
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const MB = (n: number): string => `${(n / 1e6).toFixed(1)} MB`
const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

interface Move {
  name: string
  from: number[]
  to: number[]
  /** ms from the request to the new replica in the ISR, and to the end of the reassignment. */
  catchUpMs: number
  completeMs: number
  logBytes: number
  throttle: number | null
  /** The highest rate over any WINDOW_NUM x WINDOW_SECONDS span of the new replica's size; undefined when the catch-up was shorter. */
  peakRate: number | undefined
  note: string
}

async function main(): Promise<void> {
  const missing = zookeeperMissing()
  if (missing !== undefined) throw new Error(missing)
  const load0 = loadavg()
  const machine = machineInfo(dataParent)
  log(`${MB(bytes)} partition, throttle ${MB(throttle)}/s, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`)
  const zk = await startZooKeeper()
  const connect = `${zk.connectString}/skein-bench-reassign`
  const ids = [1, 2, 3]
  const brokers = new Map<number, RunningBroker>()
  const dirs: string[] = []
  const scratch = mkdtempSync(join(dataParent, 'skein-bench-reassign-plans-'))
  try {
    await Promise.all(ids.map(async (id) => {
      const dir = benchDir(`reassign${id}`, dataParent)
      dirs.push(dir)
      brokers.set(id, await startBroker({
        dataDir: dir,
        port: await freePort(),
        overrides: [
          `broker.id=${id}`, `zookeeper.connect=${connect}`, 'auto.create.topics.enable=false', 'log.cleaner.enable=false',
          'auto.leader.rebalance.enable=false', 'offsets.topic.replication.factor=3',
          `replication.quota.window.num=${WINDOW_NUM}`, `replication.quota.window.size.seconds=${WINDOW_SECONDS}`,
        ],
      }))
    }))
    const bootstrap = [...brokers.values()].map((b) => b.bootstrap).join(',')
    const admin = new Admin({ bootstrapServers: bootstrap, clientId: 'bench-reassign', requestTimeoutMs: 60_000 })
    try {
      await until('every broker registered', async () => ((await admin.describeCluster().catch(() => null))?.brokers.length === 3 ? true : undefined), 60_000)
      await admin.createTopics([{ name: TOPIC, replicaAssignment: [[1, 2]] }], { timeoutMs: 60_000 })
      await inSync(admin, [1, 2], 60_000)
      const t0 = performance.now()
      const written = await fill(bootstrap)
      const fillMs = performance.now() - t0
      await inSync(admin, [1, 2], 600_000)
      const logBytes = await partitionSize(admin, 1)
      log(`filled ${MB(written)} of records (${MB(logBytes)} of log) in ${secs(fillMs)}`)

      const moves: Move[] = []
      moves.push(await move(admin, 'unthrottled', [1, 2], [2, 3], null, async () => {
        const r = await admin.alterPartitionReassignments([{ topic: TOPIC, partition: 0, replicas: [2, 3] }])
        if (r[0]!.errorCode !== 0) throw new Error(`AlterPartitionReassignments: error ${r[0]!.errorCode}`)
        return ''
      }))
      const plan = join(scratch, 'plan.json')
      moves.push(await move(admin, '--throttle (leader and follower)', [2, 3], [3, 1], throttle, async () => {
        writeFileSync(plan, JSON.stringify({ version: 1, partitions: [{ topic: TOPIC, partition: 0, replicas: [3, 1] }] }))
        await runNode([SKEIN_JS, 'reassign-partitions', '--bootstrap-server', bootstrap, '--execute', '--reassignment-json-file', plan, '--throttle', String(throttle)], 60_000)
        return ''
      }, async () => {
        const out = await runNode([SKEIN_JS, 'reassign-partitions', '--bootstrap-server', bootstrap, '--verify', '--reassignment-json-file', plan], 60_000)
        return out.includes('Clearing broker-level throttles') ? '--verify cleared the throttles' : '--verify did NOT clear the throttles'
      }))
      moves.push(await move(admin, 'leader throttle only', [3, 1], [1, 2], throttle, async () => {
        const leader = (await admin.describeTopics([TOPIC]))[0]!.partitions[0]!.leader
        await admin.alterConfigs({ type: 'broker', name: String(leader) }, [{ op: 'set', name: 'leader.replication.throttled.rate', value: String(throttle) }])
        await admin.alterConfigs({ type: 'topic', name: TOPIC }, [{ op: 'set', name: 'leader.replication.throttled.replicas', value: '0:3,0:1' }])
        const r = await admin.alterPartitionReassignments([{ topic: TOPIC, partition: 0, replicas: [1, 2] }])
        if (r[0]!.errorCode !== 0) throw new Error(`AlterPartitionReassignments: error ${r[0]!.errorCode}`)
        return `leader: broker ${leader}`
      }, async () => {
        for (const id of ids) await admin.alterConfigs({ type: 'broker', name: String(id) }, [{ op: 'delete', name: 'leader.replication.throttled.rate' } as AlterOp])
        await admin.alterConfigs({ type: 'topic', name: TOPIC }, [{ op: 'delete', name: 'leader.replication.throttled.replicas' } as AlterOp])
        return 'throttle removed'
      }))
      report(moves, logBytes, { fillMs, written, load0, machine })
    } finally {
      await admin.close()
    }
  } finally {
    await Promise.all([...brokers.values()].map((b) => b.stop(10_000)))
    for (const d of [...dirs, scratch]) rmSync(d, { recursive: true, force: true })
    await zk.stop()
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await probe().catch(() => undefined)
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(everyMs)
  }
}

async function inSync(admin: Admin, replicas: number[], timeoutMs: number): Promise<void> {
  await until(`replicas ${replicas.join(',')} in sync`, async () => {
    const p = (await admin.describeTopics([TOPIC]))[0]?.partitions[0]
    return p !== undefined && p.leader >= 0 && replicas.every((r) => p.isr.includes(r)) ? true : undefined
  }, timeoutMs, 250)
}

/** The partition's log size on one broker (DescribeLogDirs); 0 when it has no replica. */
async function partitionSize(admin: Admin, broker: number): Promise<number> {
  const dirs = await admin.describeLogDirs([{ topic: TOPIC, partitions: [0] }], [broker])
  let n = 0
  for (const d of dirs) for (const p of d.partitions) if (p.topic === TOPIC && p.partition === 0 && !p.isFuture) n += p.sizeBytes
  return n
}

/** Writes `bytes` of record values to partition 0 (acks=1, 1 MiB batches). */
async function fill(bootstrap: string): Promise<number> {
  const producer = new Producer({ bootstrapServers: bootstrap, clientId: 'bench-reassign-fill', acks: 1, batchSize: 1 << 20, lingerMs: 20, maxRequestSize: 4 << 20, bufferMemory: 64 << 20 })
  const value = Buffer.alloc(RECORD_BYTES)
  for (let i = 0; i < value.length; i++) value[i] = (i * 31 + 7) & 0xff
  let written = 0
  let failed: Error | null = null
  try {
    await producer.topicInfo(TOPIC)
    while (written < bytes && failed === null) {
      if (!producer.hasCapacity) await producer.waitForCapacity()
      producer.append(TOPIC, 0, null, value, undefined, (err) => {
        if (err !== null) failed ??= err
      })
      written += value.length
    }
    await producer.flush()
  } finally {
    await producer.close()
  }
  if (failed !== null) throw failed
  return written
}

async function move(admin: Admin, name: string, from: number[], to: number[], rate: number | null, start: () => Promise<string>, after?: () => Promise<string>): Promise<Move> {
  const added = to.find((b) => !from.includes(b))!
  const logBytes = await partitionSize(admin, from[0]!)
  log(`${name}: [${from}] -> [${to}] (broker ${added} copies ${MB(logBytes)})`)
  const t0 = performance.now()
  const notes = [await start()]
  const samples: { t: number; size: number }[] = []
  let catchUpMs = -1
  let completeMs = -1
  for (;;) {
    const now = performance.now()
    samples.push({ t: now, size: await partitionSize(admin, added).catch(() => samples.at(-1)?.size ?? 0) })
    const p = (await admin.describeTopics([TOPIC]).catch(() => []))[0]?.partitions[0]
    if (catchUpMs < 0 && p?.isr.includes(added)) catchUpMs = now - t0
    const ongoing = await admin.listPartitionReassignments([{ topic: TOPIC, partition: 0 }]).catch(() => null)
    if (catchUpMs >= 0 && ongoing !== null && ongoing.length === 0 && p !== undefined && JSON.stringify(p.replicas) === JSON.stringify(to)) {
      completeMs = performance.now() - t0
      break
    }
    if (now - t0 > 3_600_000) throw new Error(`${name}: not done after an hour`)
    await sleep(SAMPLE_MS)
  }
  if (after !== undefined) notes.push(await after())
  const span = WINDOW_NUM * WINDOW_SECONDS * 1000
  let peakRate: number | undefined
  for (let i = 0, j = 0; i < samples.length; i++) {
    while (j < samples.length && samples[j]!.t - samples[i]!.t < span) j++
    if (j === samples.length) break
    const r = ((samples[j]!.size - samples[i]!.size) * 1000) / (samples[j]!.t - samples[i]!.t)
    peakRate = Math.max(peakRate ?? 0, r)
  }
  const m: Move = { name, from, to, catchUpMs, completeMs, logBytes, throttle: rate, peakRate, note: notes.filter((n) => n !== '').join('; ') }
  log(`  catch-up ${secs(catchUpMs)}, complete ${secs(completeMs)}, ${MB((logBytes * 1000) / catchUpMs)}/s`)
  return m
}

/** The shortest catch-up a throttle allows (see the header); 0 when the allowance covers everything. */
function floorMs(logBytes: number, rate: number): number {
  return Math.max(0, ((logBytes - rate * (WINDOW_NUM - 1) * WINDOW_SECONDS) / rate) * 1000)
}

function report(moves: Move[], logBytes: number, ctx: { fillMs: number; written: number; load0: number[]; machine: ReturnType<typeof machineInfo> }): void {
  const headers = ['Move', 'Throttle', 'Catch-up', 'Reassignment', 'Catch-up rate', 'Rate / throttle', 'Peak 11 s rate', 'Shortest allowed', 'Held', 'Notes']
  const rows = moves.map((m) => {
    const rate = (m.logBytes * 1000) / m.catchUpMs
    const floor = m.throttle === null ? undefined : floorMs(m.logBytes, m.throttle)
    return [
      `${m.name} [${m.from}] -> [${m.to}]`,
      m.throttle === null ? '-' : `${MB(m.throttle)}/s`,
      secs(m.catchUpMs),
      secs(m.completeMs),
      `${MB(rate)}/s`,
      m.throttle === null ? '-' : `${((rate / m.throttle) * 100).toFixed(0)}%`,
      m.peakRate === undefined ? '-' : `${MB(m.peakRate)}/s`,
      floor === undefined ? '-' : secs(floor),
      floor === undefined ? '-' : m.catchUpMs >= floor * 0.95 ? 'yes' : 'NO',
      m.note,
    ]
  })
  const all = [headers, ...rows]
  const widths = headers.map((_, i) => Math.max(...all.map((r) => r[i]!.length)))
  process.stdout.write(`${all.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')).join('\n')}\n`)
  const load1 = loadavg()
  const loads = `load average ${ctx.load0.map((l) => l.toFixed(2)).join(' ')} at the start, ${load1.map((l) => l.toFixed(2)).join(' ')} at the end`
  process.stdout.write(`partition: ${MB(logBytes)} of log (${MB(ctx.written)} of values, filled in ${secs(ctx.fillMs)}); ${loads}\n`)
  if (!write) return
  const md = `# Skein reassignment benchmark results

Generated by \`npm run bench:reassign -- --bytes ${bytes} --throttle ${throttle}\` on ${ctx.machine.date}; ${loads}. Do not edit by hand: rerun the benchmark.

${machineMarkdown(ctx.machine)}

The partition: ${fmtInt(logBytes)} bytes of log (${fmtInt(ctx.written)} bytes of ${fmtInt(RECORD_BYTES)}-byte values, written with acks=1 in ${secs(ctx.fillMs)}).

| ${headers.join(' | ')} |
| ${headers.map(() => '---').join(' | ')} |
${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}

## How it is measured (bench/reassign.bench.ts)

- Debian's ZooKeeper and three Skein broker processes on this machine, replication.quota.window.num=${WINDOW_NUM} x
  replication.quota.window.size.seconds=${WINDOW_SECONDS} (Kafka's defaults), replica.fetch.max.bytes 1 MiB (Kafka's).
- Each move copies the whole log to a broker that has none of it. **Catch-up**: from the request to the new
  replica in the ISR; **Reassignment**: until ListPartitionReassignments no longer lists the partition and its
  replicas are the target. **Catch-up rate**: the log's bytes over the catch-up time.
- **Shortest allowed**: Kafka's rate is measured over at least ${WINDOW_NUM - 1} windows, so the first
  ${WINDOW_NUM - 1} x ${WINDOW_SECONDS} s x throttle bytes may pass at once; the rest goes at most at the throttle.
  **Held**: the catch-up took at least that long (5% tolerance). **Peak 11 s rate**: the highest rate over any
  ${WINDOW_NUM * WINDOW_SECONDS} s span of the new replica's size, sampled every ${SAMPLE_MS} ms ('-' when the catch-up was shorter).
- \`--throttle\` runs \`skein reassign-partitions --execute --throttle\` (leader and follower rates, the topic's
  throttled-replica lists as Kafka's tool sets them) and \`--verify\` after, which clears them. The leader-only
  move sets leader.replication.throttled.rate on the partition's leader and leader.replication.throttled.replicas
  to the current replicas, and no follower rate.
`
  writeFileSync(join(BENCH_RESULTS_DIR, 'REASSIGN-RESULTS.md'), md)
  log(`wrote ${join(BENCH_RESULTS_DIR, 'REASSIGN-RESULTS.md')}`)
}

await main()
