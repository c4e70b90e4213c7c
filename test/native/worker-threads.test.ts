import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'

const workerFile = new URL('./native-worker.mjs', import.meta.url)
let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'skein-workers-'))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

interface WorkResult {
  check: number
  crc: number
  crcSoftware: number
  hardware: boolean
  lookups: number[]
  positions: number[]
  entries: number
  path: string
}

function runWorker<T>(workerData: object): { worker: Worker; message: Promise<T>; exit: Promise<number> } {
  const worker = new Worker(workerFile, { workerData })
  const message = new Promise<T>((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  const exit = new Promise<number>((resolve) => worker.once('exit', resolve))
  return { worker, message, exit }
}

describe('addon in worker_threads', () => {
  it('loads and works in two workers at once, alongside the main thread', async () => {
    const data = randomBytes(100_000)
    const runs = [0, 1].map((id) => runWorker<WorkResult>({ task: 'work', dir, id, data }))
    // The main thread keeps using its own instance meanwhile.
    const mainIndex = native.openIndex(join(dir, 'main.index'), 8, 800)
    mainIndex.append(7, 70)
    const results = await Promise.all(runs.map((r) => r.message))
    expect(await Promise.all(runs.map((r) => r.exit))).toEqual([0, 0])
    for (const r of results) {
      expect(r.check).toBe(0xe3069283)
      expect(r.crc).toBe(native.crc32cSoftware(data))
      expect(r.crcSoftware).toBe(r.crc)
      expect(r.hardware).toBe(native.crc32cHardware())
      expect(r.entries).toBe(20_000)
      expect(r.lookups).toEqual([-1, 0, 10, 19_999, 19_999])
      expect(r.positions).toEqual([-1, 0, 1000, 1_999_900, 1_999_900])
      expect(statSync(r.path).size).toBe(20_000 * 8)
    }
    expect(mainIndex.lookup(8)).toBe(0)
    mainIndex.close(true)
  })

  it('survives terminating a worker with a sendfile in flight and an index left open', async () => {
    const { worker, message, exit } = runWorker<{ pending?: boolean; unexpected?: boolean }>({ task: 'pending-sendfile', dir, id: 9 })
    expect(await message).toEqual({ pending: true })
    await worker.terminate()
    expect(await exit).toBe(1)
    // The process is intact and a fresh worker still loads the addon.
    const again = runWorker<WorkResult>({ task: 'work', dir, id: 10, data: Buffer.from('abc') })
    expect((await again.message).check).toBe(0xe3069283)
    expect(await again.exit).toBe(0)
  })

  it('survives terminating a worker whose sendfile waits on a healthy, paused peer', async () => {
    const peers: Socket[] = []
    const server = createServer((socket) => {
      socket.pause()
      peers.push(socket)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const port = (server.address() as { port: number }).port
      const { worker, message, exit } = runWorker<{ pending?: boolean }>({ task: 'pending-sendfile-remote', dir, id: 11, port })
      expect(await message).toEqual({ pending: true })
      await worker.terminate()
      expect(await exit).toBe(1)
      // The worker's end of the connection is gone once its sendfile was torn down.
      const peer = peers[0]!
      await new Promise<void>((resolve) => {
        peer.on('error', () => resolve())
        peer.on('close', () => resolve())
        peer.resume()
      })
    } finally {
      for (const p of peers) p.destroy()
      server.close()
    }
  })
})
