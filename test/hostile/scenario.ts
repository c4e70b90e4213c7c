// One hostile-neighbour run: a broker child process, the good pair at a steady rate (baseline window), then
// the attacker process (attacker.ts) while the broker's RSS is sampled, then the good pair drained and
// checked. Returns the measured figures; the smoke test and the full suite assert on them.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { freePort, REPO_ROOT, startBrokerProcess, type BrokerProcess } from '../harness/broker.js'
import { RawClient } from '../harness/raw-client.js'
import type { AttackPlan, AttackSummary } from './attacker.js'
import { GoodPair, percentile, type LatencyWindow } from './good-pair.js'

export interface HostileRun {
  baseline: { produceP99: number; endToEndP99: number; samples: number }
  attack: { produceP99: number; endToEndP99: number; samples: number }
  /** The broker's resident set before the attack and at its peak during it, in MiB. */
  rssBeforeMiB: number
  rssPeakMiB: number
  brokerAlive: boolean
  /** The REST Proxy and the registry still answered 200 after the attack. */
  httpAliveAfter: boolean
  produced: number
  consumed: number
  faults: string[]
  summary: AttackSummary | undefined
  attackerExit: number | string | null
  attackerOutput: string
  brokerOutputTail: string
}

const ATTACKER_JS = join(REPO_ROOT, 'dist', 'test', 'hostile', 'attacker.js')

/** Whether url answers 200 within a few seconds. */
async function httpAnswers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(5_000) })).status === 200
  } catch {
    return false
  }
}

/** Waits (bounded) until url answers 200: the embedded services start after the broker's ready line. */
async function waitForHttp(url: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!(await httpAnswers(url))) {
    if (Date.now() > deadline) throw new Error(`${url} did not answer within 30 s`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

function figures(w: LatencyWindow): { produceP99: number; endToEndP99: number; samples: number } {
  const round = (x: number): number => Math.round(x * 10) / 10
  return { produceP99: round(percentile(w.produceMs, 99)), endToEndP99: round(percentile(w.endToEndMs, 99)), samples: w.produceMs.length }
}

export async function runHostile(plan: AttackPlan, opts: { baselineMs: number; attackTimeoutMs: number }): Promise<HostileRun> {
  // The broker runs its REST Proxy and Schema Registry too: the attacker's HTTP half (http-attack.ts) aims at them.
  const [restPort, registryPort] = [await freePort(), await freePort()]
  const restBase = `http://127.0.0.1:${restPort}`
  const registryBase = `http://127.0.0.1:${registryPort}`
  const broker: BrokerProcess = await startBrokerProcess({ readyTimeoutMs: 30_000, overrides: [`rest.listeners=${restBase}`, `schema.registry.listeners=${registryBase}`] })
  try {
    const admin = await RawClient.connect(broker.host, broker.port)
    const created = await admin.createTopic('good', 1)
    admin.close()
    if (created.errorCode !== 0) throw new Error(`creating the good topic failed: error ${created.errorCode}`)

    const pair = new GoodPair(broker.bootstrap, 'good')
    pair.start()
    await new Promise((r) => setTimeout(r, 1_500))
    pair.takeWindow() // warm-up: connections, metadata, first fetch
    await new Promise((r) => setTimeout(r, opts.baselineMs))
    const baseline = pair.takeWindow()
    const rssBeforeMiB = Math.round(broker.rssKiB() / 1024)

    let rssPeakKiB = broker.rssKiB()
    const sampler = setInterval(() => {
      if (broker.alive()) rssPeakKiB = Math.max(rssPeakKiB, broker.rssKiB())
    }, 100)
    await waitForHttp(`${restBase}/v3/clusters`)
    await waitForHttp(`${registryBase}/subjects`)
    const attacker = spawn(process.execPath, [ATTACKER_JS, broker.host, String(broker.port), plan, 'good', restBase, registryBase], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let attackerOutput = ''
    attacker.stdout.on('data', (d: Buffer) => (attackerOutput += d.toString()))
    attacker.stderr.on('data', (d: Buffer) => (attackerOutput += d.toString()))
    const attackerExit = await new Promise<number | string | null>((resolve) => {
      const timer = setTimeout(() => {
        attacker.kill('SIGKILL')
        resolve('timeout')
      }, opts.attackTimeoutMs)
      attacker.on('exit', (code, signal) => {
        clearTimeout(timer)
        resolve(code ?? signal)
      })
    })
    clearInterval(sampler)
    const attack = pair.takeWindow()
    const brokerAlive = broker.alive()
    const httpAliveAfter = brokerAlive && (await httpAnswers(`${restBase}/v3/clusters`)) && (await httpAnswers(`${registryBase}/subjects`))
    const { produced, consumed } = await pair.stop()
    const m = /HOSTILE-SUMMARY (\{.*\})/.exec(attackerOutput)
    return {
      baseline: figures(baseline),
      attack: figures(attack),
      rssBeforeMiB,
      rssPeakMiB: Math.round(rssPeakKiB / 1024),
      brokerAlive,
      httpAliveAfter,
      produced,
      consumed,
      faults: pair.faults,
      summary: m === null ? undefined : (JSON.parse(m[1]!) as AttackSummary),
      attackerExit,
      // Its first lines name the first silent requests (what stalled first), its last where it ended.
      attackerOutput: attackerOutput.length <= 8000 ? attackerOutput : `${attackerOutput.slice(0, 4000)}\n[...]\n${attackerOutput.slice(-4000)}`,
      brokerOutputTail: broker.output().slice(-4000),
    }
  } finally {
    await broker.kill('SIGTERM').catch(() => broker.kill('SIGKILL'))
  }
}

/** The figures as the suite prints them. */
export function report(r: HostileRun): string {
  const s = r.summary
  return [
    `baseline: produce p99 ${r.baseline.produceP99} ms, end-to-end p99 ${r.baseline.endToEndP99} ms (${r.baseline.samples} sends)`,
    `attack:   produce p99 ${r.attack.produceP99} ms, end-to-end p99 ${r.attack.endToEndP99} ms (${r.attack.samples} sends)`,
    `broker RSS: ${r.rssBeforeMiB} MiB before, ${r.rssPeakMiB} MiB peak; alive ${r.brokerAlive}`,
    `good pair: produced ${r.produced}, consumed ${r.consumed}, faults ${r.faults.length}${r.faults.length > 0 ? `: ${r.faults.slice(0, 5).join('; ')}` : ''}`,
    s === undefined
      ? `attacker exit ${r.attackerExit}: ${r.attackerOutput}`
      : `attacker (${s.plan}, ${s.apis} APIs, ${s.seconds} s): answered ${s.answered}, closed ${s.closed}, silent ${s.silent}, unencodable ${s.unencodable}${s.specsMissing ? ', SPECS MISSING' : ''}`,
    ...(s !== undefined && s.silentNames.length > 0 ? [`silent: ${s.silentNames.join('; ')}`] : []),
    ...(s?.http === undefined
      ? []
      : [
          `http (${s.http.requests} requests): answered ${Object.entries(s.http.statuses).map(([k, v]) => `${k}×${v}`).join(' ')}, closed ${s.http.closed}; REST and registry alive after: ${r.httpAliveAfter}${s.http.failures.length > 0 ? `; FAILURES: ${s.http.failures.join('; ')}` : ''}`,
        ]),
  ].join('\n')
}
