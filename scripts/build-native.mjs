#!/usr/bin/env node
// Builds the native IO core (native/, binding.gyp) with node-gyp.
// Runs as the package's `install` script. There is deliberately no pure-JS fallback: if a build tool
// is missing we stop and say which one, so a broker never runs without sendfile and mmap'd indexes.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

function have(cmd, args = ['--version']) {
  const r = spawnSync(cmd, args, { stdio: 'ignore' })
  return r.status === 0
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

function findNodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ]
  return candidates.find((p) => p && existsSync(p))
}

const nodeGyp = findNodeGyp()
if (!nodeGyp) {
  console.error('skein: cannot build the native addon; node-gyp was not found (it ships with npm; or npm install -g node-gyp)')
  process.exit(1)
}

const args = [nodeGyp, 'rebuild', '--release', `--jobs=${process.env.JOBS || 'max'}`]
// Build against the headers of the Node that runs us when they are installed beside it (Debian's
// nodejs puts them in /usr/include/node), so node-gyp never tries to download them.
const localHeaders = join(dirname(process.execPath), '..', 'include', 'node', 'common.gypi')
if (!process.env.npm_config_nodedir && existsSync(localHeaders)) args.push(`--nodedir=${join(dirname(process.execPath), '..')}`)
const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' })
if (r.status !== 0) {
  console.error('skein: the native addon failed to build (see the compiler output above)')
  process.exit(r.status ?? 1)
}
