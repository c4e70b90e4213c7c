// The JS baselines in bench/lib must compute the same answers as the native code they are compared
// with, or the benchmark ratios mean nothing.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { crc32cJs } from '../../bench/lib/crc32c-js.js'
import { JsOffsetIndex } from '../../bench/lib/js-index.js'
import { native } from '../../src/addon/index.js'

describe('bench baselines', () => {
  it('crc32cJs matches the known vectors and the native CRC', () => {
    expect(crc32cJs(Buffer.from('123456789'))).toBe(0xe3069283)
    expect(crc32cJs(new Uint8Array(32))).toBe(0x8a9136aa)
    expect(crc32cJs(new Uint8Array(0))).toBe(0)
    const pool = randomBytes(10_000)
    for (let i = 0; i < 100; i++) {
      const offset = Math.floor(Math.random() * 16)
      const view = pool.subarray(offset, offset + Math.floor(Math.random() * 9000))
      const seed = Math.floor(Math.random() * 0x1_0000_0000)
      expect(crc32cJs(view, seed)).toBe(native.crc32c(view, seed))
    }
  })

  it('JsOffsetIndex answers like the native index on the same file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-baseline-'))
    try {
      const path = join(dir, 'b.index')
      const index = native.openIndex(path, 8, 8 * 5000)
      let key = 10
      for (let i = 0; i < 5000; i++) {
        key += i % 4 // includes repeated keys
        index.append(key, i)
      }
      index.flush()
      const js = new JsOffsetIndex(readFileSync(path))
      expect(js.entries).toBe(5000)
      for (let t = 0; t <= key + 2; t += 3) expect(js.lookup(t)).toBe(index.lookup(t))
      index.close(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
