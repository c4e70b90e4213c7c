// Profile of the produce path (node dist/bench/broker/profile.js [--records N] [--no-write]): the produce
// workload of bench:broker (6 partitions, acks=1, 100-byte records) with the broker under `node
// --cpu-prof` (the main thread and every shard worker write a profile) and `perf stat -p` on the broker
// when perf is available, driven twice: by `skein perf produce` (itself under --cpu-prof, since a client
// on the same 2 cores competes for them) and by librdkafka (kcat -P). Only samples taken while records
// were being produced count. Writes bench/results/PROFILE.md; the section between the notes markers is written by
// hand after reading the figures and kept when the file is regenerated.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { Admin } from '../../src/client/admin.js'
import { benchDir, REPO_ROOT, SKEIN_JS, startBroker } from './broker-process.js'
import { AREAS, analyseProfile, profilesIn, type ThreadProfile } from './cpu-profile.js'
import { lastJsonLine, machineInfo } from './machine.js'
import { machineMarkdown } from './report.js'
import { hasCommand, run } from './run.js'
import { writeRecordFile } from './peers.js'
import { flag } from '../lib/flags.js'
import { BENCH_RESULTS_DIR } from '../lib/results-dir.js'

const PROFILE_MD = join(BENCH_RESULTS_DIR, 'PROFILE.md')
const NOTES_START = '<!-- notes:start (hand-written, kept on regeneration) -->'
const NOTES_END = '<!-- notes:end -->'

const records = Number(flag('records') ?? 1_000_000)
const write = !process.argv.includes('--no-write')
const PERF_EVENTS = 'task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions'

const nowUs = (): number => Number(process.hrtime.bigint() / 1000n)

interface Scenario {
  name: string
  driver: string
  command: string
  result: string
  threads: ThreadProfile[]
  client: ThreadProfile[]
  perfStat: string
  windowMs: number
}

async function scenario(name: 'skein' | 'librdkafka'): Promise<Scenario> {
  const dir = benchDir(`prof-${name}`)
  const profDir = join(dir, 'profiles')
  const clientProfDir = join(dir, 'client-profiles')
  const dataDir = join(dir, 'data')
  mkdirSync(profDir, { recursive: true })
  mkdirSync(clientProfDir, { recursive: true })
  mkdirSync(dataDir, { recursive: true })
  const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${profDir}`]
  const broker = await startBroker({ dataDir, nodeArgs, overrides: ['auto.create.topics.enable=false', 'log.cleaner.enable=false', 'io.threads=2'] })
  let perf: ReturnType<typeof spawn> | null = null
  let perfOut = ''
  try {
    const admin = new Admin({ bootstrapServers: broker.bootstrap, clientId: 'bench-admin' })
    await admin.createTopics([{ name: 'perf', numPartitions: 6, replicationFactor: 1 }])
    await admin.close()
    const file = join(dir, 'records.txt')
    if (name === 'librdkafka') writeRecordFile(file, records, 100)
    if (await hasCommand('perf', ['--version'])) {
      perf = spawn('perf', ['stat', '-e', PERF_EVENTS, '-p', String(broker.pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
      perf.stderr!.on('data', (d: Buffer) => {
        perfOut += d.toString()
      })
      await new Promise((r) => setTimeout(r, 300))
    }
    const t0 = nowUs()
    let command: string
    let result: string
    if (name === 'skein') {
      const args = ['perf', 'produce', '--bootstrap-server', broker.bootstrap, '--topic', 'perf', '--num-records', String(records), '--record-size', '100', '--throughput', '-1', '--producer-props', 'acks=1', '--json']
      command = `node --cpu-prof dist/src/skein.js ${args.join(' ')}`
      const r = await run(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${clientProfDir}`, SKEIN_JS, ...args], { timeoutMs: 300000 })
      if (r.code !== 0) throw new Error(`skein perf produce exited ${r.code}: ${r.stderr}`)
      const j = JSON.parse(lastJsonLine(r.stdout)) as { recordsPerSec: number; mbPerSec: number }
      result = `${Math.round(j.recordsPerSec).toLocaleString('en-US')} records/s, ${j.mbPerSec.toFixed(1)} MB/s`
    } else {
      const args = ['-P', '-b', broker.bootstrap, '-t', 'perf', '-X', 'acks=1', '-X', 'linger.ms=5', '-X', 'batch.num.messages=100000', '-X', 'queue.buffering.max.messages=2000000', '-X', 'queue.buffering.max.kbytes=2097151']
      command = `kcat ${args.join(' ')} < ${records} lines of 100 bytes`
      const r = await run('kcat', args, { stdinFile: file, timeoutMs: 300000 })
      if (r.code !== 0) throw new Error(`kcat exited ${r.code}: ${r.stderr}`)
      result = `${Math.round(records / (r.ms / 1000)).toLocaleString('en-US')} records/s (wall clock of kcat)`
    }
    const t1 = nowUs()
    if (perf !== null) {
      const exited = new Promise((r) => perf!.once('exit', r))
      perf.kill('SIGINT')
      await exited
    }
    await broker.stop()
    const threads = profilesIn(profDir).map((f) => analyseProfile(f, t0, t1))
    const client = name === 'skein' ? profilesIn(clientProfDir).map((f) => analyseProfile(f, t0, t1)) : []
    if (threads.length === 0) throw new Error(`no broker profile written in ${profDir}`)
    return { name, driver: name === 'skein' ? 'skein perf produce (Skein client)' : 'kcat -P (librdkafka)', command, result, threads, client, perfStat: perfStatText(perfOut), windowMs: (t1 - t0) / 1000 }
  } finally {
    if (perf !== null && perf.exitCode === null) perf.kill('SIGKILL')
    await broker.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

function perfStatText(out: string): string {
  const lines = out.split('\n').filter((l) => /\S/.test(l) && !l.includes('Performance counter stats'))
  return lines.length === 0 ? 'perf not available' : lines.map((l) => l.trimEnd()).join('\n')
}

const pct = (a: number, b: number): string => (b <= 0 ? '-' : `${((a / b) * 100).toFixed(1)}%`)

function threadName(t: ThreadProfile, role: string): string {
  return t.threadId === 0 ? `${role} main thread` : `${role} worker thread ${t.threadId}`
}

function areaTable(threads: ThreadProfile[], role: string): string {
  const head = `| Area | ${threads.map((t) => threadName(t, role)).join(' | ')} |`
  const sep = `| --- | ${threads.map(() => '---:').join(' | ')} |`
  const busy = `| **busy (share of the window)** | ${threads.map((t) => `**${t.busyMs.toFixed(0)} ms (${pct(t.busyMs, t.windowMs)})**`).join(' | ')} |`
  const rows = AREAS.filter((a) => a !== 'idle' && threads.some((t) => (t.byArea.get(a) ?? 0) >= 0.5)).map(
    (a) => `| ${a} | ${threads.map((t) => `${(t.byArea.get(a) ?? 0).toFixed(0)} ms (${pct(t.byArea.get(a) ?? 0, t.busyMs)} of busy)`).join(' | ')} |`,
  )
  return [head, sep, busy, ...rows].join('\n')
}

function topTable(t: ThreadProfile, n: number): string {
  const rows = t.top.slice(0, n).map((f) => `| ${f.ms.toFixed(0)} | ${pct(f.ms, t.busyMs)} | \`${f.name}\` | ${f.where} | ${f.area} | ${f.caller === '' ? '' : `\`${f.caller}\``} |`)
  return ['| Self ms | Of busy | Function | Where | Area | Called from (own code) |', '| ---: | ---: | --- | --- | --- | --- |', ...rows].join('\n')
}

function scenarioMarkdown(s: Scenario): string {
  const parts = [
    `### Driven by ${s.driver}`,
    '',
    `\`${s.command}\` against a fresh broker: **${s.result}**; profile window ${(s.windowMs / 1000).toFixed(2)} s (the produce run only).`,
    '',
    'Self time by area (native functions charged to their JavaScript caller):',
    '',
    areaTable(s.threads, 'broker'),
    '',
  ]
  for (const t of s.threads) {
    if (t.busyMs < 1) continue
    parts.push(`Top self-time functions, ${threadName(t, 'broker')}:`, '', topTable(t, t.threadId === 0 ? 20 : 10), '')
  }
  if (s.client.length > 0) {
    parts.push('The client process (same machine, same 2 cores):', '', areaTable(s.client, 'client'), '')
    for (const t of s.client) if (t.busyMs >= 1) parts.push(`Top self-time functions, ${threadName(t, 'client')}:`, '', topTable(t, 15), '')
  }
  parts.push('`perf stat -p <broker pid>` over the same run:', '', '```', s.perfStat, '```', '')
  return parts.join('\n')
}

const load0 = loadavg()
const scenarios: Scenario[] = []
for (const name of ['skein', 'librdkafka'] as const) {
  if (name === 'librdkafka' && !(await hasCommand('kcat', ['-V']))) continue
  process.stderr.write(`[profile] produce driven by ${name}...\n`)
  scenarios.push(await scenario(name))
}
const load1 = loadavg()
const machine = machineInfo(REPO_ROOT)

let notes = `${NOTES_START}\n(No notes yet: read the tables and write down what they show.)\n${NOTES_END}`
if (existsSync(PROFILE_MD)) {
  const old = readFileSync(PROFILE_MD, 'utf8')
  const a = old.indexOf(NOTES_START)
  const b = old.indexOf(NOTES_END)
  if (a !== -1 && b > a) notes = old.slice(a, b + NOTES_END.length)
}

const md = `# Skein produce path: CPU profile

Generated by \`node dist/bench/broker/profile.js --records ${records}\` (bench/broker/profile.ts, after \`npx tsc -p
tsconfig.json\`) on ${machine.date}; the section "What the profile shows" is written by hand and kept when the
file is regenerated. Load average of the machine (shared with other work) before / after: ${load0.map((l) => l.toFixed(2)).join(' ')} / ${load1.map((l) => l.toFixed(2)).join(' ')}.

${machineMarkdown(machine)}

## Method

- The broker runs as \`node --cpu-prof --cpu-prof-dir=DIR dist/src/main.js --override listeners=... --override
  log.dirs=<fresh temp dir> --override auto.create.topics.enable=false --override log.cleaner.enable=false --override io.threads=2\`
  (two shard workers, set explicitly so the profile shows the cross-thread path; the default is 0; every thread writes its own
  .cpuprofile when the broker stops on SIGTERM). 1 ms sampling.
- Workload: the produce workload of \`npm run bench:broker\`: topic \`perf\` with 6 partitions, ${records.toLocaleString('en-US')} records of
  100 bytes, acks=1; once with \`skein perf produce\` (its process also under \`--cpu-prof\`) and once with
  librdkafka (\`kcat -P\`, linger.ms=5, batch.num.messages=100000).
- Only samples between the start and the end of the producer run count (start-up, module compilation and
  shutdown are excluded). Self time is grouped by area from the function's source file; native functions
  (socket writes, \`postMessage\`, fs writes, the CRC32C addon) are charged to the area of their nearest
  JavaScript caller. "busy" is the window minus \`(idle)\`.
- \`perf stat -e ${PERF_EVENTS} -p <broker pid>\` runs alongside (hardware counters are
  "<not supported>" in this VM).

## What the profile shows

${notes}

## Figures

${scenarios.map(scenarioMarkdown).join('\n')}
`

if (write) {
  writeFileSync(PROFILE_MD, md)
  process.stderr.write(`[profile] wrote ${PROFILE_MD}\n`)
} else process.stdout.write(md)
