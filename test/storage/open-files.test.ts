// The bounded cache of open segment files (src/storage/open-files.ts): a LogManager holds at most its
// bound of descriptors and index mappings whatever its partition count, opens nothing per partition at
// startup, and never closes a descriptor that a read lease or an fsync in flight still uses.
import { fstatSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer, connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native, socketFd } from '../../src/addon/index.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../../src/storage/index.js'
import type { ReadResult } from '../../src/storage/index.js'
import { CachedHandle, OpenFileCache, openFilesPerThread } from '../../src/storage/open-files.js'
import { T0, decodeAll, makeBatch, readAll, tempDir } from './helpers.js'

const BOUND = 20

function openFds(): number {
  return readdirSync('/proc/self/fd').length
}

/** Index files of dataDir mapped into this process. */
function mappedIndexFiles(dataDir: string): number {
  return readFileSync('/proc/self/maps', 'utf8').split('\n').filter((l) => l.includes(dataDir + '/') && /index( \(deleted\))?$/.test(l)).length
}

/** Sends a read's regions through a real TCP connection with sendfile, as the broker does; resolves the bytes received. */
async function sendfileRegions(r: ReadResult): Promise<Buffer> {
  const received: Buffer[] = []
  let total = 0
  const want = r.bytes
  return new Promise<Buffer>((resolve, reject) => {
    const server = createServer((sock: Socket) => {
      const fd = socketFd(sock)
      const sendNext = (i: number): void => {
        if (i === r.regions.length) return
        const reg = r.regions[i]!
        native.sendfile(fd, reg.fd, reg.position, reg.length, (err, sent) => {
          if (err !== null || sent !== reg.length) reject(err ?? new Error(`sent ${sent} of ${reg.length}`))
          else sendNext(i + 1)
        })
      }
      sendNext(0)
    })
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address() as { port: number }
      const client = connect(addr.port, '127.0.0.1')
      client.on('data', (d: Buffer) => {
        received.push(d)
        total += d.length
        if (total >= want) {
          client.destroy()
          server.close()
          resolve(Buffer.concat(received))
        }
      })
      client.on('error', reject)
    })
  })
}

describe('open segment files', () => {
  let dir: { path: string; cleanup: () => void }
  beforeEach(() => {
    dir = tempDir()
  })
  afterEach(() => dir.cleanup())

  const defaults = { ...DEFAULT_LOG_CONFIG, segmentBytes: 2048, indexIntervalBytes: 200, segmentIndexBytes: 4096 }

  it('stay within the bound whatever the partition count, and none is opened per partition at startup', async () => {
    const before = openFds()
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true, maxOpenFiles: BOUND })
    const n = 300
    for (let p = 0; p < n; p++) {
      const log = m.create('many', p)
      // Several segments per partition for some, so inactive segments' indexes get mapped too.
      for (let i = 0; i < (p % 10 === 0 ? 30 : 1); i++) log.append(makeBatch(`p${p}-${i}`, 2, T0 + i, 60), { leaderEpoch: 0 })
      expect(m.files.openCost).toBeLessThanOrEqual(BOUND)
      // The flushes and snapshots that rolls start in the background hold short-lived files of their own.
      await log.flush()
      expect(openFds() - before).toBeLessThanOrEqual(BOUND)
    }
    for (let p = 0; p < n; p++) {
      const recs = readAll(m, m.get('many', p)!)
      expect(recs[0]!.value!.toString()).toBe(`p${p}-0-0` + '.'.repeat(60))
      if (p % 10 === 0) expect(m.get('many', p)!.offsetForTimestamp(T0 + 20)?.offset).toBe(40)
    }
    expect(openFds() - before).toBeLessThanOrEqual(BOUND)
    expect(m.files.openCost).toBeLessThanOrEqual(BOUND)
    expect(m.files.evictions).toBeGreaterThan(0)
    await m.close()
    expect(openFds()).toBe(before)
    expect(mappedIndexFiles(dir.path)).toBe(0)

    // A restart opens no .log and maps no index until they are used.
    const m2 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true, maxOpenFiles: BOUND })
    expect(m2.partitions()).toHaveLength(n)
    expect(openFds() - before).toBeLessThanOrEqual(BOUND)
    for (let p = 0; p < n; p++) {
      const log = m2.get('many', p)!
      const recs = readAll(m2, log)
      expect(recs).toHaveLength(p % 10 === 0 ? 60 : 2)
      log.append(makeBatch(`again${p}`, 1, T0 + 100), { leaderEpoch: 0 })
      expect(openFds() - before).toBeLessThanOrEqual(BOUND)
    }
    expect(mappedIndexFiles(dir.path)).toBeLessThanOrEqual(BOUND)
    await m2.close()
    expect(openFds()).toBe(before)
  })

  it('an idle partition opened at startup holds no descriptor', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true, maxOpenFiles: BOUND })
    for (let p = 0; p < 50; p++) m.create('idle', p).append(makeBatch(`x${p}`), { leaderEpoch: 0 })
    await m.close()
    const before = openFds()
    // Unclean as well as clean: recovery opens what it validates, and the cache closes it again.
    for (const cleanShutdown of [true, false]) {
      const m2 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown, maxOpenFiles: BOUND })
      expect(openFds() - before).toBeLessThanOrEqual(BOUND)
      for (const log of m2.partitions()) expect(log.logEndOffset).toBe(1)
      await m2.close()
    }
    // With room to spare, what stays open after a start is the cache's (the .log scans that found each
    // log end offset), nothing else.
    const m3 = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true, maxOpenFiles: 1000 })
    expect(openFds() - before).toBe(m3.files.openCost)
    await m3.close()
  })

  it('never closes a descriptor a read lease holds: evicted under the lease, the region is still sent whole', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true, maxOpenFiles: BOUND })
    const hot = m.create('hot', 0)
    for (let i = 0; i < 30; i++) hot.append(makeBatch(`h${i}`, 2, T0 + i, 60), { leaderEpoch: 0 })
    const expected = readAll(m, hot)
    const r = hot.read(0, 1 << 20)
    expect(r.regions.length).toBeGreaterThan(3)
    const firstSegment = join(hot.dir, '00000000000000000000.log')
    const identity = (fd: number): string => `${fstatSync(fd).dev}:${fstatSync(fd).ino}`
    expect(identity(r.regions[0]!.fd)).toBe(`${statSync(firstSegment).dev}:${statSync(firstSegment).ino}`)
    // Much more traffic than the cache holds: every unpinned file is closed and reopened meanwhile.
    const evictionsBefore = m.files.evictions
    for (let p = 0; p < 60; p++) {
      const log = m.create('other', p)
      log.append(makeBatch(`o${p}`, 1, T0), { leaderEpoch: 0 })
      readAll(m, log)
    }
    expect(m.files.evictions - evictionsBefore).toBeGreaterThan(40)
    // The lease's descriptors still name the same files, and the cache counts them over its bound.
    expect(identity(r.regions[0]!.fd)).toBe(`${statSync(firstSegment).dev}:${statSync(firstSegment).ino}`)
    const sent = await sendfileRegions(r)
    expect(decodeAll(sent)).toEqual(expected)
    // Retention deletes the leased segments meanwhile: still sent whole from the unlinked files.
    hot.deleteRecordsBefore(50)
    expect(hot.segmentBaseOffsets()[0]).toBeGreaterThan(0)
    expect(decodeAll(await sendfileRegions(r))).toEqual(expected)
    m.releaseLease(r.leaseId)
    // Released: the deleted segments' descriptors are gone and the cache is back within its bound.
    expect(() => fstatSync(r.regions[0]!.fd)).toThrow()
    expect(m.files.openCost).toBeLessThanOrEqual(BOUND)
    await m.close()
  })

  it('never closes a descriptor under an fsync in flight', async () => {
    const m = LogManager.open({ dataDir: dir.path, defaults, cleanShutdown: true, maxOpenFiles: BOUND })
    const logs = Array.from({ length: 40 }, (_, p) => m.create('f', p))
    for (const log of logs) log.append(makeBatch('x', 1, T0, 500), { leaderEpoch: 0 })
    const others = Array.from({ length: 60 }, (_, p) => m.create('g', p))
    for (const log of others) log.append(makeBatch('y'), { leaderEpoch: 0 })
    // Start every flush, then turn the cache over again and again while their fsyncs run off-thread.
    let done = false
    const flushes = Promise.all(logs.map((log) => log.flush())).finally(() => {
      done = true
    })
    let turns = 0
    while (!done) {
      for (const log of others) readAll(m, log)
      turns++
      await new Promise((resolve) => setImmediate(resolve))
    }
    await flushes
    expect(turns).toBeGreaterThan(0)
    for (const log of logs) expect(log.unflushedMessages()).toBe(0)
    expect(m.files.openCost).toBeLessThanOrEqual(BOUND)
    await m.close()
  })
})

describe('OpenFileCache', () => {
  it('closes the least recently used unpinned handle first, and a retired pinned one at its last unpin', () => {
    const closed: string[] = []
    const cache = new OpenFileCache(16)
    const handles = new Map<string, CachedHandle>()
    const open = (name: string, cost = 1): CachedHandle => {
      const h = new CachedHandle(cost, () => closed.push(name))
      cache.openWith(cost, () => 0)
      cache.admit(h)
      handles.set(name, h)
      return h
    }
    for (let i = 0; i < 16; i++) open(`f${i}`)
    expect(closed).toEqual([])
    cache.touch(handles.get('f0')!)
    cache.pin(handles.get('f1')!)
    open('g0')
    open('g1', 2)
    // f0 was used last, f1 is pinned: f2, f3, f4 go.
    expect(closed).toEqual(['f2', 'f3', 'f4'])
    expect(cache.openCost).toBe(16)
    cache.retire(handles.get('f1')!)
    expect(closed).not.toContain('f1')
    cache.unpin(handles.get('f1')!)
    expect(closed.at(-1)).toBe('f1')
    expect(cache.openCost).toBe(15)
  })

  it('closes more and retries when the process is out of descriptors, and says so when nothing is left to close', () => {
    const cache = new OpenFileCache(16)
    const closed: number[] = []
    for (let i = 0; i < 8; i++) {
      const h = new CachedHandle(1, () => closed.push(i))
      cache.admit(h)
    }
    let failures = 2
    const emfile = (): never => {
      throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' })
    }
    expect(cache.openWith(1, () => (failures-- > 0 ? emfile() : 42))).toBe(42)
    expect(closed).toEqual([0, 1, 2, 3, 4, 5])
    expect(() => cache.openWith(1, emfile)).toThrow(/out of open files/)
    expect(closed).toHaveLength(8)
  })

  it('divides log.segment.open.files.max among the shards, capped at half the open-file limit', () => {
    expect(openFilesPerThread(10000, 1, 1024)).toBe(512)
    expect(openFilesPerThread(10000, 4, 1_048_576)).toBe(2500)
    expect(openFilesPerThread(10000, 2, null)).toBe(5000)
    expect(openFilesPerThread(20, 8, null)).toBe(16)
  })
})
