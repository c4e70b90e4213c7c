// The Go compatibility programs (test/compat/go/<client>/main.go) and Burrow, for the vitest files beside
// this one. The programs are built with Debian's Go in GOPATH mode against Debian's packaged sources
// in /usr/share/gocode, offline (GO111MODULE=off, GOPROXY=off), into .go-cache/ at the checkout's root
// (git-ignored): Go's build cache there keeps the compiled packages, so a rebuild only compiles main.go
// and links. A binary is named by a hash of its source and `go version`, so an edited main.go or a new
// Go rebuilds it and an unchanged one is reused as is.
//
// A missing tool or package FAILS the test that needs it, naming the Debian package (.ci/run installs
// them): these tests exist to show the clients work, so a machine without them must not pass them.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnSync } from 'node:child_process'
import { run } from '../../harness/tools.js'

const HERE = dirname(fileURLToPath(import.meta.url))
/** The checkout's root (this file runs from test/compat/go under vitest). */
export const REPO = join(HERE, '..', '..', '..')
const CACHE = join(REPO, '.go-cache')
const GOCODE = '/usr/share/gocode/src'

export type GoClient = 'sarama' | 'kafka-go' | 'confluent-kafka-go'

/** What each program needs from Debian: a source directory under /usr/share/gocode and its package. */
const NEEDS: Record<GoClient, { dir: string; pkg: string }[]> = {
  sarama: [{ dir: 'github.com/Shopify/sarama', pkg: 'golang-github-shopify-sarama-dev' }],
  'kafka-go': [{ dir: 'github.com/segmentio/kafka-go', pkg: 'golang-github-segmentio-kafka-go-dev' }],
  'confluent-kafka-go': [{ dir: 'github.com/confluentinc/confluent-kafka-go', pkg: 'golang-github-confluentinc-confluent-kafka-go-dev' }],
}

export const BURROW = '/usr/bin/Burrow'
export const GO_PACKAGES = 'golang-go golang-github-shopify-sarama-dev golang-github-segmentio-kafka-go-dev golang-github-confluentinc-confluent-kafka-go-dev librdkafka-dev pkg-config burrow'

function goEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GO111MODULE: 'off',
    GOPATH: `${join(CACHE, 'gopath')}:/usr/share/gocode`,
    GOCACHE: join(CACHE, 'build'),
    GOFLAGS: '',
    GOPROXY: 'off',
    CGO_ENABLED: '1',
  }
}

let goVersion: string | undefined

/** `go version`, or an Error naming the package to install. */
function requireGo(): string {
  if (goVersion !== undefined) return goVersion
  const r = spawnSync('go', ['version'], { encoding: 'utf8', env: goEnv(), timeout: 30_000 })
  if (r.error !== undefined || r.status !== 0) throw new Error(`Debian's Go is not installed ('go version' failed: ${r.error?.message ?? r.stderr}). Install with: apt-get install -y golang-go (all Go compatibility packages: apt-get install -y ${GO_PACKAGES})`)
  goVersion = r.stdout.trim()
  return goVersion
}

/** Fails (throws) unless the client's Debian sources are installed. */
export function requirePackages(client: GoClient): void {
  for (const need of NEEDS[client]) {
    if (!existsSync(join(GOCODE, need.dir))) throw new Error(`${client} is not installed (${join(GOCODE, need.dir)} is missing). Install with: apt-get install -y ${need.pkg}`)
  }
  if (client === 'confluent-kafka-go') {
    const pc = spawnSync('pkg-config', ['--exists', 'rdkafka'])
    if (pc.status !== 0) throw new Error('confluent-kafka-go builds over librdkafka, whose pkg-config file is missing. Install with: apt-get install -y librdkafka-dev pkg-config')
  }
}

/** Fails (throws) unless Debian's Burrow is installed. */
export function requireBurrow(): void {
  if (!existsSync(BURROW)) throw new Error(`Burrow is not installed (${BURROW} is missing). Install with: apt-get install -y burrow`)
}

export interface BuiltProgram {
  path: string
  /** False when an unchanged binary was reused. */
  built: boolean
  ms: number
}

/** Builds test/compat/go/<client>/main.go (or reuses the binary of the same source and Go). */
export async function buildProgram(client: GoClient): Promise<BuiltProgram> {
  const started = Date.now()
  const version = requireGo()
  requirePackages(client)
  const source = join(HERE, client, 'main.go')
  const hash = createHash('sha256').update(readFileSync(source)).update(version).digest('hex').slice(0, 12)
  const bin = join(CACHE, 'bin', `${client}-${hash}`)
  if (existsSync(bin)) return { path: bin, built: false, ms: Date.now() - started }
  mkdirSync(dirname(bin), { recursive: true })
  // Built under a temporary name and renamed: two test files building at once never run half a binary.
  const partial = `${bin}.${process.pid}.partial`
  const r = await run('go', ['build', '-o', partial, source], { env: goEnv(), cwd: REPO, timeoutMs: 600_000 })
  if (r.code !== 0) {
    rmSync(partial, { force: true })
    throw new Error(`go build of ${client} failed (exit ${r.code ?? r.signal}):\n${r.stderr.slice(0, 4000)}`)
  }
  renameSync(partial, bin)
  return { path: bin, built: true, ms: Date.now() - started }
}

export interface CheckResult {
  client: string
  check: string
  ok: boolean
  detail: string
}

export interface ProgramRun {
  checks: Map<string, CheckResult>
  code: number | null
  stderr: string
  /** Everything the program printed, for failure messages. */
  output: string
}

/** Runs a built program and parses its JSON lines (one per check). */
export async function runProgram(path: string, args: string[], timeoutMs = 240_000): Promise<ProgramRun> {
  const r = await run(path, args, { timeoutMs })
  const stdout = r.stdout.toString()
  const checks = new Map<string, CheckResult>()
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue
    const c = JSON.parse(line) as CheckResult
    checks.set(c.check, c)
  }
  return { checks, code: r.code, stderr: r.stderr, output: `${stdout}\n${r.stderr.slice(-4000)}` }
}
