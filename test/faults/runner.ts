// Runs one named fault scenario against a real cluster (test/harness/cluster.ts: Debian's ZooKeeper and
// Skein broker processes): starts the cluster and the workloads, repeats the scenario's fault (each
// round bounded, healed, and waited out until every partition has a leader and its full ISR again),
// stops the workloads, reads everything back with a fresh read_committed consumer, compares every
// replica's segment files up to the high watermark, and judges the history with checker.ts.
// Figures per scenario (checker counts, the longest gap in acknowledged writes on the partitions each
// round affected, repetitions) are printed and written to test/faults/RESULTS.md, rebuilt from one
// JSON file per scenario under test/faults/.results/ (not committed); scenarios without one there keep
// their rows and notes from the RESULTS.md already written.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import { decodeBatches, partitionsOf, startCluster, startZooKeeper, until as pollUntil, type ClusterBroker, type ClusterOptions, type PartitionView, type TestCluster, type ZooKeeperTestServer } from '../harness/index.js'
import { check, compareReplicaLogs, longestAckGap, longestAckGapSpan, type CheckResult, type Op } from './checker.js'
import { Workload, type WorkloadOptions } from './workloads.js'

const HERE = dirname(fileURLToPath(import.meta.url))
export const RESULTS_DIR = join(HERE, '.results')
export const RESULTS_MD = join(HERE, 'RESULTS.md')

/** Repetitions of the crash scenarios: FAULTS_REPETITIONS (default 10). */
export function repetitions(full = 10): number {
  const env = process.env.FAULTS_REPETITIONS
  return env === undefined ? full : Math.max(1, Math.min(full, Number(env)))
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** The harness's until with the suite's patience (faults take a session timeout or more to heal). */
export function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000, everyMs = 200): Promise<T> {
  return pollUntil(what, fn, timeoutMs, everyMs)
}

export type { PartitionView }

export interface ScenarioContext {
  cluster: TestCluster
  topic: string
  partitions: number
  workload: Workload
  /** Brokers the scenario has frozen or cut off: not asked for metadata. */
  unreachable: Set<number>
  /** The partitions as one reachable broker answers them. */
  view(): Promise<PartitionView[]>
  /** The controller's id as a reachable broker answers it. */
  controller(): Promise<number>
  /** Waits until every reachable broker agrees on the partitions and `ok` holds. */
  agreed(ok: (ps: PartitionView[]) => boolean, what: string, timeoutMs?: number): Promise<PartitionView[]>
  /** Waits until every partition has a leader and its full ISR, on every broker. */
  healed(timeoutMs?: number): Promise<void>
  /** Adds a line to the scenario's notes (printed and saved with the figures). */
  note(line: string): void
  /** Records a send or poll the scenario made itself (e.g. raw produces to a zombie). */
  record(op: Op): void
}

export interface RoundResult {
  /** Partitions the round's fault affected (for the ack-gap figure). */
  affected: number[]
  /** Window of the fault: [start, end] ms since the epoch; default the round's start to its heal. */
  window?: [number, number]
}

export interface Scenario {
  name: string
  /** One line: what is done and what must hold. */
  description: string
  /** Rounds of the fault (crash scenarios: repetitions()). */
  rounds: number
  cluster?: Omit<ClusterOptions, 'zookeeper'> & { setup?: () => Promise<{ options: Partial<ClusterOptions>; cleanup: () => Promise<void> }> }
  /** Topic configs (e.g. unclean.leader.election.enable). */
  topicConfigs?: Record<string, string>
  partitions?: number
  workload?: Partial<WorkloadOptions>
  /** One round of the fault; it must leave the cluster healable (everything restarted, resumed, reconnected). */
  round(ctx: ScenarioContext, round: number): Promise<RoundResult>
  /** Losses the scenario expects (unclean election): the checker's counts are reported, not failed. */
  expectLoss?: boolean
  /** Skip the replica comparison (the scenario checks its own end state). */
  skipReplicaCheck?: boolean
  /** Where a broker keeps its partitions, when not its harness data dir (a scenario's own mount). */
  logDir?: (b: ClusterBroker) => string | undefined
  /** Whether the scenario can run here; a reason when it cannot (printed, and saved as skipped). */
  unavailable?: () => string | undefined
}

export interface ScenarioResult {
  name: string
  description: string
  rounds: number
  skipped?: string
  durationMs: number
  acknowledged: number
  polls: number
  lost: number
  unseen: number
  skipped_: number
  inconsistent: number
  duplicates: number
  abortedReads: number
  nonMonotonic: number
  failedSends: number
  /** Failed sends by client and error (the first 60 characters of it). */
  failures?: Record<string, number>
  failedButVisible: number
  /** Longest gap in acknowledged writes over the rounds (ms), and per round. */
  maxGapMs: number
  gapsMs: number[]
  replicasIdentical: boolean
  replicaDetail: string[]
  notes: string[]
  examples: string[]
  ok: boolean
}

export const BASE_OVERRIDES = [
  'min.insync.replicas=2',
  'default.replication.factor=3',
  'replica.lag.time.max.ms=3000',
  'replica.fetch.backoff.ms=100',
  'offsets.topic.replication.factor=3',
  'offsets.topic.num.partitions=3',
  'transaction.state.log.replication.factor=3',
  'transaction.state.log.num.partitions=3',
  'transaction.state.log.min.isr=2',
  'group.initial.rebalance.delay.ms=0',
]
export const SESSION_TIMEOUT_MS = 6000
/**
 * FAULTS_SHIPPED_SETTINGS=1: the brokers keep Skein's defaults for what bounds failover
 * (zookeeper.session.timeout.ms 18000 on a ZooKeeper with Debian's tickTime of 2000, replica.lag.time.max.ms,
 * replica.fetch.backoff.ms), for the failover figures a user would see.
 */
const SHIPPED_SETTINGS = process.env.FAULTS_SHIPPED_SETTINGS !== undefined
const SHIPPED_SESSION_TIMEOUT_MS = 18_000
const TUNED_FOR_THE_SUITE = ['replica.lag.time.max.ms', 'replica.fetch.backoff.ms']
const FINAL_READER = 'final-reader'

/** The segment files of a replica, concatenated in base-offset order (the names are zero-padded). */
export function replicaLog(b: ClusterBroker, topic: string, partition: number, logDir = b.dataDir): Buffer {
  const dir = join(logDir, `${topic}-${partition}`)
  return Buffer.concat(readdirSync(dir).filter((n) => n.endsWith('.log')).sort().map((n) => readFileSync(join(dir, n))))
}

/** The data records (control batches left out) of a log below the high watermark. */
export function recordsBelow(log: Buffer, highWatermark: number): { offset: number; value: string }[] {
  const out: { offset: number; value: string }[] = []
  let pos = 0
  while (log.length - pos >= 61) {
    const size = log.readInt32BE(pos + 8)
    const end = pos + 12 + size
    if (size <= 0 || end > log.length) break
    if (Number(log.readBigInt64BE(pos)) >= highWatermark) break
    const isControl = (log.readInt16BE(pos + 21) & 0x20) !== 0
    if (!isControl) for (const b of decodeBatches(log.subarray(pos, end))) for (const r of b.records) if (r.offset < highWatermark) out.push({ offset: r.offset, value: r.value?.toString() ?? '' })
    pos = end
  }
  return out
}

/** Runs a scenario; `save: false` (the smoke test) prints the figures without touching RESULTS.md. */
/** The batches of a log from a few offsets before `offset` on: offsets, producer id/epoch, transactional, control type. */
export function batchesAround(log: Buffer, offset: number, before = 3, count = 12): string {
  const out: string[] = []
  let pos = 0
  while (log.length - pos >= 61 && out.length < count) {
    const size = log.readInt32BE(pos + 8)
    const end = pos + 12 + size
    if (size <= 0 || end > log.length) break
    const base = Number(log.readBigInt64BE(pos))
    const last = base + log.readInt32BE(pos + 23)
    if (last >= offset - before) {
      const attributes = log.readInt16BE(pos + 21)
      const pid = log.readBigInt64BE(pos + 43)
      const epoch = log.readInt16BE(pos + 51)
      let kind = (attributes & 0x10) !== 0 ? 'txn' : 'plain'
      if ((attributes & 0x20) !== 0) {
        const key = decodeBatches(log.subarray(pos, end))[0]?.records[0]?.key
        kind = key != null && key.length >= 4 ? (key.readInt16BE(2) === 0 ? 'ABORT' : 'COMMIT') : 'control'
      }
      out.push(`[${base}-${last} pid ${pid} e${epoch} seq ${log.readInt32BE(pos + 53)} ${kind} leaderEpoch ${log.readInt32BE(pos + 12)}]`)
    }
    pos = end
  }
  return out.join(' ')
}

export async function runScenario(s: Scenario, options: { save?: boolean } = {}): Promise<ScenarioResult> {
  const save = (options.save ?? true) && process.env.FAULTS_NO_SAVE === undefined
  const started = Date.now()
  const reason = s.unavailable?.()
  if (reason !== undefined) {
    console.warn(`[faults] ${s.name}: SKIPPED (${reason})`)
    const r = emptyResult(s, { skipped: reason })
    if (save) saveResult(r)
    return r
  }
  const notes: string[] = []
  const note = (line: string): void => {
    notes.push(line)
    console.log(`[faults] ${s.name}: ${line}`)
  }
  const setup = await s.cluster?.setup?.()
  let cluster: TestCluster | undefined
  let workload: Workload | undefined
  let shippedZooKeeper: ZooKeeperTestServer | undefined
  try {
    if (SHIPPED_SETTINGS && setup?.options.zookeeper === undefined) shippedZooKeeper = await startZooKeeper({ tickTime: 2000 })
    const base = SHIPPED_SETTINGS ? BASE_OVERRIDES.filter((o) => !TUNED_FOR_THE_SUITE.includes(o.split('=')[0]!)) : BASE_OVERRIDES
    if (SHIPPED_SETTINGS) note(`shipped settings: zookeeper.session.timeout.ms=${SHIPPED_SESSION_TIMEOUT_MS}, broker.session.timeout.ms and the replica settings at their defaults`)
    cluster = await startCluster({
      sessionTimeoutMs: SHIPPED_SETTINGS ? SHIPPED_SESSION_TIMEOUT_MS : SESSION_TIMEOUT_MS,
      ...s.cluster,
      ...setup?.options,
      ...(shippedZooKeeper === undefined ? {} : { zookeeper: shippedZooKeeper }),
      overrides: [...base, ...(s.cluster?.overrides ?? []), ...(setup?.options.overrides ?? [])],
    })
    const c = cluster
    const topic = 'faults'
    const partitions = s.partitions ?? 3
    const unreachable = new Set<number>()
    const reachable = (): ClusterBroker[] => c.brokers.filter((b) => b.alive() && !unreachable.has(b.id))
    const agreed = (ok: (ps: PartitionView[]) => boolean, what: string, timeoutMs = 60_000): Promise<PartitionView[]> =>
      until(
        what,
        async () => {
          const views = await Promise.all(reachable().map((b) => partitionsOf(b, topic)))
          const first = JSON.stringify(views[0])
          if (views.length === 0 || !views.every((v) => JSON.stringify(v) === first)) return undefined
          return views[0]!.length === partitions && ok(views[0]!) ? views[0] : undefined
        },
        timeoutMs,
      )
    const admin = await reachable()[0]!.client()
    try {
      const req = CreateTopics.createCreateTopicsRequest({
        timeoutMs: 30_000,
        topics: [
          CreateTopics.createCreatableTopic({
            name: topic,
            numPartitions: partitions,
            replicationFactor: 3,
            configs: Object.entries(s.topicConfigs ?? {}).map(([name, value]) => CreateTopics.createCreatableTopicConfig({ name, value })),
          }),
        ],
      })
      const res = await admin.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
      if (res.topics[0]!.errorCode !== 0) throw new Error(`CreateTopics ${topic}: error ${res.topics[0]!.errorCode} ${res.topics[0]!.errorMessage}`)
    } finally {
      admin.close()
    }
    const healed = async (timeoutMs = 120_000): Promise<void> => {
      await agreed((ps) => ps.every((p) => p.leader >= 0 && p.isr.length === p.replicas.length), 'every partition led with its full ISR', timeoutMs)
    }
    await healed()
    workload = new Workload({ topic, partitions, bootstrap: () => c.brokers.map((b) => b.bootstrap).join(','), ...s.workload })
    const w = workload
    const ctx: ScenarioContext = {
      cluster: c,
      topic,
      partitions,
      workload: w,
      unreachable,
      view: async () => partitionsOf(reachable()[0]!, topic),
      controller: async () => {
        const cl = await reachable()[0]!.client()
        try {
          return (await cl.metadata([])).controllerId
        } finally {
          cl.close()
        }
      },
      agreed,
      healed,
      note,
      record: (op) => w.history.push(op),
    }
    w.start()
    // Warm up: every producer has something acknowledged before the first fault.
    await until('the workload to get acknowledgements', async () => (w.history.filter((o) => o.type === 'send' && o.outcome === 'ok').length >= 20 ? true : undefined), 60_000)
    const gaps: number[] = []
    for (let round = 0; round < s.rounds; round++) {
      const roundStart = Date.now()
      const r = await s.round(ctx, round)
      await healed()
      await sleep(1000) // acknowledgements after healing close the round's window
      const [from, to] = r.window ?? [roundStart, Date.now()]
      gaps.push(longestAckGap(w.history, r.affected, from, to))
      note(`round ${round}: longest ack gap per affected partition: ${r.affected.map((p) => `${p}: ${longestAckGap(w.history, [p], from, to)} ms`).join(', ')} (window ${to - from} ms)`)
      // FAULTS_GAP_DEBUG=1: what the brokers logged and the clients were told during the longest gap.
      if (process.env.FAULTS_GAP_DEBUG !== undefined) printGap(c, w.history, longestAckGapSpan(w.history, r.affected, from, to), roundStart)
    }
    await sleep(1000)
    await w.stop()
    await healed()
    await w.drain(FINAL_READER)

    // Every replica's log, up to the leader's high watermark.
    const replicaDetail: string[] = []
    let replicasIdentical = true
    if (s.skipReplicaCheck !== true) {
      const view = await ctx.view()
      for (const p of view) {
        const leader = c.broker(p.leader)
        const lc = await leader.client()
        let hw: number
        try {
          hw = Number((await lc.fetch(topic, p.partition, 0, { maxWaitMs: 0, partitionMaxBytes: 1 })).highWatermark)
        } finally {
          lc.close()
        }
        const comparison = await until(
          `replicas of ${topic}-${p.partition} identical up to HW ${hw}`,
          async () => {
            const cmp = compareReplicaLogs(new Map(p.replicas.map((id) => [id, replicaLog(c.broker(id), topic, p.partition, s.logDir?.(c.broker(id)))])), hw)
            return cmp.identical ? cmp : undefined
          },
          15_000,
        ).catch(() => compareReplicaLogs(new Map(p.replicas.map((id) => [id, replicaLog(c.broker(id), topic, p.partition, s.logDir?.(c.broker(id)))])), hw))
        replicaDetail.push(`${topic}-${p.partition}: ${comparison.detail}`)
        if (!comparison.identical) replicasIdentical = false
        for (const id of p.replicas) for (const r of recordsBelow(replicaLog(c.broker(id), topic, p.partition, s.logDir?.(c.broker(id))), hw)) w.history.push({ type: 'replica', broker: id, partition: p.partition, offset: r.offset, value: r.value })
      }
    }

    const result = check(w.history, { idempotent: true, finalReaders: [FINAL_READER] })
    // Evidence for an aborted read or a duplicate: the batches around it in every replica's log (producer, transactional,
    // control type), and the whole history.
    for (const f of result.errors.filter((e) => e.kind === 'aborted-read' || e.kind === 'duplicate').slice(0, 3)) {
      const m = / at (\d+)@(\d+)/.exec(f.detail)
      if (m === null) continue
      const [partition, offset] = [Number(m[1]), Number(m[2])]
      for (const b of c.brokers) note(`evidence for ${f.detail}: broker ${b.id}: ${batchesAround(replicaLog(b, topic, partition, s.logDir?.(b)), offset)}`)
    }
    if (!result.ok && save) writeFileSync(join(RESULTS_DIR, `${s.name}.history.jsonl`), w.history.map((o) => JSON.stringify(o)).join('\n') + '\n')
    const out = toResult(s, result, w.history, gaps, replicasIdentical, replicaDetail, notes, Date.now() - started)
    if (save) saveResult(out)
    print(out)
    if (!out.ok) console.log(`[faults] ${s.name} diagnostics:\n${w.diagnostics()}`)
    return out
  } finally {
    await workload?.stop().catch(() => {})
    await cluster?.stop().catch(() => {})
    await shippedZooKeeper?.stop().catch(() => {})
    await setup?.cleanup().catch((err: Error) => console.warn(`[faults] ${s.name}: cleanup failed: ${err.message}`))
  }
}

function emptyResult(s: Scenario, extra: Partial<ScenarioResult>): ScenarioResult {
  return {
    name: s.name, description: s.description, rounds: 0, durationMs: 0, acknowledged: 0, polls: 0, lost: 0, unseen: 0, skipped_: 0, inconsistent: 0, duplicates: 0,
    abortedReads: 0, nonMonotonic: 0, failedSends: 0, failedButVisible: 0, maxGapMs: 0, gapsMs: [], replicasIdentical: true, replicaDetail: [], notes: [], examples: [], ok: true, ...extra,
  }
}

function toResult(s: Scenario, r: CheckResult, history: Op[], gaps: number[], replicasIdentical: boolean, replicaDetail: string[], notes: string[], durationMs: number): ScenarioResult {
  const promisesKept = r.ok && replicasIdentical
  return {
    name: s.name,
    description: s.description,
    rounds: s.rounds,
    durationMs,
    acknowledged: r.acknowledged,
    polls: history.filter((o) => o.type === 'poll').length,
    lost: r.lost,
    unseen: r.unseen,
    skipped_: r.skipped,
    inconsistent: r.inconsistent,
    duplicates: r.duplicates,
    abortedReads: r.abortedReads,
    nonMonotonic: r.nonMonotonicPolls + r.nonMonotonicSends,
    failedSends: history.filter((o) => o.type === 'send' && o.outcome === 'fail').length,
    failures: failureCounts(history),
    failedButVisible: r.failedButVisible,
    maxGapMs: Math.max(0, ...gaps),
    gapsMs: gaps,
    replicasIdentical,
    replicaDetail,
    notes,
    examples: r.examples.map((e) => `${e.kind}: ${e.detail}`),
    // An unclean election is expected to lose data: the run passes when the checker reported it.
    ok: s.expectLoss === true ? true : promisesKept,
  }
}

function failureCounts(history: Op[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const o of history) {
    if (o.type !== 'send' || o.outcome !== 'fail') continue
    const k = `${o.client.replace(/-\d+$/, '')}: ${(o.error ?? 'error').slice(0, 60)}`
    out[k] = (out[k] ?? 0) + 1
  }
  return out
}

function print(r: ScenarioResult): void {
  console.log(
    `[faults] ${r.name}: rounds ${r.rounds}, acknowledged ${r.acknowledged}, polls ${r.polls}, lost ${r.lost}, inconsistent ${r.inconsistent}, duplicates ${r.duplicates}, ` +
      `aborted reads ${r.abortedReads}, non-monotonic ${r.nonMonotonic}, replicas identical ${r.replicasIdentical}, longest ack gap ${r.maxGapMs} ms (${r.gapsMs.join(', ')}), ${Math.round(r.durationMs / 1000)} s` +
      (r.failedSends > 0 ? `\n  failed sends: ${JSON.stringify(r.failures ?? {})}` : '') +
      (r.examples.length > 0 ? `\n  ${r.examples.join('\n  ')}` : ''),
  )
}

function saveResult(r: ScenarioResult): void {
  mkdirSync(RESULTS_DIR, { recursive: true })
  writeFileSync(join(RESULTS_DIR, `${r.name}.json`), JSON.stringify({ ...r, at: new Date().toISOString() }, null, 2))
  writeResultsMarkdown()
}

/**
 * The table row and the scenario section of each scenario in the RESULTS.md there is now: a run of a
 * few scenarios (FAULTS_ONLY, or a checkout whose .results holds only some) keeps the others' last
 * figures instead of dropping them.
 */
function previousResults(): Map<string, { row: string; section: string[] }> {
  const out = new Map<string, { row: string; section: string[] }>()
  let text: string
  try {
    text = readFileSync(RESULTS_MD, 'utf8')
  } catch {
    return out
  }
  const [table = '', sections = ''] = text.split('\n## Scenarios\n')
  for (const line of table.split('\n')) {
    const name = /^\| ([a-z][a-z0-9-]*) \|/.exec(line)?.[1]
    if (name !== undefined && name !== 'scenario') out.set(name, { row: line, section: [] })
  }
  let current: string[] | undefined
  for (const line of sections.split('\n')) {
    const name = /^- \*\*([a-z0-9-]+)\*\*:/.exec(line)?.[1]
    if (name !== undefined) current = out.get(name)?.section
    if (line.trim() !== '') current?.push(line)
  }
  return out
}

/** RESULTS.md from every saved scenario result (the last run of each), and the earlier figures of scenarios not run here. */
export function writeResultsMarkdown(): void {
  const results = readdirSync(RESULTS_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(RESULTS_DIR, f), 'utf8')) as ScenarioResult & { at: string })
  const earlier = previousResults()
  // Per scenario the newer figures win: a result file of this checkout, or the row already written (from
  // a later run elsewhere); "run at" is the row's last column.
  const runAt = (row: string): string => row.split('|').at(-2)?.trim() ?? ''
  const newer = results.filter((r) => {
    const e = earlier.get(r.name)
    if (e !== undefined && runAt(e.row) > r.at.slice(0, 16)) return false
    earlier.delete(r.name)
    return true
  })
  results.splice(0, results.length, ...newer)
  const names = [...results.map((r) => r.name), ...earlier.keys()].sort()
  const rows = new Map<string, string>([...earlier].map(([name, e]) => [name, e.row]))
  const sections = new Map<string, string[]>([...earlier].map(([name, e]) => [name, e.section]))
  const lines = [
    '# Fault suite results',
    '',
    'Generated by `npm run test:faults` (test/faults/runner.ts) from the last run of each scenario; `FAULTS_REPETITIONS`',
    'lowers the rounds of the crash scenarios (10 in the full suite). Three Skein brokers, Debian ZooKeeper',
    `(session timeout ${SESSION_TIMEOUT_MS} ms), topic \`faults\` with 3 partitions, replication factor 3, min.insync.replicas=2;`,
    'workloads: librdkafka (python3-confluent-kafka) idempotent acks=all producer and read_committed consumer, kafkajs',
    'idempotent acks=all producer (and a transactional one where noted). Gap = longest time without an acknowledged',
    'write on the partitions a round affected. Lost/inconsistent/duplicates/aborted reads are the checker\'s counts',
    '(test/faults/checker.ts); "replicas" = every replica\'s segment files byte-identical up to the high watermark.',
    '',
    '| scenario | rounds | acked | lost | inconsistent | duplicates | aborted reads | non-monotonic | replicas | longest gap (ms) | result | run at |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ]
  for (const r of results) {
    rows.set(
      r.name,
      r.skipped !== undefined
        ? `| ${r.name} | - | - | - | - | - | - | - | - | - | skipped: ${r.skipped} | ${r.at.slice(0, 16)} |`
        : `| ${r.name} | ${r.rounds} | ${r.acknowledged} | ${r.lost} | ${r.inconsistent} | ${r.duplicates} | ${r.abortedReads} | ${r.nonMonotonic} | ${r.replicasIdentical ? 'identical' : 'DIFFER'} | ${r.maxGapMs} | ${r.ok ? 'pass' : 'FAIL'} | ${r.at.slice(0, 16)} |`,
    )
    const section = [`- **${r.name}**: ${r.description}`]
    for (const n of r.notes) section.push(`  - ${n}`)
    if (r.failedSends > 0) section.push(`  - failed sends (retried by the clients until their timeouts, or refused): ${Object.entries(r.failures ?? {}).map(([k, v]) => `${k} ×${v}`).join('; ')}`)
    for (const e of r.examples.slice(0, 5)) section.push(`  - checker: ${e}`)
    sections.set(r.name, section)
  }
  for (const name of names) lines.push(rows.get(name)!)
  lines.push('', '## Scenarios', '')
  for (const name of names) lines.push(...sections.get(name)!)
  writeFileSync(RESULTS_MD, lines.join('\n') + '\n')
}

/** The brokers' log lines and the failed sends of a gap (times relative to the round's start). */
function printGap(c: TestCluster, history: readonly Op[], span: { partition: number; start: number; end: number } | undefined, roundStart: number): void {
  if (span === undefined) return
  const lines = [`--- longest gap: partition ${span.partition}, ${span.start - roundStart}..${span.end - roundStart} ms after the round's start`]
  for (const b of c.brokers) {
    for (const l of b.output().split('\n')) {
      const t = Date.parse(/"time":"([^"]+)"/.exec(l)?.[1] ?? '')
      if (t >= span.start - 300 && t <= span.end + 100) lines.push(`${t - roundStart} b${b.id} ${l.replace(/"level":\d+,"time":"[^"]+","service":"skein",/, '').slice(0, 260)}`)
    }
  }
  for (const o of history) {
    if (o.type === 'send' && o.outcome !== 'ok' && o.time >= span.start - 300 && o.time <= span.end + 100) lines.push(`${o.time - roundStart} client ${o.client} ${o.outcome} ${(o as { error?: string }).error ?? ''}`.slice(0, 200))
  }
  console.log(lines.sort((a, b) => parseInt(a) - parseInt(b)).join('\n'))
}
