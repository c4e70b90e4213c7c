// scripts/build-native.mjs, the package's install script, as `npm install` and `npx skein` run it: on a
// copy of the package's native sources, with the real node-gyp and compiler. An interrupted build keeps
// the addon that was there (node-gyp's own rebuild deletes its build folder first); a build from the same
// sources is skipped, so re-running the install script does not recompile. The first build is the one
// `npm install` made before the tests (the same script on the same sources).
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../harness/index.js'

const haveCompiler = ['c++', 'make', 'python3'].every((cmd) => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0)

let pkg: string
const addon = (): string => join(pkg, 'build', 'Release', 'skein_native.node')

function runBuild(env: NodeJS.ProcessEnv = {}): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [join(pkg, 'scripts', 'build-native.mjs')], { cwd: pkg, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 300_000 })
  return { status: r.status, stderr: r.stderr }
}

/** Loads the addon in a fresh process (a module loaded here could not be replaced). */
function addonWorks(): boolean {
  const r = spawnSync(process.execPath, ['-e', `process.stdout.write(String(require(${JSON.stringify(addon())}).crc32c(Buffer.from('123456789'))))`], { encoding: 'utf8' })
  return r.stdout === String(0xe3069283)
}

describe.skipIf(!haveCompiler)('build-native.mjs', () => {
  beforeAll(() => {
    // A package of its own: the native sources and the script, the repo's node_modules (node-gyp, node-addon-api).
    pkg = mkdtempSync(join(tmpdir(), 'skein-build-native-'))
    mkdirSync(join(pkg, 'scripts'))
    cpSync(join(REPO_ROOT, 'scripts', 'build-native.mjs'), join(pkg, 'scripts', 'build-native.mjs'))
    cpSync(join(REPO_ROOT, 'binding.gyp'), join(pkg, 'binding.gyp'))
    cpSync(join(REPO_ROOT, 'native'), join(pkg, 'native'), { recursive: true })
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(pkg, 'node_modules'))
  })

  afterAll(() => {
    if (pkg !== undefined) rmSync(pkg, { recursive: true, force: true })
  })

  it('skips the build while the sources are unchanged (the addon npm install built, or one built here)', () => {
    // `npm install` ran this script on these very sources before the tests (README, .ci/run): its addon and
    // stamp are the first build's, and a whole second compile here would only repeat it (25 s of both
    // cores). Without them (an addon built some other way) the test compiles.
    const installed = join(REPO_ROOT, 'build', 'Release')
    if (existsSync(join(installed, 'skein_native.stamp')) && existsSync(join(installed, 'skein_native.node'))) {
      mkdirSync(join(pkg, 'build', 'Release'), { recursive: true })
      for (const f of ['skein_native.node', 'skein_native.stamp']) cpSync(join(installed, f), join(pkg, 'build', 'Release', f))
    } else {
      const first = runBuild()
      expect(first.status, first.stderr).toBe(0)
    }
    expect(addonWorks()).toBe(true)
    const stamp = JSON.parse(readFileSync(join(pkg, 'build', 'Release', 'skein_native.stamp'), 'utf8')) as { sources: string }
    expect(stamp.sources).toMatch(/^[0-9a-f]{64}$/)
    expect(readdirSync(join(pkg, 'build'))).toEqual(['Release'])

    const inode = statSync(addon()).ino
    const t0 = Date.now()
    const again = runBuild()
    expect(again.status).toBe(0)
    expect(again.stderr).toBe('skein: the native addon is up to date (build/Release/skein_native.node; --force or SKEIN_REBUILD_NATIVE=1 rebuilds it)\n')
    expect(Date.now() - t0).toBeLessThan(5000)
    expect(statSync(addon()).ino).toBe(inode)
  }, 240_000) // without npm install's addon, a whole compile: about a minute on a loaded 2-core machine

  it('an interrupted rebuild keeps the addon that was there and leaves no staging folder', async () => {
    const inode = statSync(addon()).ino
    // A changed source makes the build run; SIGINT arrives while the compiler works.
    const header = join(pkg, 'native', 'src', 'util.h')
    const original = readFileSync(header, 'utf8')
    writeFileSync(header, original + '\n// changed\n')
    const child = spawn(process.execPath, [join(pkg, 'scripts', 'build-native.mjs')], { cwd: pkg, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.stdout.resume()
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    const staging = join(pkg, 'build', `.staging-${child.pid}`)
    const deadline = Date.now() + 60_000
    // Wait until make is compiling (its object folder exists), then interrupt.
    while (!existsSync(join(staging, 'build', 'Release', 'obj.target'))) {
      if (Date.now() > deadline) throw new Error(`the build never started compiling: ${stderr}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    child.kill('SIGINT')
    expect(await exited).toBe(130)
    expect(stderr).toContain('skein: the native addon build was interrupted (SIGINT); the previous skein_native.node is kept')
    expect(statSync(addon()).ino).toBe(inode)
    expect(addonWorks()).toBe(true)
    expect(readdirSync(join(pkg, 'build'))).toEqual(['Release'])
    writeFileSync(header, original)
  })

  it('removes a staging folder left by a killed run', () => {
    // pid 2^22+1 is above Linux's pid_max limit: no process has it.
    const stale = join(pkg, 'build', `.staging-${2 ** 22 + 1}`)
    mkdirSync(join(stale, 'build'), { recursive: true })
    const r = runBuild()
    expect(r.status, r.stderr).toBe(0)
    expect(r.stderr).toContain('up to date')
    expect(existsSync(stale)).toBe(false)
    expect(readdirSync(join(pkg, 'build'))).toEqual(['Release'])
    expect(addonWorks()).toBe(true)
  })
})
