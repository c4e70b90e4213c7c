// The primary killed outright (SIGKILL, no LeaveGroup): the coordinator drops it after the session
// timeout, the secondary is elected, and ids continue without any being assigned twice. The primary runs
// as a child process from dist/ (run `npx tsc -p tsconfig.json` first).
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RegistryNode } from '../../src/registry/index.js'
import { REPO_ROOT, freePort, startTestBroker, type TestBroker } from '../harness/index.js'
import { type RegistryHttp, serveRegistry } from './http-adapter.js'

const FIXTURE = join(REPO_ROOT, 'dist', 'test', 'registry', 'fixtures', 'registry-node-main.js')

describe('killing the primary', () => {
  let tb: TestBroker
  let child: ChildProcess | undefined
  let node: RegistryNode | undefined
  let front: RegistryHttp | undefined

  beforeAll(async () => {
    tb = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
  })

  afterAll(async () => {
    child?.kill('SIGKILL')
    await node?.stop().catch(() => undefined)
    await front?.close().catch(() => undefined)
    await tb?.stop()
  })

  const post = async (url: string, path: string, body: unknown) => {
    const res = await fetch(url + path, { method: 'POST', headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify(body) })
    return { status: res.status, body: (await res.json()) as unknown }
  }

  it('elects the secondary after the primary is killed, and never reuses an id', async () => {
    expect(existsSync(FIXTURE), `${FIXTURE} is missing: run npx tsc -p tsconfig.json first`).toBe(true)
    // The election picks the smallest URL: give the child the port that sorts first.
    const ports = [await freePort(), await freePort()].sort((a, b) => (String(a) < String(b) ? -1 : 1))
    const [childPort, localPort] = ports as [number, number]
    child = spawn(process.execPath, [FIXTURE, tb.bootstrap, String(childPort)], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`registry child not ready:\n${output}`)), 30_000)
      child!.stdout!.on('data', (d: Buffer) => {
        output += d.toString()
        if (output.includes('ready')) {
          clearTimeout(timer)
          resolve()
        }
      })
      child!.stderr!.on('data', (d: Buffer) => (output += d.toString()))
      child!.once('exit', (code) => reject(new Error(`registry child exited (${code}):\n${output}`)))
    })

    node = new RegistryNode({ bootstrapServers: tb.bootstrap, identity: { host: '127.0.0.1', port: localPort }, groupId: 'registry-kill-test', sessionTimeoutMs: 6000, heartbeatIntervalMs: 200 })
    front = await serveRegistry((req) => node!.handle(req), localPort)
    await node.start()
    const elected = Date.now() + 30_000
    while (!node.elector.leader || node.elector.leader.port !== childPort) {
      if (Date.now() > elected) throw new Error('the child was not elected primary')
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(node.isPrimary).toBe(false)
    const local = `http://127.0.0.1:${localPort}`
    // Forwarded to the child, which assigns the id.
    expect(await post(local, '/subjects/a/versions', { schema: '"string"' })).toEqual({ status: 200, body: { id: 1 } })

    child.kill('SIGKILL')
    const takeover = Date.now() + 45_000
    while (!node.isPrimary) {
      if (Date.now() > takeover) throw new Error('the secondary did not take over')
      await new Promise((r) => setTimeout(r, 200))
    }
    await node.waitForPrimary()
    expect(await post(local, '/subjects/b/versions', { schema: '"int"' })).toEqual({ status: 200, body: { id: 2 } })
    expect(await post(local, '/subjects/a/versions', { schema: '"string"' })).toEqual({ status: 200, body: { id: 1 } })
    expect(node.service.state.versionsById('.', 1).map((v) => v.subject)).toEqual(['a'])
    expect(node.service.state.versionsById('.', 2).map((v) => v.subject)).toEqual(['b'])
  }, 120_000)
})
