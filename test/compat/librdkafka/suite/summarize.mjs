// Reads the logs of a run-suite.sh run (OUT_DIR/logs/NNNN-SCENARIO.log, one test-runner run per test
// number and scenario) and writes OUT_DIR/results.tsv: test name, scenario, state, seconds, reason.
//
// States: PASSED, FAILED (with the runner's first failure message), TIMEOUT (the test or the whole
// run hit its timeout), SKIPPED (the suite skipped it, with its reason), NOT RUN (an earlier test of the
// same number hung, so the runner never started it). Rows the suite leaves out on purpose are dropped:
// another scenario's tests (SKIPPED without a reason) and local tests (-L, "negative test flags").
//
// The runner prints a summary table at its end, "| name | STATE | 1.234s | reason"; a run that
// aborts (a failed test leaves librdkafka threads behind, and the runner asserts on them) has none,
// so each test's state is then read from its "Running test" and "Test ... PASSED" lines.
//
//   node summarize.mjs OUT_DIR
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const out = process.argv[2]
const logs = readdirSync(join(out, 'logs')).filter((f) => /^\d{4}-.+\.log$/.test(f)).sort()
const rows = []

for (const file of logs) {
  const scenario = file.slice(5, -4)
  const text = readFileSync(join(out, 'logs', file), 'utf8').replace(/\x1b\[[0-9;]*m/g, '')
  const lines = text.split('\n')
  const timedOut = lines.some((l) => l.startsWith('TIMEOUT after'))
  const failure = (name) => {
    const at = lines.findIndex((l) => l.startsWith(`### Test "${name}`))
    if (at < 0) return ''
    return (lines[at + 1] ?? '').trim().slice(0, 300)
  }
  const table = lines
    .map((l) => /^\| (\d{4}_\S+)\s*\|\s*([A-Z]+)\s*\|\s*([0-9.]+)s\s*\|\s*(.*)$/.exec(l))
    .filter((m) => m !== null)
  if (table.length > 0) {
    for (const [, name, state, secs, reason] of table) {
      // An interrupted runner lists every test it knows; only this run's number counts.
      if (!name.startsWith(file.slice(0, 4))) continue
      if (state === 'SKIPPED' && (reason.trim() === '' || reason.includes('negative test flags'))) continue
      if (state === 'DNS') {
        rows.push([name, scenario, 'NOT RUN', secs, 'an earlier test of this number did not finish'])
        continue
      }
      const why = state === 'FAILED' ? failure(name) : reason.trim()
      rows.push([name, scenario, state === 'FAILED' && /timed out/.test(why) ? 'TIMEOUT' : state, secs, why])
    }
    continue
  }
  // No summary table: the runner aborted or was killed.
  const started = [...text.matchAll(/=+ Running test (\S+) =+/g)].map((m) => m[1])
  for (const name of new Set(started)) {
    if (text.includes(`Test ${name} PASSED`)) rows.push([name, scenario, 'PASSED', '', ''])
    else {
      const why = failure(name)
      const state = why === '' && timedOut ? 'TIMEOUT' : /timed out/.test(why) ? 'TIMEOUT' : 'FAILED'
      rows.push([name, scenario, state, '', why || (timedOut ? 'killed by PER_TEST_TIMEOUT' : 'the runner ended before the test did')])
    }
  }
}

writeFileSync(join(out, 'results.tsv'), rows.map((r) => r.join('\t')).join('\n') + '\n')
const count = (state) => rows.filter((r) => r[2] === state).length
console.log(`results: ${join(out, 'results.tsv')}`)
for (const r of rows) if (r[2] !== 'PASSED' && r[2] !== 'SKIPPED') console.log(`  ${r[2]}: ${r[0]} (${r[1]}): ${r[4]}`)
console.log(`skipped by the suite: ${count('SKIPPED')}, not run: ${count('NOT RUN')}, timed out: ${count('TIMEOUT')}`)
console.log(`${count('PASSED')} passed, ${count('FAILED') + count('TIMEOUT')} failed`)
