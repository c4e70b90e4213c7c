// The documentation is part of the product: README.md and the manuals in docs/ (pages.ts lists them, in
// the order their blocks run). Their generated sections must match the code, every ```js and ```sh block
// must run as written against a real broker (one of the test's own, on a free port that replaces
// 127.0.0.1:9092), and the lines they quote must be what the programs print.
//
// A block that must not run here (it starts a broker that runs until stopped, or runs these very tests)
// says so on its first line: `# not run by the docs test: <why>`. The why is checked against the
// block: every command in it must be such a long-running one, so nothing runnable hides there.
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GENERATED_PAGES, repoRoot, updateSections } from '../../scripts/docs-sections.js'
import { DOC_PAGES, pagesOnDisk, readPage } from './pages.js'
import { freePort, hasKcat, MAIN_JS, REPO_ROOT, startBrokerProcess, startTestBroker, type TestBroker } from '../harness/index.js'
import { SKEIN_JS } from '../cli/helpers.js'
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import { RestProxy } from '../../src/rest/index.js'
import { webFront } from '../../src/console/index.js'
import { silentLogger } from '../../src/observability/logger.js'
import { parseRegistryProperties, registrySettings } from '../../src/config/client-registry.js'
import { SchemaRegistryServer } from '../../src/registry/server.js'
import { startConnect, type ConnectHandle } from '../../src/connect/index.js'
import { createLogger } from '../../src/observability/logger.js'

const readme = readPage('README.md')

interface Block {
  /** The page it is on, from the repository root. */
  page: string
  lang: 'js' | 'sh'
  code: string
  /** 1-based line of the opening fence. */
  line: number
}

function codeBlocks(page: string, markdown: string): Block[] {
  const blocks: Block[] = []
  // A fence may be indented (a block inside a list item): its lines lose that indent, and it runs like any other.
  const re = /^( *)```(js|sh)\n([\s\S]*?)^\1```$/gm
  for (let m = re.exec(markdown); m !== null; m = re.exec(markdown)) {
    const indent = m[1]!.length
    const code = m[3]!.split('\n').map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length))).join('\n')
    blocks.push({ page, lang: m[2] as 'js' | 'sh', code, line: markdown.slice(0, m.index).split('\n').length })
  }
  return blocks
}

/** Every block of every page, in the order they run. */
const allBlocks = (): Block[] => DOC_PAGES.flatMap((page) => codeBlocks(page, readPage(page)))

const ILLUSTRATIVE = /^(?:#|\/\/) not run by the docs test: (.+)$/

/** What may justify not running a command, and the commands each covers. */
const LONG_RUNNING = [
  { why: /runs? a broker until it is stopped|starts a broker that runs until it is stopped/, command: /^(?:npm install && )?(?:npm start|node dist\/src\/main\.js|skein broker)(?:\s|$)/ },
  { why: /npm test runs that test itself/, command: /^(?:npm install && )?npm test(?:\s|$)/ },
  { why: /runs a Connect worker until it is stopped/, command: /^skein connect (?:distributed|standalone)\s/ },
  { why: /runs MirrorMaker until it is stopped/, command: /^skein mirror-maker\s/ },
  { why: /runs a cluster until it is stopped/, command: /^skein cluster up(?:\s|$)/ },
]

/** The command of a shell line of the docs: its trailing comment (after blanks and #) dropped. */
const commandOf = (line: string): string => line.replace(/\s+#\s.*$/, '').trim()

/** `skein` as a user with `npm link` has it, aimed at the test's broker instead of 127.0.0.1:9092. */
function skeinWrapper(binDir: string, bootstrap: string): void {
  mkdirSync(binDir, { recursive: true })
  const path = join(binDir, 'skein')
  writeFileSync(
    path,
    `#!/usr/bin/env bash
# The docs' commands use the default --bootstrap-server (127.0.0.1:9092): give the test broker's instead,
# unless the command names a broker of its own (a block that starts one, as the secured cluster's walk-through).
for arg in "$@"; do [ "$arg" = --bootstrap-server ] && exec "${process.execPath}" "${SKEIN_JS}" "$@"; done
case "$1" in
  topics|produce|consume|groups|share-groups|configs|acls) exec "${process.execPath}" "${SKEIN_JS}" "$1" --bootstrap-server ${bootstrap} "\${@:2}" ;;
  perf) exec "${process.execPath}" "${SKEIN_JS}" perf "$2" --bootstrap-server ${bootstrap} "\${@:3}" ;;
  *) exec "${process.execPath}" "${SKEIN_JS}" "$@" ;;
esac
`,
  )
  chmodSync(path, 0o755)
}

interface Ran {
  code: number | null
  signal: string | null
  stdout: string
  stderr: string
  timedOut: boolean
}

/** Runs a command asynchronously (the broker under test lives in this process and must keep serving). */
function runIn(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let timedOut = false
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, opts.timeoutMs)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, timedOut })
    })
  })
}

describe('README and docs/', () => {
  it('runs the blocks of every page: DOC_PAGES lists README.md and each docs/*.md', () => {
    expect([...DOC_PAGES].sort()).toEqual(pagesOnDisk().sort())
  })

  for (const page of Object.keys(GENERATED_PAGES)) {
    it(`${page} has current generated sections (run npm run docs after changing configs or handlers)`, () => {
      const text = readPage(page)
      expect(updateSections(page, text)).toBe(text)
    })
  }

  it('has the Connect file example write under results/tmp (git-ignored), never the repository root', () => {
    for (const file of ['config/connect-file-source.properties', 'config/connect-file-sink.properties']) {
      const path = /^file=(.*)$/m.exec(readFileSync(join(repoRoot(), file), 'utf8'))?.[1]
      expect(path, file).toMatch(/^results\/tmp\//)
    }
    expect(readFileSync(join(repoRoot(), '.gitignore'), 'utf8').split('\n')).toContain('/results/')
  })

  it('documents both commands', () => {
    expect(readme).toContain('npm install && npm start')
    expect(readme).toContain('npm install && npm test')
  })

  it('marks only long-running blocks as not run, and says why', () => {
    const blocks = allBlocks()
    expect(blocks.length).toBeGreaterThanOrEqual(6)
    const illustrative = blocks.filter((b) => ILLUSTRATIVE.test(b.code.split('\n')[0]!))
    expect(illustrative.length).toBeGreaterThan(0)
    for (const b of illustrative) {
      const why = ILLUSTRATIVE.exec(b.code.split('\n')[0]!)![1]!
      const commands = b.code.split('\n').slice(1).map(commandOf).filter((c) => c !== '' && !c.startsWith('#'))
      expect(commands.length, `${b.page} line ${b.line}`).toBeGreaterThan(0)
      for (const command of commands) {
        const kind = LONG_RUNNING.find((k) => k.command.test(command))
        expect(kind, `${b.page} line ${b.line}: '${command}' does not run until stopped: let the test run it`).toBeDefined()
        expect(command.endsWith('&'), `${b.page} line ${b.line}: '${command}' runs in the background`).toBe(false)
        expect(why, `${b.page} line ${b.line}: the reason does not cover '${command}'`).toMatch(kind!.why)
      }
    }
  })

  describe('every js and sh block runs as written', () => {
    let tb: TestBroker
    // The REST Proxy, web console and Schema Registry sections' lines reach what `npm start` embeds on
    // 127.0.0.1:8082 and 127.0.0.1:8081: here the same in front of the test broker, on free ports (the
    // REST Proxy with the web front: console, /metrics, /ready on its server, as the broker embeds it).
    let rest: RestProxy
    let registry: SchemaRegistryServer
    // The Kafka Connect section's curl lines reach a worker on 127.0.0.1:8083: here a standalone worker
    // against the test broker, on a free port.
    let connect: ConnectHandle
    let work: string
    let bin: string
    beforeAll(async () => {
      // An authorizer, so that the security page's `skein acls` examples run as written; the pages' other
      // commands connect as User:ANONYMOUS over PLAINTEXT, a super user here, so their ACLs do not limit them.
      tb = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'authorizer.class.name=kafka.security.authorizer.AclAuthorizer', 'super.users=User:ANONYMOUS'])
      registry = await SchemaRegistryServer.start({
        settings: registrySettings(parseRegistryProperties([['listeners', 'http://127.0.0.1:0']])),
        bootstrapServers: [tb.bootstrap],
      })
      const settings = restSettings(parseRestProperties([['listeners', 'http://127.0.0.1:0'], ['bootstrap.servers', tb.bootstrap]]))
      rest = await RestProxy.start({
        settings,
        bootstrapServers: [tb.bootstrap],
        extend: webFront({ settings, bootstrapServers: [tb.bootstrap], log: silentLogger(), brokerMetrics: tb.broker.metrics.registry }),
      })
      work = mkdtempSync(join(tmpdir(), 'skein-docs-'))
      connect = await startConnect({
        mode: 'standalone',
        props: {
          'bootstrap.servers': tb.bootstrap, listeners: 'http://127.0.0.1:0', 'offset.storage.file.filename': join(work, 'connect.offsets'), 'offset.flush.interval.ms': '500',
          'key.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
        },
        log: createLogger({ level: 'warn' }),
      })
      // The shell blocks run in a folder of their own (what they write, such as results/tmp, goes with it);
      // `--file README.md` reads this copy.
      copyFileSync(join(repoRoot(), 'README.md'), join(work, 'README.md'))
      bin = join(work, '.bin')
      skeinWrapper(bin, tb.bootstrap)
    })
    afterAll(async () => {
      await connect?.stop()
      await rest?.stop()
      await registry?.stop()
      await tb?.stop()
      if (work !== undefined) rmSync(work, { recursive: true, force: true })
    })

    const runnable = allBlocks().filter((b) => !ILLUSTRATIVE.test(b.code.split('\n')[0]!))
    for (const block of runnable) {
      const needsKcat = block.lang === 'sh' && /^kcat /m.test(block.code)
      it.skipIf(needsKcat && !hasKcat())(`the ${block.lang} block at ${block.page} line ${block.line}`, async () => {
        const code = block.code.replaceAll('127.0.0.1:9092', tb.bootstrap).replaceAll('http://127.0.0.1:8082', rest.listeners[0]!.url).replaceAll('http://127.0.0.1:8081', registry.urls[0]!).replaceAll('http://127.0.0.1:8083', connect.url).replaceAll('/tmp/skein-demo', join(work, 'skein-demo'))
        let r: Ran
        if (block.lang === 'sh') {
          const script = join(work, `block-${block.page.replaceAll('/', '-')}-${block.line}.sh`)
          writeFileSync(script, `set -euo pipefail\n${code}`)
          r = await runIn('bash', [script], { cwd: work, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, timeoutMs: 180_000 })
        } else {
          // In the package, so that `import ... from 'skein'` resolves to this package and 'kafkajs' to its dev dependency.
          const script = join(REPO_ROOT, 'dist', `docs-block-${block.page.replaceAll('/', '-')}-${block.line}-${process.pid}.mjs`)
          writeFileSync(script, code)
          try {
            r = await runIn(process.execPath, [script], { cwd: work, timeoutMs: 30_000 })
          } finally {
            rmSync(script, { force: true })
          }
        }
        expect(r.timedOut, `${block.page} line ${block.line} did not end on its own:\n${r.stdout}\n${r.stderr}`).toBe(false)
        expect(r.code, `${block.page} line ${block.line} failed:\n${r.stdout}\n${r.stderr}`).toBe(0)
        const prints = /^\/\/ prints: (.*)$/m.exec(block.code)
        if (prints !== null) expect(r.stdout.trim()).toBe(prints[1])
      })
    }

    it('the kafkajs block wrote its record', async () => {
      const demo = await runIn(process.execPath, [SKEIN_JS, 'consume', '--bootstrap-server', tb.bootstrap, '--topic', 'demo', '--from-beginning', '--property', 'print.key=true', '--timeout-ms', '3000'], { cwd: work, timeoutMs: 30_000 })
      expect(demo.stdout.split('\n')).toContain('k1\thello')
    })

    it('the Kafka Connect block\'s FileStreamSource copied the file into its topic', async () => {
      const r = await runIn(process.execPath, [SKEIN_JS, 'consume', '--bootstrap-server', tb.bootstrap, '--topic', 'connect-demo', '--from-beginning', '--timeout-ms', '3000'], { cwd: work, timeoutMs: 30_000 })
      expect(r.stdout.split('\n').filter((l) => l !== '')).toEqual(['hello', 'connect'])
    })

    it('the failure it quotes is what skein prints', async () => {
      const r = await runIn(process.execPath, [SKEIN_JS, 'consume', '--bootstrap-server', tb.bootstrap, '--topic', 'nope'], { cwd: work, timeoutMs: 30_000 })
      const quoted = /\(`(skein consume: topic 'nope' [^`]*)`\)/.exec(readPage('docs/cli.md'))![1]!
      expect([r.code, r.stderr]).toEqual([1, `${quoted}\n`])
    })
  })

  describe('the log lines it quotes are what the broker prints', () => {
    const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0

    it.skipIf(!hasScript)('npm start on a terminal prints the ready line', async () => {
      const quoted = /`(\d\d:\d\d:\d\d\.\d{3} INFO {2}Skein broker 0 ready on 127\.0\.0\.1:9092 \(data in \/path\/to\/skein\/data\))`/.exec(readme)
      expect(quoted, 'the README quotes the ready line').not.toBeNull()
      const fields = /followed by the same facts as fields \(([^)]*)\)/.exec(readme)![1]!.match(/`(\w+)`/g)!.map((f) => f.slice(1, -1))
      const cwd = mkdtempSync(join(tmpdir(), 'skein-docs-start-'))
      try {
        const port = await freePort()
        // What npm start runs (package.json), from a checkout folder of its own, on a free port; timeout stops it.
        const cmd = `timeout -s TERM 5 ${process.execPath} ${MAIN_JS} --config ${join(REPO_ROOT, 'config', 'server.properties')} --override listeners=PLAINTEXT://127.0.0.1:${port}`
        const env = { ...process.env, NO_COLOR: '1' } as NodeJS.ProcessEnv
        delete env.SKEIN_LOG_FORMAT
        const shown = await runIn('script', ['-qec', cmd, '/dev/null'], { cwd, env, timeoutMs: 30_000 })
        const ready = shown.stdout.split(/\r?\n/).find((l) => l.includes(' ready on '))!
        const expected = quoted![1]!.replace('127.0.0.1:9092', `127.0.0.1:${port}`).replace('/path/to/skein', cwd)
        // The time differs; from the level on, the line is the quoted one, then the fields it names.
        expect(ready).toMatch(/^\d\d:\d\d:\d\d\.\d{3} /)
        expect(ready.slice(13).startsWith(`${expected.slice(13)}  `), ready).toBe(true)
        const shownFields = ready.slice(expected.length + 2).split(' ').map((kv) => kv.slice(0, kv.indexOf('=')))
        expect(shownFields).toEqual(fields)
      } finally {
        rmSync(cwd, { recursive: true, force: true })
      }
    })

    it('elsewhere the same line is JSON, with the fields in the order it shows', async () => {
      const p = await startBrokerProcess()
      try {
        const line = p.output().split('\n').find((l) => l.includes(' ready on '))!
        const keys = Object.keys(JSON.parse(line) as object)
        expect(keys.slice(0, 4)).toEqual(['level', 'time', 'service', 'nodeId'])
        expect(keys[keys.length - 1]).toBe('msg')
        expect(readPage('docs/broker.md')).toContain('`{"level":30,"time":"...","service":"skein","nodeId":0,...,"msg":"Skein broker 0 ready on ..."}`')
      } finally {
        await p.kill('SIGTERM')
        rmSync(p.dataDir, { recursive: true, force: true })
      }
    })
  })
})
