// The share-group fault scenario (KIP-932, issue 33): four share consumers (share-member.ts, Skein's
// ShareConsumer, each in a process of its own) share a topic of 6 partitions, replication factor 3,
// min.insync.replicas 2, on three brokers over Debian's ZooKeeper, while an idempotent acks=all producer
// writes records with unique ids. Mid-run one consumer is SIGKILLed while it holds records (their locks
// expire and the records go to the others) and, optionally, the leader of partition 0 is SIGKILLed and
// started again. At the end a fresh member drains the group for longer than a lock, so a record nobody
// acknowledged shows up.
// What must hold: every produced record was acknowledged (ACCEPT answered without error) exactly once
// over all members; deliveries beyond the first are redeliveries, counted, not failures. An acknowledgement
// whose outcome is unknown (the member was killed before it printed it, or the answer was lost or an error
// that does not say the broker refused it) is "indeterminate": it passes only if the record was never
// delivered again, the drain included (the broker kept it as accepted).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AcknowledgeType, Admin, ErrorCode, Producer, ShareConsumer } from '../../src/client/index.js'
import { REPO_ROOT, partitionsOf, startCluster, type TestCluster } from '../harness/index.js'
import { compareReplicaLogs } from './checker.js'
import { BASE_OVERRIDES, RESULTS_DIR, SESSION_TIMEOUT_MS, replicaLog, sleep, until, writeResultsMarkdown, type ScenarioResult } from './runner.js'
import { killWhenOrphaned } from './workloads.js'

export const SHARE_MEMBER_JS = join(REPO_ROOT, 'dist', 'test', 'faults', 'share-member.js')

export interface ShareScenario {
  name: string
  records: number
  /** Records per second the producer writes. */
  rate: number
  members: number
  /** The group's share.record.lock.duration.ms. */
  lockMs: number
  /** SIGKILL the leader of partition 0 mid-run and start it again. */
  killBroker: boolean
  /** Each member's pause between recording a poll's records and acknowledging them. */
  holdMs: number
  /** The pause of the member to be killed: long, so that the SIGKILL finds it holding records rather than acknowledging them. */
  victimHoldMs: number
}

export const FULL: ShareScenario = { name: 'share-group-sigkill-member-and-leader', records: 6000, rate: 250, members: 4, lockMs: 3000, killBroker: true, holdMs: 50, victimHoldMs: 500 }

export interface ShareResult {
  name: string
  produced: number
  failedSends: number
  /** Records acknowledged once / more than once / not at all (beyond the indeterminate ones). */
  ackedOnce: number
  ackedTwice: number
  missing: number
  neverDelivered: number
  /** Unknown outcome, never delivered again: the broker kept the acceptance. */
  indeterminate: number
  deliveries: number
  redeliveries: number
  /** Acknowledgements refused (lock expired, leader moved, ...), by error. */
  refusedAcks: Record<string, number>
  replicasIdentical: boolean
  replicaDetail: string[]
  durationMs: number
  notes: string[]
  examples: string[]
  ok: boolean
}

interface Member {
  name: string
  child: ChildProcess
  exited: Promise<void>
  lastLine: string
  stderr: string
}

interface RecordState {
  id: string
  deliveries: { c: string; dc: number }[]
  acked: string[]
  /** The outcome of the last acknowledgement attempt is unknown (see the header). */
  indeterminate: boolean
}

const TOPIC = 'share-faults'
const GROUP = 'share-faults-group'
const PARTITIONS = 6

/** Acknowledgement errors after which the broker surely did not apply it: the record stays delivered-not-accepted. */
const REFUSED = new Set<number>([ErrorCode.INVALID_RECORD_STATE])

export async function runShareScenario(s: ShareScenario, options: { save?: boolean } = {}): Promise<ShareResult> {
  if (!existsSync(SHARE_MEMBER_JS)) throw new Error(`${SHARE_MEMBER_JS} is missing: run npx tsc -p tsconfig.json first`)
  const started = Date.now()
  const notes: string[] = []
  const note = (line: string): void => {
    notes.push(line)
    console.log(`[faults] ${s.name}: ${line}`)
  }
  const byOffset = new Map<string, RecordState>()
  const refusedAcks: Record<string, number> = {}
  const members: Member[] = []
  const key = (p: number, o: number): string => `${p}@${o}`
  const stateOf = (p: number, o: number, id: string | null): RecordState => {
    let st = byOffset.get(key(p, o))
    if (st === undefined) byOffset.set(key(p, o), (st = { id: id ?? `?${key(p, o)}`, deliveries: [], acked: [], indeterminate: false }))
    return st
  }
  const onLine = (line: Record<string, unknown>): void => {
    const c = String(line.c)
    if (line.t === 'got') stateOf(line.p as number, line.o as number, line.id as string).deliveries.push({ c, dc: line.dc as number })
    else if (line.t === 'ack') {
      for (const o of line.o as number[]) {
        const st = stateOf(line.p as number, o, null)
        if (line.err === undefined) {
          st.acked.push(c)
          st.indeterminate = false
        } else if (typeof line.code === 'number' && REFUSED.has(line.code)) {
          refusedAcks[String(line.err).slice(0, 60)] = (refusedAcks[String(line.err).slice(0, 60)] ?? 0) + 1
        } else {
          st.indeterminate = true
          refusedAcks[`unknown outcome: ${String(line.err).slice(0, 50)}`] = (refusedAcks[`unknown outcome: ${String(line.err).slice(0, 50)}`] ?? 0) + 1
        }
      }
    } else if (line.t === 'error') note(`${c}: ${line.where}: ${line.err}`)
  }

  let cluster: TestCluster | undefined
  let producer: Producer | undefined
  let admin: Admin | undefined
  const drains: ShareConsumer[] = []
  try {
    cluster = await startCluster({
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      overrides: [
        ...BASE_OVERRIDES,
        // Locks, sessions and heartbeats far below Kafka's floors, so a dead member's records come back in seconds.
        'group.share.min.record.lock.duration.ms=1000',
        'group.share.min.session.timeout.ms=1000',
        'group.share.min.heartbeat.interval.ms=100',
        // The share-partition state survives a broker, as Kafka's defaults (3, 2) have it.
        'share.coordinator.state.topic.replication.factor=3',
        'share.coordinator.state.topic.min.isr=2',
        'share.coordinator.state.topic.num.partitions=3',
      ],
    })
    const c = cluster
    const bootstrap = c.brokers.map((b) => b.bootstrap).join(',')
    admin = new Admin({ bootstrapServers: bootstrap })
    await admin.createTopics([{ name: TOPIC, numPartitions: PARTITIONS, replicationFactor: 3, configs: { 'min.insync.replicas': '2' } }])
    await until('every partition led with its full ISR', async () => {
      const ps = await partitionsOf(c.brokers[0]!, TOPIC)
      return ps.length === PARTITIONS && ps.every((p) => p.leader >= 0 && p.isr.length === 3) ? true : undefined
    })
    await admin.alterConfigs({ type: 'group', name: GROUP }, [
      { op: 'set', name: 'share.auto.offset.reset', value: 'earliest' },
      { op: 'set', name: 'share.record.lock.duration.ms', value: String(s.lockMs) },
      { op: 'set', name: 'share.session.timeout.ms', value: String(Math.max(2000, s.lockMs)) },
      { op: 'set', name: 'share.heartbeat.interval.ms', value: '500' },
    ])

    const spawnMember = (name: string): Member => {
      const child = spawn(process.execPath, [SHARE_MEMBER_JS, '--bootstrap', bootstrap, '--group', GROUP, '--topic', TOPIC, '--name', name, '--hold-ms', String(name === 'm0' ? s.victimHoldMs : s.holdMs)], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      const m: Member = { name, child, exited: new Promise((r) => child.once('exit', () => r())), lastLine: '', stderr: '' }
      let partial = ''
      child.stdout!.on('data', (d: Buffer) => {
        const lines = (partial + d.toString()).split('\n')
        partial = lines.pop()!
        for (const l of lines) {
          if (l.trim() === '') continue
          const line = JSON.parse(l) as Record<string, unknown>
          m.lastLine = String(line.t)
          onLine(line)
        }
      })
      child.stderr!.on('data', (d: Buffer) => (m.stderr = (m.stderr + d.toString()).slice(-4000)))
      if (child.pid !== undefined) killWhenOrphaned(child.pid)
      members.push(m)
      return m
    }
    for (let i = 0; i < s.members; i++) spawnMember(`m${i}`)

    // The producer: unique ids, idempotent, acks=all, round-robin over the partitions at s.rate.
    producer = new Producer({ bootstrapServers: bootstrap, acks: -1, enableIdempotence: true, lingerMs: 5, requestTimeoutMs: 8000 })
    const produced = new Set<string>()
    let failedSends = 0
    const p = producer
    const producing = (async () => {
      const perTick = Math.max(1, Math.round(s.rate / 20))
      const sends: Promise<void>[] = []
      for (let n = 0; n < s.records; ) {
        for (let k = 0; k < perTick && n < s.records; k++, n++) {
          const id = `r-${n}`
          sends.push(p.send({ topic: TOPIC, partition: n % PARTITIONS, value: id }).then(() => void produced.add(id), (err: Error) => {
            failedSends++
            note(`send ${id} failed: ${err.message}`)
          }))
        }
        await sleep(50)
      }
      await Promise.all(sends)
    })()
    const ackedCount = (): number => [...byOffset.values()].filter((r) => r.acked.length > 0).length

    // The member SIGKILLed while it holds records (its last line `holding`, not `acking` or an acknowledgement).
    await until('a quarter of the records acknowledged', async () => (ackedCount() >= s.records / 4 ? true : undefined), 120_000, 50)
    const victim = members[0]!
    await until(`${victim.name} to hold records`, async () => (victim.lastLine === 'holding' ? true : undefined), 30_000, 5)
    const held = [...byOffset.values()].filter((r) => r.deliveries.at(-1)?.c === victim.name && r.acked.length === 0).length
    victim.child.kill('SIGKILL')
    await victim.exited
    note(`SIGKILLed member ${victim.name} (pid ${victim.child.pid}) holding ${held} records delivered to it and not acknowledged, at ${ackedCount()} acknowledged`)

    if (s.killBroker) {
      await until('half of the records acknowledged', async () => (ackedCount() >= s.records / 2 ? true : undefined), 120_000, 50)
      const view = await partitionsOf(c.brokers.find((b) => b.alive())!, TOPIC)
      const leaderId = view.find((x) => x.partition === 0)!.leader
      const led = view.filter((x) => x.leader === leaderId).map((x) => x.partition)
      const b = c.broker(leaderId)
      await b.kill()
      note(`SIGKILLed broker ${leaderId}, leader of partitions ${led.join(', ')}, at ${ackedCount()} acknowledged`)
      await sleep(3000)
      await b.start()
      note(`broker ${leaderId} started again at ${ackedCount()} acknowledged`)
    }

    await producing
    note(`produced ${produced.size} of ${s.records} (failed sends ${failedSends}) in ${Math.round((Date.now() - started) / 1000)} s since the start`)
    // Until every produced record is acknowledged or its acknowledgement's outcome is unknown.
    const settled = (): boolean => [...produced].length <= [...byOffset.values()].filter((r) => r.acked.length > 0 || r.indeterminate || (r.deliveries.at(-1)?.c === victim.name && r.acked.length === 0)).length
    await until('every record acknowledged (or its outcome unknown)', async () => (settled() ? true : undefined), 180_000, 200).catch((err: Error) => note(err.message))

    // The members close (releasing what they hold); a fresh member drains the group for longer than a lock.
    for (const m of members) if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGTERM')
    await Promise.race([Promise.all(members.map((m) => m.exited)), sleep(30_000)])
    for (const m of members) if (m.child.exitCode === null && m.child.signalCode === null) {
      note(`${m.name} did not close in 30 s: SIGKILL`)
      m.child.kill('SIGKILL')
    }
    // A record whose last delivery was to the killed member, unacknowledged: its outcome is unknown too
    // (the member may have been acknowledging it when it died).
    for (const r of byOffset.values()) if (r.acked.length === 0 && r.deliveries.at(-1)?.c === victim.name) r.indeterminate = true
    const drain = new ShareConsumer({ bootstrapServers: bootstrap, groupId: GROUP, clientId: 'drain', acknowledgementMode: 'explicit', requestTimeoutMs: 8000 })
    drains.push(drain)
    drain.setAcknowledgementCommitCallback((r) => onLine({ c: 'drain', t: 'ack', p: r.partition, o: r.offsets, ...(r.error === null ? {} : { err: r.error.message, code: (r.error as { code?: number }).code }) }))
    drain.subscribe([TOPIC])
    const drainUntil = Date.now() + s.lockMs * 2 + 2000
    let drained = 0
    while (Date.now() < drainUntil) {
      const got = await drain.poll(500)
      for (const r of got) onLine({ c: 'drain', t: 'got', p: r.partition, o: r.offset, id: r.value?.toString() ?? null, dc: r.deliveryCount })
      for (const r of got) drain.acknowledge(r, AcknowledgeType.ACCEPT)
      drained += got.length
      if (got.length > 0) await drain.commitSync()
    }
    await drain.close()
    note(`the drain got ${drained} records in ${Math.round((s.lockMs * 2 + 2000) / 1000)} s`)

    // Every replica of the topic byte-identical up to its leader's high watermark, as the other scenarios check.
    const replicaDetail: string[] = []
    let replicasIdentical = true
    for (const v of await partitionsOf(c.brokers.find((b) => b.alive())!, TOPIC)) {
      const lc = await c.broker(v.leader).client()
      let hw: number
      try {
        hw = Number((await lc.fetch(TOPIC, v.partition, 0, { maxWaitMs: 0, partitionMaxBytes: 1 })).highWatermark)
      } finally {
        lc.close()
      }
      const compare = (): ReturnType<typeof compareReplicaLogs> => compareReplicaLogs(new Map(v.replicas.map((id) => [id, replicaLog(c.broker(id), TOPIC, v.partition)])), hw)
      const cmp = await until(`replicas of ${TOPIC}-${v.partition} identical up to HW ${hw}`, async () => (compare().identical ? compare() : undefined), 15_000).catch(() => compare())
      replicaDetail.push(`${TOPIC}-${v.partition}: ${cmp.detail}`)
      if (!cmp.identical) replicasIdentical = false
    }

    // The verdict.
    const examples: string[] = []
    const ids = new Map<string, RecordState[]>()
    for (const r of byOffset.values()) ids.set(r.id, [...(ids.get(r.id) ?? []), r])
    let ackedOnce = 0
    let ackedTwice = 0
    let missing = 0
    let neverDelivered = 0
    let indeterminate = 0
    let deliveries = 0
    let redeliveries = 0
    for (const r of byOffset.values()) {
      deliveries += r.deliveries.length
      redeliveries += Math.max(0, r.deliveries.length - 1)
    }
    for (const id of produced) {
      const rs = ids.get(id) ?? []
      if (rs.length > 1) examples.push(`${id} is in the log ${rs.length} times: ${rs.map((r) => [...byOffset].find(([, v]) => v === r)?.[0]).join(', ')}`)
      const acks = rs.reduce((n, r) => n + r.acked.length, 0)
      if (rs.length === 0 || rs.every((r) => r.deliveries.length === 0)) {
        neverDelivered++
        if (examples.length < 10) examples.push(`${id}: never delivered`)
      } else if (acks === 1) ackedOnce++
      else if (acks > 1) {
        ackedTwice++
        if (examples.length < 10) examples.push(`${id}: acknowledged ${acks} times (by ${rs.flatMap((r) => r.acked).join(', ')}; deliveries ${JSON.stringify(rs.flatMap((r) => r.deliveries))})`)
      } else if (rs.some((r) => r.indeterminate)) indeterminate++
      else {
        missing++
        if (examples.length < 10) examples.push(`${id}: delivered ${JSON.stringify(rs.flatMap((r) => r.deliveries))}, never acknowledged`)
      }
    }
    const dcMax = Math.max(0, ...[...byOffset.values()].flatMap((r) => r.deliveries.map((d) => d.dc)))
    note(`deliveries ${deliveries}, redeliveries ${redeliveries} (highest delivery count ${dcMax}); refused or unknown acknowledgements: ${JSON.stringify(refusedAcks)}`)
    const result: ShareResult = {
      name: s.name,
      produced: produced.size,
      failedSends,
      ackedOnce,
      ackedTwice,
      missing,
      neverDelivered,
      indeterminate,
      deliveries,
      redeliveries,
      refusedAcks,
      replicasIdentical,
      replicaDetail,
      durationMs: Date.now() - started,
      notes,
      examples,
      ok: replicasIdentical && produced.size === s.records && ackedTwice === 0 && missing === 0 && neverDelivered === 0 && ackedOnce + indeterminate === produced.size,
    }
    console.log(
      `[faults] ${s.name}: produced ${result.produced}, acknowledged once ${ackedOnce}, twice or more ${ackedTwice}, missing ${missing}, never delivered ${neverDelivered}, ` +
        `indeterminate (kept as accepted) ${indeterminate}, redeliveries ${redeliveries}, replicas identical ${replicasIdentical}, ${Math.round(result.durationMs / 1000)} s` + (examples.length > 0 ? `\n  ${examples.join('\n  ')}` : ''),
    )
    if (!result.ok) for (const m of members) console.log(`[faults] ${m.name} stderr: ${m.stderr.slice(-1500)}`)
    if ((options.save ?? true) && process.env.FAULTS_NO_SAVE === undefined) save(s, result)
    return result
  } finally {
    for (const m of members) if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGKILL')
    for (const d of drains) await d.close().catch(() => {})
    await producer?.close().catch(() => {})
    await admin?.close().catch(() => {})
    await cluster?.stop().catch(() => {})
  }
}

/** Into RESULTS.md with the other scenarios: acked = acknowledged once, duplicates = acknowledged twice, lost = missing. */
function save(s: ShareScenario, r: ShareResult): void {
  const row: ScenarioResult = {
    name: r.name,
    description:
      `share group (KIP-932) of ${s.members} ShareConsumer processes, explicit ACCEPT with commitSync, on a topic of 6 partitions (RF 3, min.insync.replicas 2), ${s.records} records from an idempotent acks=all producer; ` +
      `one member SIGKILLed holding records (share.record.lock.duration.ms=${s.lockMs})${s.killBroker ? ', the leader of partition 0 SIGKILLed and started again' : ''}; ` +
      'every record must be acknowledged exactly once over all members (redeliveries allowed and counted). Every replica of the topic byte-identical up to the high watermark.',
    rounds: 1,
    durationMs: r.durationMs,
    acknowledged: r.ackedOnce,
    polls: r.deliveries,
    lost: r.missing + r.neverDelivered,
    unseen: 0,
    skipped_: 0,
    inconsistent: 0,
    duplicates: r.ackedTwice,
    abortedReads: 0,
    nonMonotonic: 0,
    failedSends: r.failedSends,
    failedButVisible: 0,
    maxGapMs: 0,
    gapsMs: [],
    replicasIdentical: r.replicasIdentical,
    replicaDetail: r.replicaDetail,
    notes: [...r.notes, `acknowledged once ${r.ackedOnce}, indeterminate and kept as accepted ${r.indeterminate}, redeliveries ${r.redeliveries}`],
    examples: r.examples,
    ok: r.ok,
  }
  mkdirSync(RESULTS_DIR, { recursive: true })
  writeFileSync(join(RESULTS_DIR, `${r.name}.json`), JSON.stringify({ ...row, at: new Date().toISOString() }, null, 2))
  writeResultsMarkdown()
}
