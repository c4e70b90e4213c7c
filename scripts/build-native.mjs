#!/usr/bin/env node
// Builds the native IO core (native/, binding.gyp) with node-gyp into build/Release/skein_native.node.
// Runs as the package's `install` script. There is deliberately no pure-JS fallback: if a build tool
// is missing we stop and say which one, so a broker never runs without sendfile and mmap'd indexes.
//
// An interrupted build never leaves the package without its addon: node-gyp runs on a copy of
// binding.gyp and native/ in build/.staging-<pid>/ (its `rebuild` starts by deleting its build folder,
// which is why it must not run in place), and the finished addon replaces build/Release/skein_native.node
// by rename, which is atomic. A staging folder left by a killed run is removed by the next one.
//
// The build is skipped when build/Release/skein_native.node was built from the same sources for the same
// Node ABI, platform and compiler settings (build/Release/skein_native.stamp records them): `npm install`
// and `npx skein` in a checkout run this script every time. `--force` or SKEIN_REBUILD_NATIVE=1 rebuilds.
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const ADDON = 'skein_native.node'
const releaseDir = join(root, 'build', 'Release')
const addonPath = join(releaseDir, ADDON)
const stampPath = join(releaseDir, 'skein_native.stamp')

/** What the addon is built from: the sources, and what else changes the binary. */
function buildStamp() {
  const hash = createHash('sha256')
  const files = ['binding.gyp', ...readdirSync(join(root, 'native', 'src')).sort().map((f) => join('native', 'src', f))]
  for (const f of files) {
    hash.update(f + '\0')
    hash.update(readFileSync(join(root, f)))
  }
  return {
    sources: hash.digest('hex'),
    modules: process.versions.modules,
    napi: process.versions.napi,
    platform: process.platform,
    arch: process.arch,
    cxx: process.env.CXX ?? '',
    cxxflags: process.env.CXXFLAGS ?? '',
  }
}

function upToDate(stamp) {
  if (!existsSync(addonPath) || !existsSync(stampPath)) return false
  try {
    return JSON.stringify(JSON.parse(readFileSync(stampPath, 'utf8'))) === JSON.stringify(stamp)
  } catch {
    return false
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

/** Staging folders of runs that were killed (their pid is gone). */
function removeStaleStaging() {
  const buildDir = join(root, 'build')
  if (!existsSync(buildDir)) return
  for (const name of readdirSync(buildDir)) {
    const m = /^\.staging-(\d+)$/.exec(name)
    if (m !== null && !isAlive(Number(m[1]))) rmSync(join(buildDir, name), { recursive: true, force: true })
  }
}

function have(cmd, args = ['--version']) {
  const r = spawnSync(cmd, args, { stdio: 'ignore' })
  return r.status === 0
}

function findNodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ]
  return candidates.find((p) => p && existsSync(p))
}

const force = process.argv.includes('--force') || process.env.SKEIN_REBUILD_NATIVE === '1'
const stamp = buildStamp()
removeStaleStaging()
if (!force && upToDate(stamp)) {
  console.error(`skein: the native addon is up to date (${join('build', 'Release', ADDON)}; --force or SKEIN_REBUILD_NATIVE=1 rebuilds it)`)
  process.exit(0)
}

const missing = []
const cxx = process.env.CXX || 'c++'
if (!have(cxx) && !have('g++') && !have('clang++')) missing.push('a C++20 compiler (apt-get install -y g++)')
if (!have('make')) missing.push('make (apt-get install -y make)')
if (!have(process.env.PYTHON || 'python3')) missing.push('python3 (apt-get install -y python3)')
if (missing.length > 0) {
  console.error(`skein: cannot build the native addon; missing: ${missing.join(', ')}`)
  process.exit(1)
}

const nodeGyp = findNodeGyp()
if (!nodeGyp) {
  console.error('skein: cannot build the native addon; node-gyp was not found (it ships with npm; or npm install -g node-gyp)')
  process.exit(1)
}

// The copy node-gyp works on; inside the package, so binding.gyp's require('node-addon-api') resolves.
const staging = join(root, 'build', `.staging-${process.pid}`)
rmSync(staging, { recursive: true, force: true })
mkdirSync(staging, { recursive: true })
cpSync(join(root, 'binding.gyp'), join(staging, 'binding.gyp'))
cpSync(join(root, 'native'), join(staging, 'native'), { recursive: true })

const args = [nodeGyp, 'rebuild', '--release', `--jobs=${process.env.JOBS || 'max'}`]
// Build against the headers of the Node that runs us when they are installed beside it (Debian's
// nodejs puts them in /usr/include/node), so node-gyp never tries to download them.
const localHeaders = join(dirname(process.execPath), '..', 'include', 'node', 'common.gypi')
if (!process.env.npm_config_nodedir && existsSync(localHeaders)) args.push(`--nodedir=${join(dirname(process.execPath), '..')}`)

// node-gyp, make and the compilers run in a process group of their own, so that a signal to this
// script (Ctrl-C, kill, npm stopping) reaches all of them, and this script cleans up after them.
const child = spawn(process.execPath, args, { cwd: staging, stdio: 'inherit', detached: true })
let interrupted = null
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    interrupted = signal
    try {
      process.kill(-child.pid, signal)
    } catch {
      // Already gone.
    }
  })
}
child.on('exit', (code, signal) => {
  try {
    if (interrupted !== null || signal !== null) {
      console.error(`skein: the native addon build was interrupted (${interrupted ?? signal}); ${existsSync(addonPath) ? `the previous ${ADDON} is kept` : 'no addon was installed'}`)
      process.exitCode = 130
      return
    }
    if (code !== 0) {
      console.error('skein: the native addon failed to build (see the compiler output above)')
      process.exitCode = code ?? 1
      return
    }
    const built = join(staging, 'build', 'Release', ADDON)
    if (!existsSync(built)) {
      console.error(`skein: node-gyp finished but produced no ${ADDON}`)
      process.exitCode = 1
      return
    }
    // Same filesystem as the target, so the rename below replaces the addon in one step.
    mkdirSync(releaseDir, { recursive: true })
    const next = join(releaseDir, `.${ADDON}.${process.pid}`)
    cpSync(built, next)
    renameSync(next, addonPath)
    writeFileSync(stampPath, JSON.stringify(stamp, null, 2) + '\n')
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
})
