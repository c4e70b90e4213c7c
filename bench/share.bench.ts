// Share-group consume throughput (KIP-932, issue 33): Skein's ShareConsumer with 1, 4 and 16 members of
// one share group against Skein's Consumer with 1, 4 and 16 members of one classic consumer group, on the
// same topics in the same run, side by side (share then classic for each point, so both see the same
// machine): a topic of 1 partition and one of 6, each filled beforehand with --records 100-byte records (`skein perf produce`, acks=1).
// A point is the time from the members' subscribe until every record of the topic has been handed out
// (the share group: each record once, accepted implicitly by the next poll, as Kafka's default; the
// classic group: with auto-commit, its default), so the joins are inside it, as a user would see them.
// Both kinds run their members in this process, the broker in its own (one core each on 2 cores).
// A point stops at --seconds, and its rate is then what was read by then. Each point runs --rounds times
// (default 3); the report gives the median of the rounds' share/classic ratios, each round's ratio, and the
// best rate of each kind.
// Writes bench/results/SHARE-RESULTS.md (--no-write: print only).
// Run: npm run bench:share [-- --records N --seconds S --members 1,4,16 --rounds R --no-write]
import { cpus, loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Admin, Consumer, ShareConsumer } from '../src/client/index.js'
import { SKEIN_JS, benchDir, startBroker } from './broker/broker-process.js'
import { run } from './broker/run.js'
import { flag } from './lib/flags.js'
import { BENCH_RESULTS_DIR } from './lib/results-dir.js'

// Three million: with fewer, a classic point lasts under a second and the rounds' ratios scatter on a shared machine.
const RECORDS = Number(flag('records') ?? 3_000_000)
const SECONDS = Number(flag('seconds') ?? 20)
const MEMBERS = (flag('members') ?? '1,4,16').split(',').map(Number)
/** Each point is measured this many times, share and classic side by side each time (see report()). */
const ROUNDS = Number(flag('rounds') ?? 3)
const WRITE = !process.argv.includes('--no-write')

const log = (s: string): void => console.log(s)

interface Point {
  partitions: number
  members: number
  kind: 'share' | 'classic'
  records: number
  ms: number
  firstMs: number
  /** Records handed out more than once (share: a lock that expired; classic: a rebalance before a commit). */
  again: number
}

const rate = (p: Point): number => (p.records / p.ms) * 1000

/** Counts each (partition, offset) once; returns whether it was new. */
class Seen {
  private readonly bits: Uint8Array[]
  constructor(partitions: number, records: number) {
    // The producer's partitioner spreads the records unevenly: room for all of them in each partition.
    this.bits = Array.from({ length: partitions }, () => new Uint8Array(records + 1))
  }
  add(partition: number, offset: number): boolean {
    const b = this.bits[partition]!
    if (offset >= b.length || b[offset] === 1) return false
    b[offset] = 1
    return true
  }
}

/** The topic's records, written by `skein perf produce` (acks=1) in its own process. */
async function fill(bootstrap: string, topic: string): Promise<void> {
  const t0 = performance.now()
  const args = ['perf', 'produce', '--bootstrap-server', bootstrap, '--topic', topic, '--num-records', String(RECORDS), '--record-size', '100', '--throughput', '-1', '--producer-props', 'acks=1', '--json']
  const r = await run(process.execPath, [SKEIN_JS, ...args], { timeoutMs: 300_000 })
  if (r.code !== 0) throw new Error(`skein perf produce exited ${r.code}: ${r.stderr}`)
  log(`  filled ${topic}: ${RECORDS} records in ${Math.round(performance.now() - t0)} ms`)
}

/** Members poll until `seen` has every record or the time is up. */
async function drive(polls: (() => Promise<{ partition: number; offset: number }[]>)[], partitions: number): Promise<{ records: number; ms: number; firstMs: number; again: number }> {
  const seen = new Seen(partitions, RECORDS)
  let records = 0
  let again = 0
  let firstMs = -1
  const t0 = performance.now()
  const deadline = t0 + SECONDS * 1000
  await Promise.all(polls.map(async (poll) => {
    while (records < RECORDS && performance.now() < deadline) {
      for (const r of await poll()) {
        if (seen.add(r.partition, r.offset)) records++
        else again++
      }
      if (firstMs < 0 && records > 0) firstMs = performance.now() - t0
    }
  }))
  return { records, ms: performance.now() - t0, firstMs, again }
}

async function sharePoint(bootstrap: string, admin: Admin, topic: string, partitions: number, members: number, n: number): Promise<Point> {
  const group = `share-${partitions}-${members}-${n}`
  await admin.alterConfigs({ type: 'group', name: group }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
  const cs = Array.from({ length: members }, (_, i) => new ShareConsumer({ bootstrapServers: bootstrap, groupId: group, clientId: `share-${i}` }))
  try {
    for (const c of cs) c.subscribe([topic])
    const r = await drive(cs.map((c) => () => c.poll(500)), partitions)
    return { partitions, members, kind: 'share', ...r }
  } finally {
    await Promise.all(cs.map((c) => c.close().catch(() => {})))
  }
}

async function classicPoint(bootstrap: string, topic: string, partitions: number, members: number, n: number): Promise<Point> {
  const group = `classic-${partitions}-${members}-${n}`
  const cs = Array.from({ length: members }, (_, i) => new Consumer({ bootstrapServers: bootstrap, groupId: group, clientId: `classic-${i}`, autoOffsetReset: 'earliest' }))
  try {
    for (const c of cs) c.subscribe([topic])
    const r = await drive(cs.map((c) => () => c.poll(500)), partitions)
    return { partitions, members, kind: 'classic', ...r }
  } finally {
    await Promise.all(cs.map((c) => c.close().catch(() => {})))
  }
}

async function main(): Promise<void> {
  const load0 = loadavg()
  log(`share-group consume benchmark: ${RECORDS} records of 100 bytes per topic, members ${MEMBERS.join(', ')}, at most ${SECONDS} s a point`)
  log(`machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load average ${load0.map((l) => l.toFixed(2)).join(' ')}`)
  const dataDir = benchDir('share')
  const broker = await startBroker({
    dataDir,
    overrides: ['group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=1', 'share.coordinator.state.topic.num.partitions=1'],
  })
  const admin = new Admin({ bootstrapServers: broker.bootstrap })
  const points: Point[] = []
  try {
    for (const partitions of [1, 6]) {
      const topic = `bench-share-${partitions}`
      await admin.createTopics([{ name: topic, numPartitions: partitions, replicationFactor: 1 }])
      await fill(broker.bootstrap, topic)
      let n = 0
      for (let round = 0; round < ROUNDS; round++) for (const members of MEMBERS) {
        // Share first, then classic, alternating the order per point so that neither always runs on a warmer broker.
        const order: ('share' | 'classic')[] = n % 2 === 0 ? ['share', 'classic'] : ['classic', 'share']
        const pair: Point[] = []
        for (const kind of order) {
          const p = kind === 'share' ? await sharePoint(broker.bootstrap, admin, topic, partitions, members, n) : await classicPoint(broker.bootstrap, topic, partitions, members, n)
          pair.push(p)
          log(`  round ${round + 1}, ${partitions} partition(s), ${members} member(s), ${kind}: ${p.records} records in ${Math.round(p.ms)} ms = ${Math.round(rate(p))} records/s (first record after ${Math.round(p.firstMs)} ms, handed out again ${p.again})`)
        }
        points.push(...pair)
        n++
      }
    }
  } finally {
    await admin.close().catch(() => {})
    await broker.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  const load1 = loadavg()
  const lines = report(points, load0, load1)
  log('\n' + lines.join('\n'))
  if (WRITE) {
    writeFileSync(join(BENCH_RESULTS_DIR, 'SHARE-RESULTS.md'), lines.join('\n') + '\n')
    log(`\nwritten to bench/results/SHARE-RESULTS.md`)
  }
}

function report(points: Point[], load0: number[], load1: number[]): string[] {
  const args = process.argv.slice(2).join(' ')
  const out = [
    '# Share-group consume throughput',
    '',
    `Generated by \`npm run bench:share${args === '' ? '' : ` -- ${args}`}\` (bench/share.bench.ts) at ${new Date().toISOString().slice(0, 16)} UTC, on ${cpus().length} cores`,
    `(${cpus()[0]?.model ?? '?'}), load average ${load0.map((l) => l.toFixed(2)).join(' ')} at the start and ${load1.map((l) => l.toFixed(2)).join(' ')} at the end (the machine is shared with`,
    'other work: read the ratios, measured side by side, rather than the absolute rates).',
    '',
    `One broker process; ${RECORDS} records of 100 bytes per topic, written beforehand. A point: N members of one group, in the`,
    'benchmark\'s process, from their subscribe until every record has been handed out once (joins included). Share: Skein\'s',
    'ShareConsumer, implicit acknowledgement (each poll accepts the last one\'s records), max.poll.records 500. Classic: Skein\'s',
    `Consumer in a consumer group, auto-commit, max.poll.records 500. A point stops after ${SECONDS} s. Each point ran ${ROUNDS} time(s), share and classic`,
    'side by side each time (their order alternating). The ratio is the median of the rounds\' ratios, each of a pair measured',
    'side by side; the rates are the best round of each kind (the machine\'s other work only slows a point down). "again": records',
    'handed out more than once, and the time to the first record, of the best rounds.',
    '',
    '| partitions | members | share records/s (best) | classic records/s (best) | share / classic (median of rounds) | share / classic per round | share: first record (ms), again | classic: first record (ms), again |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ]
  // The best of the rounds per kind: the machine's other work only ever slows a point down.
  const best = (ps: Point[]): Point | undefined => ps.reduce<Point | undefined>((b, p) => (b === undefined || rate(p) > rate(b) ? p : b), undefined)
  for (const partitions of [1, 6]) {
    for (const members of MEMBERS) {
      const of = (kind: Point['kind']): Point[] => points.filter((p) => p.kind === kind && p.partitions === partitions && p.members === members)
      const [ss, cs] = [of('share'), of('classic')]
      const [s, c] = [best(ss), best(cs)]
      if (s === undefined || c === undefined) continue
      const partial = (p: Point): string => (p.records < RECORDS ? ` (${p.records} of ${RECORDS} read)` : '')
      const ratios = ss.flatMap((x, i) => (cs[i] === undefined ? [] : [rate(x) / rate(cs[i]!)]))
      const sorted = [...ratios].sort((a, b) => a - b)
      const median = sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2
      out.push(`| ${partitions} | ${members} | ${Math.round(rate(s)).toLocaleString('en-US')}${partial(s)} | ${Math.round(rate(c)).toLocaleString('en-US')}${partial(c)} | ${median.toFixed(2)} | ${ratios.map((r) => r.toFixed(2)).join(', ')} | ${Math.round(s.firstMs)}, ${s.again} | ${Math.round(c.firstMs)}, ${c.again} |`)
    }
  }
  return out
}

await main()
