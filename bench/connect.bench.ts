// Connect benchmark (npm run bench:connect): two broker child processes (dist/src/main.js) and, in this
// process, what is measured side by side in one run:
// 1. the broker's own produce rate: N records of 100 B produced to topic `mm2-bench` on cluster A by
//    Skein's producer (appendBatched, acks=all), for scale;
// 2. MirrorMaker 2: the same N records mirrored A -> B (`A.mm2-bench`) by startMirrorMaker, as
//    `skein mirror-maker` runs it (MirrorSourceConnector, ByteArrayConverter): records/s from the first
//    record seen on B to the last (and the total with start-up);
// 3. the PostgreSQL sink: M JSON-with-schema records upserted (insert.mode=upsert, pk id, batch.size
//    3000) by a standalone worker into a real PostgreSQL (initdb in a temp dir, fsync off), rows/s until
//    the table holds them all; beside it PostgreSQL's own rate for the same rows, by pg from this process
//    with the rows already encoded: the sink's own write path (per 3000 rows one query string: BEGIN, the
//    guard's counter, COPY into a temporary staging table, INSERT ... SELECT ... ON CONFLICT DO UPDATE
//    from it, COMMIT; one at a time, not pipelined: PostgreSQL alone never waits for a client), so that
//    sink / that rate is the fair ratio; and for scale COPY FROM a CSV file and batched INSERT ... ON
//    CONFLICT DO UPDATE (unnest arrays, 3000 rows a statement). The worker's CPU time per row (user +
//    system of this process from the first row in the table to the last, over the rows written then) is
//    printed too, and PostgreSQL's own CPU over that span from /proc (its busiest process is the sink's
//    connection: near 100 % of a core means the sink is limited by PostgreSQL). The scheduler's view
//    (/proc schedstat) splits the span of the sink's connection and of the worker's main thread into on a
//    CPU, runnable but waiting for one (the two share 2 cores with the broker), and asleep; samples of
//    pg_stat_activity say what the connection was doing: running, waiting on its own I/O, or waiting for
//    the sink. The sink's statements are timed on their own before the sink runs and again after it, each
//    write (those two, the sink, COPY, INSERT) into a fresh table after the last one was dropped and a
//    CHECKPOINT.
// Sizes: --mm2-records N (default 2000000), --pg-records M (default 200000), --partitions P (default 6),
// --tasks T (MirrorSourceConnector tasks.max, default 1); or BENCH_MM2_RECORDS, BENCH_PG_RECORDS,
// BENCH_PARTITIONS, BENCH_TASKS; --mm2-property K=V adds an mm2.properties setting. --skip-pg leaves out
// part 3 (it is skipped anyway without PostgreSQL), --skip-mm2 parts 1 and 2.
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks'
import { Admin, type BatchDelivery, LATEST_TIMESTAMP, listOffsets, Producer, tpKey } from '../src/client/index.js'
import { copyFrom } from '../src/connect/connectors/postgres/copy.js'
import { startConnect } from '../src/connect/runtime/connect.js'
import { MirrorMakerConfig, startMirrorMaker } from '../src/connect/mirror-maker.js'
import { silentLogger } from '../src/observability/logger.js'
import { PostgresServer, postgresMissing } from '../test/harness/postgres.js'
import { benchDir, processCpuMicros, startBroker, type RunningBroker } from './broker/broker-process.js'

function arg(name: string, env: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`)
  const v = i >= 0 ? process.argv[i + 1] : process.env[env]
  const n = Number(v ?? dflt)
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, not ${v}`)
  return n
}

const MM2_RECORDS = arg('mm2-records', 'BENCH_MM2_RECORDS', 2_000_000)
const PG_RECORDS = arg('pg-records', 'BENCH_PG_RECORDS', 200_000)
const PARTITIONS = arg('partitions', 'BENCH_PARTITIONS', 6)
const TASKS = arg('tasks', 'BENCH_TASKS', 1)
const SKIP_PG = process.argv.includes('--skip-pg')
const SKIP_MM2 = process.argv.includes('--skip-mm2')
/** --mm2-property K=V (repeatable): extra mm2.properties settings, e.g. A.consumer.max.poll.records=2000. */
const EXTRA_MM2: Record<string, string> = Object.fromEntries(process.argv.flatMap((a, i) => (a === '--mm2-property' && process.argv[i + 1] !== undefined ? [process.argv[i + 1]!.split(/=(.*)/s).slice(0, 2)] : [])))

// The connectors log at info; a benchmark shows only warnings.
process.env['SKEIN_LOG_LEVEL'] ??= 'warn'

const fmt = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a (too few records to time)')
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function endOffsets(bootstrap: string, topic: string, partitions: number): Promise<number> {
  const admin = new Admin({ bootstrapServers: bootstrap })
  try {
    const q = Array.from({ length: partitions }, (_v, partition) => ({ topic, partition, timestamp: LATEST_TIMESTAMP }))
    const ends = await listOffsets(admin.cluster, q)
    return q.reduce((sum, x) => sum + (ends.get(tpKey(x.topic, x.partition))?.offset ?? 0), 0)
  } catch {
    return 0
  } finally {
    await admin.close()
  }
}

/** Produces n records of 100 B round robin over the partitions; records/s. */
async function produce(bootstrap: string, topic: string, n: number, value: (i: number) => Buffer, key: (i: number) => Buffer | null = () => null): Promise<number> {
  const producer = new Producer({ bootstrapServers: bootstrap, acks: -1, lingerMs: 5, batchSize: 65536 })
  await producer.topicInfo(topic)
  let acked = 0
  let failed: Error | null = null
  const cb = (err: Error | null, d: BatchDelivery): void => {
    if (err !== null) failed ??= err
    else acked += d.to - d.from
  }
  const start = performance.now()
  for (let i = 0; i < n; i++) {
    producer.appendBatched(topic, undefined, key(i), value(i), undefined, cb)
    if (!producer.hasCapacity) await producer.waitForCapacity()
  }
  await producer.flush()
  const seconds = (performance.now() - start) / 1000
  await producer.close()
  if (failed !== null || acked !== n) throw new Error(`produce: ${acked} of ${n} acknowledged (${failed})`)
  return n / seconds
}

async function benchMirrorMaker(a: RunningBroker, b: RunningBroker): Promise<void> {
  const topic = 'mm2-bench'
  const admin = new Admin({ bootstrapServers: a.bootstrap })
  await admin.createTopics([{ name: topic, numPartitions: PARTITIONS, replicationFactor: 1 }])
  await admin.close()
  const payload = Buffer.alloc(100, 120)
  const produceRate = await produce(a.bootstrap, topic, MM2_RECORDS, () => payload)
  console.log(`produce to A (Skein producer, 100 B, acks=all, ${PARTITIONS} partitions): ${fmt(produceRate)} records/s`)

  const config = new MirrorMakerConfig({
    clusters: 'A, B',
    'A.bootstrap.servers': a.bootstrap,
    'B.bootstrap.servers': b.bootstrap,
    'A->B.enabled': 'true',
    'A->B.topics': topic,
    'B->A.emit.heartbeats.enabled': 'false',
    'emit.checkpoints.enabled': 'false',
    'tasks.max': String(TASKS),
    'replication.factor': '1',
    'checkpoints.topic.replication.factor': '1',
    'heartbeats.topic.replication.factor': '1',
    'offset-syncs.topic.replication.factor': '1',
    'config.storage.replication.factor': '1',
    'offset.storage.replication.factor': '1',
    'status.storage.replication.factor': '1',
    'offset.flush.interval.ms': '5000',
    ...EXTRA_MM2,
  })
  const started = performance.now()
  const mm = await startMirrorMaker(config, silentLogger())
  try {
    const remote = `A.${topic}`
    let firstSeen = 0
    let done = 0
    for (;;) {
      const n = await endOffsets(b.bootstrap, remote, PARTITIONS)
      if (n > 0 && firstSeen === 0) firstSeen = performance.now()
      if (n >= MM2_RECORDS) {
        done = performance.now()
        break
      }
      if (performance.now() - started > 600_000) throw new Error(`MirrorMaker copied ${n} of ${MM2_RECORDS} records in 10 minutes`)
      await sleep(firstSeen === 0 ? 200 : 50)
    }
    const rate = done - firstSeen >= 250 ? MM2_RECORDS / ((done - firstSeen) / 1000) : NaN
    console.log(`MirrorMaker 2 A -> B (MirrorSourceConnector, tasks.max=${TASKS}): ${fmt(rate)} records/s (${(rate / produceRate * 100).toFixed(0)}% of the produce rate; ${((done - started) / 1000).toFixed(1)} s with start-up) — target 300,000`)
  } finally {
    await mm.stop()
  }
}

/** CPU time (ms) of each process of a PostgreSQL server, by pid: the postmaster and its children, from /proc. */
function postgresCpuMs(postmasterPid: number): Map<number, number> {
  const out = new Map<number, number>()
  let pids: string[] = []
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n))
  } catch {
    return out
  }
  for (const pid of pids) {
    try {
      // /proc/PID/stat: "pid (comm) state ppid ..."; utime and stime are the 14th and 15th fields, in clock ticks.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const ppid = Number(fields[1])
      if (Number(pid) !== postmasterPid && ppid !== postmasterPid) continue
      out.set(Number(pid), ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS)
    } catch {
      // the process ended meanwhile
    }
  }
  return out
}
/** USER_HZ: 100 on Linux for every architecture Node runs on here. */
const CLOCK_TICKS = 100

/**
 * A thread's time on a CPU and time runnable but waiting for one (ns), from /proc/<pid>/task/<tid>/schedstat
 * (the scheduler's own accounting): together the time it wanted to run. Zeros when it is not readable.
 */
function schedNs(pid: number, tid = pid): { onCpu: number; waiting: number } {
  try {
    const [onCpu, waiting] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number)
    return { onCpu: onCpu ?? 0, waiting: waiting ?? 0 }
  } catch {
    return { onCpu: 0, waiting: 0 }
  }
}

/**
 * Drops a measured table and checkpoints: each measured write (PostgreSQL alone, the sink) starts on the
 * same database, without the tables and dirty buffers of the one before. (Left behind, the 128 MB of
 * shared_buffers filled with the earlier tables, and each later write ran slower than the one before it:
 * the sink was judged against a faster PostgreSQL before it and a slower one after.)
 */
async function cleanSlate(pg: PostgresServer, table: string): Promise<void> {
  await pg.query(`DROP TABLE IF EXISTS "${table}"`)
  await pg.query('CHECKPOINT')
}

/** PostgreSQL running the sink's own statements on pre-encoded rows (one query string per 3000 rows), rows/s. */
async function postgresMergeRate(pg: PostgresServer, table: string, rows: number, name: (i: number) => string): Promise<number> {
  await pg.query(`CREATE TABLE ${table} (id integer PRIMARY KEY, name text, score bigint)`)
  const chunks: Buffer[] = []
  for (let from = 0; from < rows; from += 3000) {
    let text = ''
    for (let i = from; i < Math.min(rows, from + 3000); i++) text += `${i}\t${name(i)}\t${i * 10}\n`
    chunks.push(Buffer.from(text))
  }
  const merger = await pg.client()
  try {
    await merger.query(`CREATE TEMP TABLE stage ON COMMIT DELETE ROWS AS SELECT id, name, score FROM ${table} WITH NO DATA`)
    // The sink's guard too: each write moves a counter of the session from its number - 1 to its number.
    await merger.query('CREATE TEMP TABLE writes (n bigint CHECK (n IS NOT NULL)); INSERT INTO writes VALUES (0)')
    const merge = `INSERT INTO ${table} (id, name, score) SELECT id, name, score FROM pg_temp.stage ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, score = EXCLUDED.score`
    const t = performance.now()
    let n = 0
    for (const chunk of chunks) {
      n++
      await copyFrom(merger, `BEGIN; UPDATE pg_temp.writes SET n = CASE WHEN n = ${n - 1} THEN ${n} END; COPY pg_temp.stage FROM STDIN; ${merge}; COMMIT`, chunk)
    }
    return rows / ((performance.now() - t) / 1000)
  } finally {
    await merger.end()
  }
}

async function benchPostgres(broker: RunningBroker): Promise<void> {
  const why = postgresMissing()
  if (why !== undefined) {
    console.log(`PostgreSQL sink: skipped (${why})`)
    return
  }
  const pg = await PostgresServer.start({ settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' } })
  const dir = benchDir('connect-pg')
  try {
    const topic = 'pg_bench'
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([{ name: topic, numPartitions: 1, replicationFactor: 1 }])
    await admin.close()
    const schema = { type: 'struct', optional: false, fields: [{ type: 'int32', optional: false, field: 'id' }, { type: 'string', optional: true, field: 'name' }, { type: 'int64', optional: true, field: 'score' }] }
    const name = (i: number): string => `name-${i}-${'x'.repeat(40)}`
    await produce(broker.bootstrap, topic, PG_RECORDS, (i) => Buffer.from(JSON.stringify({ schema, payload: { id: i, name: name(i), score: i * 10 } })))
    // PostgreSQL's own rate for the sink's statements is taken before the sink runs and again after, each
    // on a clean slate as the sink is: the sink is judged against both.
    const mergeRateBefore = await postgresMergeRate(pg, 'merge_before', PG_RECORDS, name)
    await cleanSlate(pg, 'merge_before')
    const started = performance.now()
    // The worker runs in this process: its CPU per row is a figure a busy shared machine disturbs less
    // than rows/s. Counted from the first row seen in the table (start-up left out).
    let cpuStart = process.cpuUsage()
    // Garbage collection pauses of this process over the same span (part of the CPU above).
    let gcMs = 0
    // Of which scavenges of the young generation (objects that die young) and full mark-compacts (what survived them).
    let minorGcMs = 0
    let scavenges = 0
    let majorGcMs = 0
    let counting = false
    const gcObserver = new PerformanceObserver((list) => {
      if (!counting) return
      for (const e of list.getEntries()) {
        gcMs += e.duration
        const kind = (e as { detail?: { kind?: number } }).detail?.kind
        if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) {
          minorGcMs += e.duration
          scavenges++
        }
        else if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) majorGcMs += e.duration
      }
    })
    gcObserver.observe({ entryTypes: ['gc'] })
    let rowsAtFirst = 0
    let cpu = { user: 0, system: 0 }
    // PostgreSQL's processes' CPU over the same span: how busy the sink kept the server (its connection's
    // backend runs on one core at most).
    let pgCpuStart = new Map<number, number>()
    let pgCpuEnd = new Map<number, number>()
    // The scheduler's view over the same span: how much of it the sink's connection (PostgreSQL's busiest
    // process) and this process's main thread (the worker) ran, and how much they were runnable but
    // waiting for a CPU; and the broker's CPU (its fetches for the sink). The rest of the span a thread
    // slept: the connection waiting for the sink's next write, the worker for PostgreSQL or the broker.
    let schedStart = new Map<string, { onCpu: number; waiting: number }>()
    let brokerCpuStart = 0
    let brokerCpu = 0
    const connect = await startConnect({
      mode: 'standalone',
      log: silentLogger(),
      props: {
        'bootstrap.servers': broker.bootstrap,
        'offset.storage.file.filename': join(dir, 'offsets'),
        'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
        'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
        listeners: 'http://127.0.0.1:0',
        'consumer.max.poll.records': '3000',
      },
      connectors: [{
        name: 'pg-sink-bench',
        'connector.class': 'PostgresSinkConnector',
        topics: topic,
        'connection.url': pg.jdbcUrl,
        'connection.user': pg.user,
        'insert.mode': 'upsert',
        'pk.mode': 'record_value',
        'pk.fields': 'id',
        'auto.create': 'true',
        'batch.size': '3000',
      }],
    })
    let firstRow = 0
    let done = 0
    // The sink's connection as pg_stat_activity shows it, sampled with the watcher's queries (about every
    // 20 ms; a sample waits for this process's event loop, so it leans towards moments the worker is idle):
    // running (active, no wait event), waiting on PostgreSQL's own I/O or locks (active with a wait event
    // such as IO:DataFileTruncate, the staging table emptied at COMMIT), idle between writes (waiting for
    // the sink's next statement), or inside a COPY waiting for its data.
    const connectionSamples = { running: 0, ownWait: 0, idle: 0, copyData: 0, other: 0 }
    const ownWaits = new Map<string, number>()
    // One connection watches, with cheap queries (a count(*) every 100 ms on a fresh connection cost the
    // worker's process and PostgreSQL time of their own): the row count until the first row, then whether
    // the last record's row (id M-1: one partition, one task, puts in order) is there, then the count once.
    const watcher = await pg.client()
    const count = async (): Promise<number> => Number((await watcher.query<{ n: string }>(`SELECT count(*) AS n FROM "${topic}"`).catch(() => ({ rows: [{ n: '0' }] }))).rows[0]!.n)
    try {
      for (;;) {
        let n = 0
        if (firstRow === 0) n = await count()
        else {
          const last = await watcher.query(`SELECT 1 FROM "${topic}" WHERE id = $1`, [PG_RECORDS - 1])
          if (last.rowCount === 1) n = await count()
        }
        if (n > 0 && firstRow === 0) {
          firstRow = performance.now()
          cpuStart = process.cpuUsage()
          pgCpuStart = postgresCpuMs(pg.pid ?? -1)
          schedStart = new Map([...pgCpuStart.keys()].map((pid) => [String(pid), schedNs(pid)]))
          schedStart.set('worker', schedNs(process.pid))
          brokerCpuStart = processCpuMicros(broker.pid)
          counting = true
          rowsAtFirst = n
        }
        if (firstRow !== 0) {
          // What the sink's connection (the only other client backend) is doing right now.
          const w = await watcher.query<{ state: string; type: string | null; event: string | null }>(`SELECT state, wait_event_type AS type, wait_event AS event FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`)
          for (const row of w.rows) {
            const what = row.type === 'Client' ? (row.state === 'idle' ? 'idle' : 'copyData') : row.state !== 'active' ? 'other' : row.type === null ? 'running' : 'ownWait'
            connectionSamples[what]++
            if (what === 'ownWait') ownWaits.set(`${row.type}:${row.event}`, (ownWaits.get(`${row.type}:${row.event}`) ?? 0) + 1)
          }
        }
        if (n >= PG_RECORDS) {
          done = performance.now()
          cpu = process.cpuUsage(cpuStart)
          pgCpuEnd = postgresCpuMs(pg.pid ?? -1)
          brokerCpu = processCpuMicros(broker.pid) - brokerCpuStart
          for (const [k, v] of schedStart) {
            const end = schedNs(k === 'worker' ? process.pid : Number(k))
            schedStart.set(k, { onCpu: end.onCpu - v.onCpu, waiting: end.waiting - v.waiting })
          }
          counting = false
          break
        }
        if (performance.now() - started > 600_000) throw new Error(`the sink wrote ${await count()} of ${PG_RECORDS} rows in 10 minutes`)
        await sleep(firstRow === 0 ? 100 : 20)
      }
    } finally {
      await watcher.end()
      await connect.stop()
    }
    gcObserver.disconnect()
    const cpuPerRow = (cpu.user + cpu.system) / Math.max(1, PG_RECORDS - rowsAtFirst)
    const gcPerRow = (gcMs * 1000) / Math.max(1, PG_RECORDS - rowsAtFirst)
    const minorGcPerRow = (minorGcMs * 1000) / Math.max(1, PG_RECORDS - rowsAtFirst)
    const majorGcPerRow = (majorGcMs * 1000) / Math.max(1, PG_RECORDS - rowsAtFirst)
    // The last row is looked for every 20 ms: a span shorter than that many times over is not a rate.
    const sinkRate = done - firstRow >= 500 ? PG_RECORDS / ((done - firstRow) / 1000) : NaN
    const withStartup = PG_RECORDS / ((done - started) / 1000)

    await cleanSlate(pg, topic)

    // PostgreSQL's own rates for the same rows.
    await pg.query('CREATE TABLE copy_bench (id integer PRIMARY KEY, name text, score bigint)')
    const csv = join(dir, 'rows.csv')
    writeFileSync(csv, Array.from({ length: PG_RECORDS }, (_v, i) => `${i},${name(i)},${i * 10}`).join('\n') + '\n')
    chmodSync(dir, 0o755)
    chmodSync(csv, 0o644)
    let t = performance.now()
    await pg.query(`COPY copy_bench FROM '${csv}' WITH (FORMAT csv)`)
    const copyRate = PG_RECORDS / ((performance.now() - t) / 1000)
    await cleanSlate(pg, 'copy_bench')
    await pg.query('CREATE TABLE upsert_bench (id integer PRIMARY KEY, name text, score bigint)')
    const client = await pg.client()
    try {
      t = performance.now()
      for (let from = 0; from < PG_RECORDS; from += 3000) {
        const ids: number[] = []
        const names: string[] = []
        const scores: number[] = []
        for (let i = from; i < Math.min(PG_RECORDS, from + 3000); i++) {
          ids.push(i)
          names.push(name(i))
          scores.push(i * 10)
        }
        await client.query('INSERT INTO upsert_bench (id, name, score) SELECT * FROM unnest($1::int[], $2::text[], $3::bigint[]) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, score = EXCLUDED.score', [ids, names, scores])
      }
    } finally {
      await client.end()
    }
    const upsertRate = PG_RECORDS / ((performance.now() - t) / 1000)
    await cleanSlate(pg, 'upsert_bench')

    // The sink's own statements again, with the rows encoded beforehand (COPY text, as the sink sends them).
    const mergeRateAfter = await postgresMergeRate(pg, 'merge_after', PG_RECORDS, name)
    const spanMs = done - firstRow
    const pgBusyByPid = [...pgCpuEnd].map(([pid, ms]) => ({ pid, ms: ms - (pgCpuStart.get(pid) ?? 0) }))
    const busiest = pgBusyByPid.reduce((best, x) => (x.ms > best.ms ? x : best), { pid: -1, ms: 0 })
    const pgAllCores = pgBusyByPid.reduce((a, x) => a + x.ms, 0) / spanMs
    const pgBusiest = busiest.ms / spanMs
    const share = (ns: number): string => `${((ns / 1e6 / spanMs) * 100).toFixed(0)} %`
    const conn = schedStart.get(String(busiest.pid)) ?? { onCpu: 0, waiting: 0 }
    const worker = schedStart.get('worker') ?? { onCpu: 0, waiting: 0 }
    console.log(`PostgreSQL sink (upsert, batch.size 3000, JSON with schemas): ${fmt(sinkRate)} rows/s from the first row (${fmt(withStartup)} with the worker's start-up; worker CPU ${cpuPerRow.toFixed(1)} µs/row, of which GC ${gcPerRow.toFixed(1)}: ${scavenges} scavenges ${minorGcPerRow.toFixed(1)}, mark-compacts ${majorGcPerRow.toFixed(1)})`)
    console.log(`PostgreSQL during the sink: its busiest process (the sink's connection) used ${(pgBusiest * 100).toFixed(0)} % of a core, all its processes ${pgAllCores.toFixed(2)} cores (a connection's statements run on one core)`)
    console.log(`Scheduler over that span (/proc schedstat): the sink's connection on a CPU ${share(conn.onCpu)}, runnable and waiting for a CPU ${share(conn.waiting)}, asleep ${share(spanMs * 1e6 - conn.onCpu - conn.waiting)}; the worker's main thread on a CPU ${share(worker.onCpu)}, waiting for a CPU ${share(worker.waiting)}, asleep ${share(spanMs * 1e6 - worker.onCpu - worker.waiting)}; the broker ${(brokerCpu / 1000 / spanMs).toFixed(2)} cores`)
    const samples = Object.values(connectionSamples).reduce((a, b) => a + b, 0)
    const pct = (n: number): string => `${((n / Math.max(1, samples)) * 100).toFixed(0)} %`
    const topWaits = [...ownWaits].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, n]) => `${k} ${pct(n)}`).join(', ')
    console.log(`The sink's connection in pg_stat_activity (${samples} samples): running ${pct(connectionSamples.running)}, waiting on PostgreSQL's own I/O and locks ${pct(connectionSamples.ownWait)}${topWaits === '' ? '' : ` (${topWaits})`}, waiting for the sink ${pct(connectionSamples.idle + connectionSamples.copyData)} (idle between writes ${pct(connectionSamples.idle)}, for a COPY's data ${pct(connectionSamples.copyData)})`)
    console.log(`PostgreSQL itself, same rows: the sink's statements (COPY into a staging table + INSERT ... SELECT ... ON CONFLICT, 3000 rows a transaction) ${fmt(mergeRateBefore)} rows/s before the sink and ${fmt(mergeRateAfter)} after — sink / those: ${(sinkRate / mergeRateBefore).toFixed(2)} / ${(sinkRate / mergeRateAfter).toFixed(2)}; COPY ${fmt(copyRate)} rows/s; batched INSERT ... ON CONFLICT (unnest) ${fmt(upsertRate)} rows/s — sink / that: ${(sinkRate / upsertRate).toFixed(2)}`)
  } finally {
    await pg.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  const dirs = [benchDir('connect-a'), benchDir('connect-b')]
  const [a, b] = await Promise.all(dirs.map((dataDir) => startBroker({ dataDir, overrides: ['auto.create.topics.enable=false'] })))
  try {
    console.log(`Connect benchmark: MirrorMaker 2 ${fmt(MM2_RECORDS)} records, PostgreSQL sink ${fmt(PG_RECORDS)} rows`)
    if (!SKIP_MM2) await benchMirrorMaker(a!, b!)
    if (!SKIP_PG) await benchPostgres(a!)
  } finally {
    await Promise.all([a!.stop(), b!.stop()])
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err)
  process.exit(1)
})
