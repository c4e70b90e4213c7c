import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'

const ascending = Uint8Array.from({ length: 32 }, (_, i) => i)

// Published CRC32C check values (RFC 3720 appendix B.4 and the "123456789" check).
const vectors: Array<[string, Uint8Array, number]> = [
  ['123456789', Buffer.from('123456789'), 0xe3069283],
  ['32 zero bytes', new Uint8Array(32), 0x8a9136aa],
  ['32 bytes of 0xFF', new Uint8Array(32).fill(0xff), 0x62a8ab43],
  ['bytes 0..31 ascending', ascending, 0x46dd794e],
  ['empty', new Uint8Array(0), 0],
]

describe('crc32c', () => {
  it.each(vectors)('%s', (_name, data, expected) => {
    expect(native.crc32c(data)).toBe(expected)
    expect(native.crc32cSoftware(data)).toBe(expected)
  })

  it('reports which kernel it uses', () => {
    expect(typeof native.crc32cHardware()).toBe('boolean')
  })

  it('chains through the seed', () => {
    const data = randomBytes(1000)
    for (const cut of [0, 1, 7, 8, 9, 500, 999, 1000]) {
      const a = data.subarray(0, cut)
      const b = data.subarray(cut)
      expect(native.crc32c(b, native.crc32c(a))).toBe(native.crc32c(data))
      expect(native.crc32cSoftware(b, native.crc32cSoftware(a))).toBe(native.crc32cSoftware(data))
    }
    // Empty input leaves the seed unchanged.
    expect(native.crc32c(new Uint8Array(0), 0xdeadbeef)).toBe(0xdeadbeef)
  })

  it('respects byteOffset and length of views', () => {
    const backing = new Uint8Array(64).fill(0xaa)
    backing.set(Buffer.from('123456789'), 13)
    const view = new Uint8Array(backing.buffer, 13, 9)
    expect(native.crc32c(view)).toBe(0xe3069283)
    expect(native.crc32cSoftware(view)).toBe(0xe3069283)
    const buf = Buffer.from(backing.buffer, 13, 9)
    expect(native.crc32c(buf)).toBe(0xe3069283)
  })

  it('hardware and software agree on random data, lengths and alignments', () => {
    const pool = randomBytes(70_000)
    for (let i = 0; i < 500; i++) {
      const offset = Math.floor(Math.random() * 64)
      const length = i < 100 ? i : Math.floor(Math.random() * (pool.length - offset))
      const view = pool.subarray(offset, offset + length)
      const seed = Math.floor(Math.random() * 0x1_0000_0000)
      expect(native.crc32c(view, seed)).toBe(native.crc32cSoftware(view, seed))
    }
  })

  it('rejects what is not bytes or not a uint32 seed', () => {
    expect(() => native.crc32c('abc' as unknown as Uint8Array)).toThrow(TypeError)
    expect(() => native.crc32c(new Uint16Array(4) as unknown as Uint8Array)).toThrow(TypeError)
    expect(() => native.crc32c(new Uint8Array(4), -1)).toThrow(RangeError)
    expect(() => native.crc32c(new Uint8Array(4), 2 ** 32)).toThrow(RangeError)
    expect(() => native.crc32c(new Uint8Array(4), 1.5)).toThrow(RangeError)
  })
})
