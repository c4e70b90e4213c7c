import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import type { NativeIndexFile } from '../../src/addon/index.js'

let dir: string
const open: NativeIndexFile[] = []

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'skein-index-'))
})

afterEach(() => {
  for (const index of open.splice(0)) {
    try {
      index.close(false)
    } catch {
      // already closed by the test
    }
  }
  rmSync(dir, { recursive: true, force: true })
})

function openIndex(name: string, entrySize: 8 | 12, maxBytes: number): NativeIndexFile {
  const index = native.openIndex(join(dir, name), entrySize, maxBytes)
  open.push(index)
  return index
}

// Oracle: linear scans over the keys we appended.
function floorOf(keys: number[], target: number): number {
  const exact = keys.indexOf(target)
  if (exact >= 0) return exact
  let pos = -1
  for (let i = 0; i < keys.length; i++) if (keys[i]! <= target) pos = i
  return pos
}

function ceilingOf(keys: number[], target: number): number {
  return keys.findIndex((k) => k >= target)
}

describe('offset index (8-byte entries)', () => {
  it('answers -1 when empty', () => {
    const index = openIndex('empty.index', 8, 8 * 10)
    expect(index.entries()).toBe(0)
    expect(index.maxEntries()).toBe(10)
    expect(index.isFull()).toBe(false)
    expect(index.lookup(0)).toBe(-1)
    expect(index.lookup(1e9)).toBe(-1)
    expect(index.lookupCeiling(0)).toBe(-1)
  })

  it('appends and looks up floor and ceiling, before first and after last', () => {
    const index = openIndex('a.index', 8, 8 * 100)
    const keys = [5, 10, 20, 40, 80]
    keys.forEach((k, i) => index.append(k, i * 1000))
    expect(index.entries()).toBe(5)
    expect(index.lookup(4)).toBe(-1)
    expect(index.lookup(5)).toBe(0)
    expect(index.lookup(19)).toBe(1)
    expect(index.lookup(20)).toBe(2)
    expect(index.lookup(1000)).toBe(4)
    expect(index.lookupCeiling(0)).toBe(0)
    expect(index.lookupCeiling(11)).toBe(2)
    expect(index.lookupCeiling(80)).toBe(4)
    expect(index.lookupCeiling(81)).toBe(-1)
    expect(index.keyAt(3)).toBe(40)
    expect(index.valueAt(3)).toBe(3000)
    expect(() => index.keyAt(5)).toThrow(RangeError)
    expect(() => index.valueAt(-1)).toThrow(RangeError)
  })

  it('matches a linear-scan oracle across the warm and the cold section (100k entries)', () => {
    const n = 100_000
    const index = openIndex('big.index', 8, 8 * n)
    const keys: number[] = []
    let key = 0
    for (let i = 0; i < n; i++) {
      key += 1 + (i % 7)
      keys.push(key)
      index.append(key, i * 64)
    }
    expect(index.isFull()).toBe(true)
    // Warm section = the last 8192 / 8 = 1024 entries; probe both sides of its boundary and far away.
    const boundary = n - 1 - 1024
    const probes = [
      -5, 0, keys[0]!, keys[0]! + 1,
      keys[boundary - 1]!, keys[boundary]!, keys[boundary]! + 1, keys[boundary + 1]!,
      keys[n - 1]!, keys[n - 1]! + 10, keys[50_000]! - 1, keys[123]!,
    ]
    for (let i = 0; i < 300; i++) probes.push(Math.floor(Math.random() * (keys[n - 1]! + 20)) - 10)
    for (const t of probes) {
      const floor = floorFast(keys, t)
      const ceiling = lowerBound(keys, t)
      expect(index.lookup(t)).toBe(floor)
      expect(index.lookupCeiling(t)).toBe(ceiling < n ? ceiling : -1)
      if (floor >= 0) expect(index.valueAt(floor)).toBe(floor * 64)
    }
    // Every target in a window straddling the warm boundary, against a linear scan of that window.
    const start = boundary - 150
    const window = keys.slice(start, boundary + 150)
    for (let t = window[0]!; t <= window[window.length - 1]!; t++) {
      expect(index.lookup(t)).toBe(start + floorOf(window, t))
      expect(index.lookupCeiling(t)).toBe(start + ceilingOf(window, t))
    }
    // And the cold start of the file.
    const head = keys.slice(0, 300)
    for (let t = -1; t <= head[head.length - 1]!; t++) {
      expect(index.lookup(t)).toBe(floorOf(head, t))
      expect(index.lookupCeiling(t)).toBe(ceilingOf(head, t))
    }
  })

  it('throws when full and when keys decrease; equal keys are accepted', () => {
    const index = openIndex('full.index', 8, 8 * 3 + 5) // rounded down to 3 entries
    expect(index.maxEntries()).toBe(3)
    index.append(1, 0)
    expect(() => index.append(0, 10)).toThrow(/smaller than the last key/)
    index.append(1, 10)
    index.append(2, 20)
    expect(index.isFull()).toBe(true)
    expect(() => index.append(3, 30)).toThrow(/full/)
    expect(index.entries()).toBe(3)
    expect(() => index.append(-1, 0)).toThrow(RangeError)
    expect(() => index.append(2 ** 32, 0)).toThrow(RangeError)
  })

  it('truncates, resizes and trims on close; reopening keeps the entries', () => {
    const path = join(dir, 'r.index')
    const index = native.openIndex(path, 8, 8 * 10)
    expect(statSync(path).size).toBe(80) // preallocated
    for (let i = 0; i < 6; i++) index.append(i * 10, i)
    index.truncateToEntries(4)
    expect(index.entries()).toBe(4)
    expect(index.lookup(55)).toBe(3)
    index.truncateToEntries(9) // nothing to drop
    expect(index.entries()).toBe(4)
    index.append(35, 99) // appends go after the truncation point
    expect(index.keyAt(4)).toBe(35)

    index.resize(8 * 1000)
    expect(index.maxEntries()).toBe(1000)
    expect(statSync(path).size).toBe(8000)
    expect(index.entries()).toBe(5)
    expect(index.keyAt(4)).toBe(35)
    index.resize(0) // never below the used size
    expect(index.maxEntries()).toBe(5)
    expect(index.isFull()).toBe(true)
    expect(statSync(path).size).toBe(40)
    index.resize(8 * 20)
    index.append(36, 100)
    index.flush()
    index.close(true)
    expect(statSync(path).size).toBe(6 * 8)

    const again = native.openIndex(path, 8, 8 * 20)
    open.push(again)
    expect(again.entries()).toBe(6)
    expect(again.maxEntries()).toBe(20)
    expect([0, 1, 2, 3, 4, 5].map((i) => again.keyAt(i))).toEqual([0, 10, 20, 30, 35, 36])
    expect(again.valueAt(5)).toBe(100)
    again.append(40, 1)
    expect(again.lookup(39)).toBe(5)
  })

  it('reopens with a smaller maxBytes without losing entries', () => {
    const path = join(dir, 's.index')
    const index = native.openIndex(path, 8, 800)
    for (let i = 0; i < 10; i++) index.append(i, i)
    index.close(true)
    const again = native.openIndex(path, 8, 16)
    open.push(again)
    expect(again.entries()).toBe(10)
    expect(again.maxEntries()).toBe(10)
    expect(again.isFull()).toBe(true)
  })

  it('writes big-endian entries', () => {
    const path = join(dir, 'be.index')
    const index = native.openIndex(path, 8, 80)
    index.append(0x01020304, 0x0a0b0c0d)
    index.append(0xfffffffe, 0xffffffff)
    index.close(true)
    const bytes = readFileSync(path)
    expect(bytes.length).toBe(16)
    expect(bytes.readUInt32BE(0)).toBe(0x01020304)
    expect(bytes.readUInt32BE(4)).toBe(0x0a0b0c0d)
    expect(bytes.readUInt32BE(8)).toBe(0xfffffffe)
    expect(bytes.readUInt32BE(12)).toBe(0xffffffff)
    expect([...bytes.subarray(0, 4)]).toEqual([1, 2, 3, 4])
  })

  it('reads entries from a file written with fs', () => {
    const path = join(dir, 'fs.index')
    const bytes = Buffer.alloc(24)
    for (let i = 0; i < 3; i++) {
      bytes.writeUInt32BE(i * 100, i * 8)
      bytes.writeUInt32BE(i * 4096, i * 8 + 4)
    }
    writeFileSync(path, bytes)
    const index = openIndex('fs.index', 8, 1024)
    expect(index.entries()).toBe(3)
    expect(index.lookup(150)).toBe(1)
    expect(index.valueAt(2)).toBe(8192)
  })

  it('throws on use after close instead of crashing', () => {
    const index = native.openIndex(join(dir, 'c.index'), 8, 80)
    index.append(1, 1)
    index.close(false)
    for (const use of [
      () => index.entries(),
      () => index.maxEntries(),
      () => index.isFull(),
      () => index.append(2, 2),
      () => index.lookup(1),
      () => index.lookupCeiling(1),
      () => index.keyAt(0),
      () => index.valueAt(0),
      () => index.truncateToEntries(0),
      () => index.resize(160),
      () => index.flush(),
      () => index.close(true),
    ]) {
      expect(use).toThrow(/closed/)
    }
  })

  it('rejects bad arguments to openIndex', () => {
    expect(() => native.openIndex(join(dir, 'x.index'), 10 as 8, 80)).toThrow(RangeError)
    expect(() => native.openIndex(join(dir, 'x.index'), 8, -1)).toThrow(RangeError)
    expect(() => native.openIndex(join(dir, 'x.index'), 8, 2 ** 40)).toThrow(RangeError)
    expect(() => native.openIndex(join(dir, 'missing-dir', 'x.index'), 8, 80)).toThrow(/ENOENT/)
    expect(() => native.openIndex(dir, 8, 80)).toThrow(/EISDIR|regular file/)
  })

  it('handles a zero-size index (no mapping)', () => {
    const index = openIndex('zero.index', 8, 0)
    expect(index.maxEntries()).toBe(0)
    expect(index.isFull()).toBe(true)
    expect(() => index.append(1, 1)).toThrow(/full/)
    expect(index.lookup(1)).toBe(-1)
    index.flush()
    index.resize(16)
    index.append(1, 1)
    expect(index.lookup(1)).toBe(0)
  })
})

describe('time index (12-byte entries)', () => {
  it('stores timestamps above 2^32 exactly, big-endian', () => {
    const path = join(dir, 't.timeindex')
    const index = native.openIndex(path, 12, 12 * 10)
    const t0 = 1_700_000_000_000 // > 2^32
    index.append(t0, 0)
    index.append(t0 + 1, 7)
    index.append(2 ** 53 - 1, 9)
    expect(index.keyAt(0)).toBe(t0)
    expect(index.keyAt(2)).toBe(2 ** 53 - 1)
    expect(index.lookup(t0 + 0.5)).toBe(0)
    expect(index.lookup(t0 + 1)).toBe(1)
    expect(index.lookupCeiling(t0 + 2)).toBe(2)
    index.close(true)
    const bytes = readFileSync(path)
    expect(bytes.length).toBe(36)
    expect(bytes.readBigInt64BE(0)).toBe(BigInt(t0))
    expect(bytes.readUInt32BE(8)).toBe(0)
    expect(bytes.readBigInt64BE(12)).toBe(BigInt(t0 + 1))
    expect(bytes.readUInt32BE(20)).toBe(7)
    expect(bytes.readBigInt64BE(24)).toBe(BigInt(2 ** 53 - 1))
  })

  it('handles repeated timestamps: exact hits return the first, ceilings the first', () => {
    const index = openIndex('dup.timeindex', 12, 12 * 20)
    const keys = [100, 200, 200, 200, 300, 300, 400]
    keys.forEach((k, i) => index.append(k, i))
    expect(index.lookup(200)).toBe(1)
    expect(index.lookup(250)).toBe(3)
    expect(index.lookup(300)).toBe(4)
    expect(index.lookup(99)).toBe(-1)
    expect(index.lookup(10_000)).toBe(6)
    expect(index.lookupCeiling(150)).toBe(1)
    expect(index.lookupCeiling(300)).toBe(4)
    expect(index.lookupCeiling(401)).toBe(-1)
    for (let t = 90; t <= 410; t += 5) {
      expect(index.lookup(t)).toBe(floorOf(keys, t))
      expect(index.lookupCeiling(t)).toBe(ceilingOf(keys, t))
    }
    expect(() => index.append(399, 0)).toThrow(/smaller than the last key/)
  })

  it('matches the oracle across warm and cold sections with duplicates (100k entries)', () => {
    const n = 100_000
    const index = openIndex('big.timeindex', 12, 12 * n)
    const keys: number[] = []
    let ts = 1_600_000_000_000
    for (let i = 0; i < n; i++) {
      if (i % 3 !== 0) ts += 1 + (i % 5) // every third entry repeats the previous timestamp
      keys.push(ts)
      index.append(ts, i)
    }
    const warmBoundary = n - 1 - Math.floor(8192 / 12)
    const probes = [keys[0]! - 1, keys[0]!, keys[warmBoundary]!, keys[warmBoundary]! + 1, keys[warmBoundary - 1]!, keys[n - 1]!, keys[n - 1]! + 1]
    for (let i = 0; i < 300; i++) probes.push(keys[0]! - 5 + Math.floor(Math.random() * (keys[n - 1]! - keys[0]! + 10)))
    for (const t of probes) {
      const floor = floorFast(keys, t)
      const ceiling = lowerBound(keys, t)
      expect(index.lookup(t)).toBe(floor)
      expect(index.lookupCeiling(t)).toBe(ceiling < n ? ceiling : -1)
    }
  })

  it('rejects timestamps that are not safe integers', () => {
    const index = openIndex('bad.timeindex', 12, 120)
    expect(() => index.append(2 ** 53, 0)).toThrow(RangeError)
    expect(() => index.append(1.5, 0)).toThrow(RangeError)
    expect(() => index.append(Number.NaN, 0)).toThrow(RangeError)
    expect(() => index.lookup(Number.NaN)).toThrow(RangeError)
  })
})

// Independent oracle for large arrays: first index with key >= target (plain binary search over the
// JS array), and the floor rule built from it.
function lowerBound(keys: number[], target: number): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys[mid]! < target) lo = mid + 1
    else hi = mid
  }
  return lo
}

function floorFast(keys: number[], target: number): number {
  const lb = lowerBound(keys, target)
  if (lb < keys.length && keys[lb] === target) return lb
  return lb - 1
}

describe('descriptors', () => {
  it('an open index holds its mapping but no descriptor; resize and close(trim) reopen the file', () => {
    const fds = (): number => readdirSync('/proc/self/fd').length
    const before = fds()
    const index = openIndex('fd.index', 8, 8 * 100)
    expect(fds()).toBe(before)
    for (let i = 0; i < 10; i++) index.append(i, i * 10)
    index.resize(8 * 20)
    expect(fds()).toBe(before)
    expect(statSync(join(dir, 'fd.index')).size).toBe(8 * 20)
    expect(index.lookup(7)).toBe(7)
    index.flush()
    index.close(true)
    expect(fds()).toBe(before)
    expect(statSync(join(dir, 'fd.index')).size).toBe(8 * 10)
    // A file removed while mapped: close(trim) has nothing to trim and does not throw.
    const gone = openIndex('gone.index', 8, 8 * 10)
    gone.append(1, 1)
    rmSync(join(dir, 'gone.index'))
    expect(gone.lookup(1)).toBe(0)
    gone.close(true)
  })
})
