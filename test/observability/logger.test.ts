// The broker's log format: human-readable on a terminal (levels as words), JSON lines otherwise, and
// SKEIN_LOG_FORMAT=json|pretty over either. The terminal case runs the real broker under a pseudo-terminal
// (util-linux `script`), as a user starting it in a shell sees it.
import { spawnSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createLogger, formatPretty, logFormat } from '../../src/observability/logger.js'
import { freePort, MAIN_JS, REPO_ROOT, startBrokerProcess } from '../harness/index.js'

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0

/** Runs the broker until its ready line under a pseudo-terminal; returns what the terminal showed. */
function brokerOnTerminal(env: NodeJS.ProcessEnv, dataDir: string, port: number): string {
  const cmd = `${process.execPath} ${MAIN_JS} --override listeners=PLAINTEXT://127.0.0.1:${port} --override log.dirs=${dataDir}`
  // timeout ends the broker with SIGTERM once it had time to start (it stops cleanly on it).
  const r = spawnSync('script', ['-qec', `timeout -s TERM 5 ${cmd}`, '/dev/null'], { cwd: REPO_ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 })
  return r.stdout
}

describe('log format', () => {
  it('formats a JSON line as time, level word, message and fields, with an error stack below', () => {
    const at = new Date(2024, 0, 2, 3, 4, 5, 6)
    const line = JSON.stringify({ level: 40, time: at.toISOString(), service: 'skein', shard: 1, topic: 'orders', reason: 'disk full', n: 3, list: ['a', 'b'], msg: 'append failed' })
    expect(formatPretty(line)).toBe('03:04:05.006 WARN  append failed  shard=1 topic=orders reason="disk full" n=3 list=["a","b"]\n')
    const withErr = JSON.stringify({ level: 50, time: at.toISOString(), err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (x.js:1:1)' }, msg: 'task failed' })
    expect(formatPretty(withErr)).toBe('03:04:05.006 ERROR task failed  err=boom\n    Error: boom\n    at f (x.js:1:1)\n')
    expect(formatPretty(withErr, true)).toContain('\u001b[31mERROR\u001b[0m')
    expect(formatPretty('not json\n')).toBe('not json\n')
  })

  it('SKEIN_LOG_FORMAT chooses; otherwise a terminal gets pretty and anything else JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-log-'))
    const file = join(dir, 'log')
    const fd = openSync(file, 'w')
    try {
      expect(logFormat(fd, {})).toBe('json')
      expect(logFormat(fd, { SKEIN_LOG_FORMAT: 'pretty' })).toBe('pretty')
      expect(logFormat(fd, { SKEIN_LOG_FORMAT: 'JSON' })).toBe('json')
      expect(() => logFormat(fd, { SKEIN_LOG_FORMAT: 'xml' })).toThrow("SKEIN_LOG_FORMAT must be json or pretty, not 'xml'")
      const log = createLogger({ destination: fd, format: 'pretty' })
      log.info({ topic: 't' }, 'hello')
      // JSON lines are written asynchronously: wait for the line before closing the file.
      const json = createLogger({ destination: fd, format: 'json', level: 'info' })
      json.warn('careful')
      for (const deadline = Date.now() + 10_000; !readFileSync(file, 'utf8').includes('careful'); ) {
        if (Date.now() > deadline) throw new Error('the JSON line never arrived')
        await new Promise((r) => setTimeout(r, 10))
      }
    } finally {
      closeSync(fd)
    }
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n')
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO  hello {2}topic=t$/)
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 40, msg: 'careful', service: 'skein' })
    rmSync(dir, { recursive: true, force: true })
  })

  it('a broker whose stdout is a pipe logs JSON lines', async () => {
    const p = await startBrokerProcess()
    try {
      const first = p.output().split('\n').find((l) => l.includes('ready on'))!
      expect(JSON.parse(first)).toMatchObject({ level: 30, msg: `Skein broker 0 ready on 127.0.0.1:${p.port} (data in ${p.dataDir})` })
    } finally {
      await p.kill('SIGTERM')
      rmSync(p.dataDir, { recursive: true, force: true })
    }
  })

  it.skipIf(!hasScript)('a broker on a terminal logs readable lines; SKEIN_LOG_FORMAT=json keeps JSON there', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'skein-tty-'))
    try {
      const port = await freePort()
      // eslint-disable-next-line no-control-regex
      const shown = brokerOnTerminal({ SKEIN_LOG_FORMAT: '', NO_COLOR: '1' }, dataDir, port).replace(/\u001b\[[0-9;]*m/g, '').split(/\r?\n/)
      const ready = shown.find((l) => l.includes('ready on'))
      expect(ready).toMatch(new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  Skein broker 0 ready on 127\\.0\\.0\\.1:${port} \\(data in ${dataDir.replace(/[.]/g, '\\.')}\\)  nodeId=0 clusterId=\\S+ `))
      expect(shown.some((l) => /^\d\d:\d\d:\d\d\.\d{3} INFO  stopping {2}signal=SIGTERM$/.test(l))).toBe(true)
      const json = brokerOnTerminal({ SKEIN_LOG_FORMAT: 'json' }, dataDir, port).split(/\r?\n/).find((l) => l.includes('ready on'))!
      expect(JSON.parse(json)).toMatchObject({ level: 30, nodeId: 0 })
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
