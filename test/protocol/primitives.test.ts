import { describe, expect, it } from 'vitest'
import { ProtocolDecodeError, ProtocolEncodeError } from '../../src/protocol/primitives/errors.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import type { FileRegion } from '../../src/domain/file-region.js'
import { ZERO_UUID, recordsLength } from '../../src/protocol/primitives/types.js'
import { Writer } from '../../src/protocol/primitives/writer.js'

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')
const bytesOf = (f: (w: Writer) => void): Buffer => {
  const w = new Writer(8)
  f(w)
  return w.toBuffer()
}

describe('varints', () => {
  it('encodes unsigned varints at the byte-length edges', () => {
    const cases: [number, string][] = [
      [0, '00'],
      [1, '01'],
      [127, '7f'],
      [128, '8001'],
      [300, 'ac02'],
      [16383, 'ff7f'],
      [16384, '808001'],
      [2 ** 31 - 1, 'ffffffff07'],
      [2 ** 32 - 1, 'ffffffff0f'],
    ]
    for (const [v, h] of cases) {
      expect(bytesOf((w) => w.writeUvarint(v)).toString('hex')).toBe(h)
      const r = new Reader(hex(h))
      expect(r.readUvarint()).toBe(v)
      expect(r.remaining).toBe(0)
    }
  })

  it('zigzag-encodes signed varints', () => {
    const cases: [number, string][] = [
      [0, '00'],
      [-1, '01'],
      [1, '02'],
      [-64, '7f'],
      [64, '8001'],
      [2147483647, 'feffffff0f'],
      [-2147483648, 'ffffffff0f'],
    ]
    for (const [v, h] of cases) {
      expect(bytesOf((w) => w.writeVarint(v)).toString('hex')).toBe(h)
      expect(new Reader(hex(h)).readVarint()).toBe(v)
    }
  })

  it('round-trips varlongs at the edges', () => {
    const values = [0n, -1n, 1n, 63n, -64n, 64n, 2n ** 48n, -(2n ** 48n), 2n ** 56n + 5n, 2n ** 63n - 1n, -(2n ** 63n)]
    for (const v of values) {
      const b = bytesOf((w) => w.writeVarlong(v))
      const r = new Reader(b)
      expect(r.readVarlong()).toBe(v)
      expect(r.remaining).toBe(0)
    }
    expect(bytesOf((w) => w.writeVarlong(-(2n ** 63n))).toString('hex')).toBe('ffffffffffffffffff01')
    expect(bytesOf((w) => w.writeUvarlong(2n ** 64n - 1n)).length).toBe(10)
  })

  it('rejects over-long and truncated varints', () => {
    expect(() => new Reader(hex('ffffffffff01')).readUvarint()).toThrow(ProtocolDecodeError)
    expect(() => new Reader(hex('ffffffff1f')).readUvarint()).toThrow(/32 bits/)
    expect(() => new Reader(hex('8080')).readUvarint()).toThrow(/truncated/)
    expect(() => new Reader(hex('ffffffffffffffffff7f')).readUvarlong()).toThrow(/64 bits/)
    expect(() => new Reader(hex('ffffffffffffffffffff01')).readUvarlong()).toThrow(ProtocolDecodeError)
    expect(() => new Reader(hex('ff')).readVarlong()).toThrow(/truncated/)
  })

  it('rejects out-of-range values on encode', () => {
    const w = new Writer()
    expect(() => w.writeUvarint(-1)).toThrow(ProtocolEncodeError)
    expect(() => w.writeUvarint(2 ** 32)).toThrow(ProtocolEncodeError)
    expect(() => w.writeVarint(2 ** 31)).toThrow(ProtocolEncodeError)
    expect(() => w.writeVarlong(2n ** 63n)).toThrow(ProtocolEncodeError)
  })
})

describe('fixed-width integers', () => {
  it('writes big-endian and reads back signed values', () => {
    const b = bytesOf((w) => {
      w.writeInt8(-2)
      w.writeInt16(-300)
      w.writeUint16(65535)
      w.writeInt32(-2147483648)
      w.writeUint32(4294967295)
      w.writeInt64(-(2n ** 63n))
      w.writeFloat64(-1.5)
      w.writeBool(true)
    })
    expect(b.toString('hex')).toBe('fe' + 'fed4' + 'ffff' + '80000000' + 'ffffffff' + '8000000000000000' + 'bff8000000000000' + '01')
    const r = new Reader(b)
    expect([r.readInt8(), r.readInt16(), r.readUint16(), r.readInt32(), r.readUint32(), r.readInt64(), r.readFloat64(), r.readBool()]).toEqual([
      -2, -300, 65535, -2147483648, 4294967295, -(2n ** 63n), -1.5, true,
    ])
  })

  it('writes and reads int64 exactly on both sides of the 2^53 fast path', () => {
    const values = [0n, 1n, -1n, 2n ** 31n, -(2n ** 31n), 2n ** 32n - 1n, 2n ** 32n, -(2n ** 32n), 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n, -(2n ** 53n),
      2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n), 1732800000000n, -1732800000000n, 0x1fffffn * 2n ** 32n + 0xffffffffn, -0x200000n * 2n ** 32n, -0x200001n * 2n ** 32n + 5n]
    for (let i = 0; i < 500; i++) values.push(BigInt.asIntN(64, (BigInt(Math.floor(Math.random() * 2 ** 32)) << BigInt(Math.floor(Math.random() * 33))) ^ BigInt(Math.floor(Math.random() * 2 ** 32))))
    for (const v of values) {
      const reference = Buffer.alloc(8)
      reference.writeBigInt64BE(v)
      expect(bytesOf((w) => w.writeInt64(v)).equals(reference)).toBe(true)
      expect(new Reader(reference).readInt64()).toBe(v)
    }
  })

  it('rejects values outside the type', () => {
    const w = new Writer()
    expect(() => w.writeInt8(128)).toThrow(ProtocolEncodeError)
    expect(() => w.writeInt16(40000)).toThrow(ProtocolEncodeError)
    expect(() => w.writeInt32(2 ** 31)).toThrow(ProtocolEncodeError)
    expect(() => w.writeInt32(1.5)).toThrow(ProtocolEncodeError)
    expect(() => w.writeUint32(-1)).toThrow(ProtocolEncodeError)
    expect(() => w.writeInt64(2n ** 63n)).toThrow(ProtocolEncodeError)
    expect(() => w.writeInt64(-(2n ** 63n) - 1n)).toThrow(ProtocolEncodeError)
    expect(() => w.writeInt64(5 as unknown as bigint)).toThrow(ProtocolEncodeError)
    expect(w.length).toBe(0)
  })

  it('throws ProtocolDecodeError on truncation', () => {
    expect(() => new Reader(hex('00')).readInt16()).toThrow(ProtocolDecodeError)
    expect(() => new Reader(hex('000000')).readInt32()).toThrow(ProtocolDecodeError)
    expect(() => new Reader(hex('00000000000000')).readInt64()).toThrow(ProtocolDecodeError)
    expect(() => new Reader(Buffer.alloc(0)).readInt8()).toThrow(ProtocolDecodeError)
    // The limit is `end`, not the Buffer's length.
    expect(() => new Reader(hex('00000001'), 0, 2).readInt32()).toThrow(ProtocolDecodeError)
  })
})

describe('strings and bytes', () => {
  it('encodes classic, compact and nullable strings', () => {
    expect(bytesOf((w) => w.writeString('ab')).toString('hex')).toBe('00026162')
    expect(bytesOf((w) => w.writeNullableString(null)).toString('hex')).toBe('ffff')
    expect(bytesOf((w) => w.writeCompactString('ab')).toString('hex')).toBe('036162')
    expect(bytesOf((w) => w.writeCompactNullableString(null)).toString('hex')).toBe('00')
    expect(bytesOf((w) => w.writeCompactString('')).toString('hex')).toBe('01')
    expect(new Reader(hex('ffff')).readNullableString()).toBe(null)
    expect(new Reader(hex('00')).readCompactNullableString()).toBe(null)
    expect(new Reader(hex('01')).readCompactString()).toBe('')
  })

  it('counts UTF-8 bytes, not characters', () => {
    const s = 'ü✓😀'
    const b = bytesOf((w) => w.writeString(s))
    expect(b.readInt16BE(0)).toBe(Buffer.byteLength(s))
    expect(new Reader(b).readString()).toBe(s)
    expect(new Reader(bytesOf((w) => w.writeCompactString(s))).readCompactString()).toBe(s)
  })

  it('rejects null in non-nullable strings and bad lengths', () => {
    expect(() => new Reader(hex('ffff')).readString()).toThrow(/null/)
    expect(() => new Reader(hex('fffe')).readNullableString()).toThrow(/negative/)
    expect(() => new Reader(hex('00')).readCompactString()).toThrow(/null/)
    expect(() => new Reader(hex('0005616263')).readString()).toThrow(/truncated/)
    expect(() => new Reader(hex('ffffffff0f')).readCompactNullableString()).toThrow(ProtocolDecodeError)
    expect(() => new Writer().writeString(null as unknown as string)).toThrow(ProtocolEncodeError)
    expect(() => new Writer().writeString('x'.repeat(40000))).toThrow(ProtocolEncodeError)
  })

  it('encodes bytes and returns copies unless a view is asked for', () => {
    const input = bytesOf((w) => w.writeBytes(Buffer.from([1, 2, 3])))
    expect(input.toString('hex')).toBe('00000003010203')
    const copy = new Reader(input).readBytes()
    const view = new Reader(input).readBytes(true)
    input[4] = 9
    expect(copy[0]).toBe(1)
    expect(view[0]).toBe(9)
    expect(bytesOf((w) => w.writeCompactNullableBytes(null)).toString('hex')).toBe('00')
    expect(bytesOf((w) => w.writeNullableBytes(null)).toString('hex')).toBe('ffffffff')
    expect(() => new Reader(hex('ffffffff')).readBytes()).toThrow(/null/)
    expect(() => new Reader(hex('fffffff0')).readNullableBytes()).toThrow(/negative/)
    expect(() => new Reader(hex('7fffffff00')).readBytes()).toThrow(/truncated/)
  })
})

describe('uuid', () => {
  it('uses the 22-character base64url form; zero is all A', () => {
    expect(new Reader(Buffer.alloc(16)).readUuid()).toBe(ZERO_UUID)
    const raw = Buffer.from('0123456789abcdeffedcba9876543210', 'hex')
    const s = new Reader(raw).readUuid()
    expect(s).toHaveLength(22)
    expect(bytesOf((w) => w.writeUuid(s)).equals(raw)).toBe(true)
  })

  it('rejects malformed uuids', () => {
    const w = new Writer()
    expect(() => w.writeUuid('short')).toThrow(ProtocolEncodeError)
    expect(() => w.writeUuid('AAAAAAAAAAAAAAAAAAAAA+')).toThrow(ProtocolEncodeError)
    // Last character would carry bits beyond 128.
    expect(() => w.writeUuid('AAAAAAAAAAAAAAAAAAAAAB')).toThrow(ProtocolEncodeError)
    expect(() => new Reader(Buffer.alloc(15)).readUuid()).toThrow(ProtocolDecodeError)
  })
})

describe('arrays', () => {
  it('checks counts against the bytes left before allocating', () => {
    expect(() => new Reader(hex('7fffffff00000000000000')).readArrayLength(1, false)).toThrow(/cannot fit/)
    expect(() => new Reader(hex('00000003 0000')).readArrayLength(1, false)).toThrow(/cannot fit/)
    expect(new Reader(hex('00000002 0000')).readArrayLength(1, false)).toBe(2)
    expect(() => new Reader(hex('00000002 0000')).readArrayLength(4, false)).toThrow(/cannot fit/)
    expect(() => new Reader(hex('ffffffff0f')).readCompactArrayLength(1, false)).toThrow(/cannot fit/)
  })

  it('checks counts against the element budget of the whole input, every depth together', () => {
    // Three arrays of 2, 1 and 2 one-byte elements (counts classic, compact, classic).
    const input = hex('00000002 0000 02 00 00000002 0000')
    const r = new Reader(input)
    r.elementBudget = 4
    expect(r.readArrayLength(1, false)).toBe(2)
    r.skip(2)
    expect(r.readCompactArrayLength(1, false)).toBe(1)
    r.skip(1)
    expect(() => r.readArrayLength(1, false)).toThrow(/beyond the 1 elements/)
    expect(new Reader(input).readArrayLength(1, false)).toBe(2)
  })

  it('handles null arrays only where allowed', () => {
    expect(new Reader(hex('ffffffff')).readArrayLength(1, true)).toBe(-1)
    expect(() => new Reader(hex('ffffffff')).readArrayLength(1, false)).toThrow(/null/)
    expect(() => new Reader(hex('fffffffe')).readArrayLength(1, true)).toThrow(/negative/)
    expect(new Reader(hex('00')).readCompactArrayLength(1, true)).toBe(-1)
    expect(() => new Reader(hex('00')).readCompactArrayLength(1, false)).toThrow(/null/)
    expect(new Reader(hex('01')).readCompactArrayLength(1, false)).toBe(0)
    expect(bytesOf((w) => w.writeArrayLength(-1, true)).toString('hex')).toBe('00')
    expect(bytesOf((w) => w.writeArrayLength(3, true)).toString('hex')).toBe('04')
    expect(bytesOf((w) => w.writeArrayLength(-1, false)).toString('hex')).toBe('ffffffff')
  })
})

describe('tagged fields', () => {
  it('keeps unknown tagged fields in order', () => {
    const fields = [
      { tag: 3, data: Buffer.from([1]) },
      { tag: 200, data: Buffer.from([2, 3]) },
    ]
    const b = bytesOf((w) => w.writeUnknownTaggedFields(fields))
    expect(b.toString('hex')).toBe('02' + '030101' + 'c801020203')
    expect(new Reader(b).readUnknownTaggedFields()).toEqual(fields)
    expect(new Reader(hex('00')).readUnknownTaggedFields()).toBeUndefined()
    expect(() => new Reader(hex('01 05 03 01')).readUnknownTaggedFields()).toThrow(/truncated/)
  })

  it('fences a known tagged field to its declared size', () => {
    const r = new Reader(hex('0102 03'))
    const limit = r.pushLimit(2)
    expect(() => r.readInt32()).toThrow(/truncated/)
    expect(r.readInt8()).toBe(1)
    expect(() => r.popLimit(limit)).toThrow(/unread/)
    expect(r.readInt8()).toBe(2)
    r.popLimit(limit)
    expect(r.readInt8()).toBe(3)
    expect(() => new Reader(hex('01')).pushLimit(2)).toThrow(ProtocolDecodeError)
  })

  it('refuses an unknown tag that duplicates a known one', () => {
    const w = new Writer()
    expect(() => w.writeUnknownTagsBelow([{ tag: 1, data: Buffer.alloc(0) }], 0, 1)).toThrow(ProtocolEncodeError)
  })
})

describe('Writer', () => {
  it('grows past its initial capacity and keeps reserved positions patchable', () => {
    const w = new Writer(8)
    const at = w.reserveInt32()
    for (let i = 0; i < 1000; i++) w.writeInt32(i)
    w.patchInt32(at, w.length - 4)
    const b = w.toBuffer()
    expect(b.length).toBe(4004)
    expect(b.readInt32BE(0)).toBe(4000)
    expect(b.readInt32BE(4 + 999 * 4)).toBe(999)
  })

  it('keeps file regions and large buffers as separate chunks without copying', () => {
    const w = new Writer(16)
    const at = w.reserveInt32()
    w.writeInt16(7)
    const region: FileRegion = { fd: 42, position: 100, length: 5000 }
    const big = Buffer.alloc(4096, 1)
    w.writeRecords({ chunks: [big, region] }, false)
    w.writeInt8(1)
    w.patchInt32(at, 123)
    const chunks = w.chunks()
    expect(chunks).toHaveLength(4)
    expect((chunks[0] as Buffer).toString('hex')).toBe('0000007b' + '0007' + '00002388')
    expect(chunks[1]).toBe(big)
    expect(chunks[2]).toBe(region)
    expect((chunks[3] as Buffer).toString('hex')).toBe('01')
    expect(w.length).toBe(4 + 2 + 4 + 4096 + 5000 + 1)
    expect(recordsLength({ chunks: [big, region] })).toBe(9096)
    expect(() => w.toBuffer()).toThrow(ProtocolEncodeError)
  })

  it('concatenates linked buffers in toBuffer', () => {
    const w = new Writer()
    const big = Buffer.alloc(2000, 7)
    w.writeInt8(1)
    w.writeBytes(big)
    w.writeInt8(2)
    const b = w.toBuffer()
    expect(b.length).toBe(1 + 4 + 2000 + 1)
    expect(b[0]).toBe(1)
    expect(b.readInt32BE(1)).toBe(2000)
    expect(b[5 + 1999]).toBe(7)
    expect(b[b.length - 1]).toBe(2)
  })
})
