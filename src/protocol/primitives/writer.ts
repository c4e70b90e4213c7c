// Appendable buffer list. Small writes go into one current Buffer that doubles when full (a
// reallocation copies only the current run). File regions and large Buffers are appended as
// chunks of their own, so record data is never copied: `chunks()` hands the list to a socket
// writer that sends Buffers with write and regions with sendfile.

import { ProtocolEncodeError } from './errors.js'
import type { FileRegion } from '../../domain/file-region.js'
import type { Records, TaggedField } from './types.js'

const MIN_CAPACITY = 64
// Buffers at least this large are linked as their own chunk rather than copied.
const LINK_THRESHOLD = 1024

const UUID_RE = /^[A-Za-z0-9_-]{21}[AQgw]$/

export class Writer {
  private done: (Buffer | FileRegion)[] = []
  private doneLength = 0
  private hasRegions = false
  private buf: Buffer
  // The current run is buf[start, pos); bytes before start were handed to `done`.
  private start = 0
  private pos = 0

  constructor(initialCapacity = 256) {
    this.buf = Buffer.allocUnsafe(Math.max(initialCapacity, MIN_CAPACITY))
  }

  /** Bytes written so far, regions included. */
  get length(): number {
    return this.doneLength + this.pos - this.start
  }

  private ensure(n: number): void {
    if (this.pos + n > this.buf.length) this.grow(n)
  }

  private grow(n: number): void {
    const run = this.pos - this.start
    const size = Math.max(this.buf.length * 2, run + n, MIN_CAPACITY)
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, this.start, this.pos)
    this.buf = next
    this.start = 0
    this.pos = run
  }

  private closeRun(): void {
    if (this.pos > this.start) {
      this.done.push(this.buf.subarray(this.start, this.pos))
      this.doneLength += this.pos - this.start
      this.start = this.pos
    }
  }

  writeInt8(v: number): void {
    if ((v << 24) >> 24 !== v) throw new ProtocolEncodeError(`int8 out of range: ${v}`)
    this.ensure(1)
    this.buf[this.pos++] = v & 0xff
  }

  writeUint8(v: number): void {
    if ((v & 0xff) !== v) throw new ProtocolEncodeError(`uint8 out of range: ${v}`)
    this.ensure(1)
    this.buf[this.pos++] = v
  }

  writeBool(v: boolean): void {
    this.ensure(1)
    this.buf[this.pos++] = v ? 1 : 0
  }

  writeInt16(v: number): void {
    if ((v << 16) >> 16 !== v) throw new ProtocolEncodeError(`int16 out of range: ${v}`)
    this.ensure(2)
    const b = this.buf
    const p = this.pos
    b[p] = (v >>> 8) & 0xff
    b[p + 1] = v & 0xff
    this.pos = p + 2
  }

  writeUint16(v: number): void {
    if ((v & 0xffff) !== v) throw new ProtocolEncodeError(`uint16 out of range: ${v}`)
    this.ensure(2)
    const b = this.buf
    const p = this.pos
    b[p] = v >>> 8
    b[p + 1] = v & 0xff
    this.pos = p + 2
  }

  writeInt32(v: number): void {
    if ((v | 0) !== v) throw new ProtocolEncodeError(`int32 out of range: ${v}`)
    this.ensure(4)
    const b = this.buf
    const p = this.pos
    b[p] = v >>> 24
    b[p + 1] = (v >>> 16) & 0xff
    b[p + 2] = (v >>> 8) & 0xff
    b[p + 3] = v & 0xff
    this.pos = p + 4
  }

  writeUint32(v: number): void {
    if (v >>> 0 !== v) throw new ProtocolEncodeError(`uint32 out of range: ${v}`)
    this.ensure(4)
    const b = this.buf
    const p = this.pos
    b[p] = v >>> 24
    b[p + 1] = (v >>> 16) & 0xff
    b[p + 2] = (v >>> 8) & 0xff
    b[p + 3] = v & 0xff
    this.pos = p + 4
  }

  writeInt64(v: bigint): void {
    if (typeof v !== 'bigint') throw new ProtocolEncodeError(`int64 out of range: ${String(v)}`)
    // Offsets, timestamps and producer ids fit in +-2^53: written with number arithmetic, without the
    // BigInt temporaries that the range check and writeBigInt64BE allocate (several per call, on every
    // partition of every Fetch and Produce answer).
    const n = Number(v)
    if (Number.isSafeInteger(n)) {
      this.ensure(8)
      const hi = Math.floor(n / 4294967296)
      this.buf.writeInt32BE(hi, this.pos)
      this.buf.writeUInt32BE(n - hi * 4294967296, this.pos + 4)
      this.pos += 8
      return
    }
    if (BigInt.asIntN(64, v) !== v) throw new ProtocolEncodeError(`int64 out of range: ${String(v)}`)
    this.ensure(8)
    this.buf.writeBigInt64BE(v, this.pos)
    this.pos += 8
  }

  writeFloat64(v: number): void {
    this.ensure(8)
    this.buf.writeDoubleBE(v, this.pos)
    this.pos += 8
  }

  /** Unsigned LEB128 of a 32-bit value. */
  writeUvarint(v: number): void {
    if (v >>> 0 !== v) throw new ProtocolEncodeError(`uvarint out of range: ${v}`)
    this.ensure(5)
    const b = this.buf
    let p = this.pos
    while (v > 0x7f) {
      b[p++] = (v & 0x7f) | 0x80
      v >>>= 7
    }
    b[p++] = v
    this.pos = p
  }

  /** Zigzag signed 32-bit varint. */
  writeVarint(v: number): void {
    if ((v | 0) !== v) throw new ProtocolEncodeError(`varint out of range: ${v}`)
    this.writeUvarint(((v << 1) ^ (v >> 31)) >>> 0)
  }

  writeUvarlong(v: bigint): void {
    if (BigInt.asUintN(64, v) !== v) throw new ProtocolEncodeError(`uvarlong out of range: ${String(v)}`)
    this.ensure(10)
    const b = this.buf
    let p = this.pos
    while (v > 0x7fn) {
      b[p++] = Number(v & 0x7fn) | 0x80
      v >>= 7n
    }
    b[p++] = Number(v)
    this.pos = p
  }

  /** Zigzag signed 64-bit varint. */
  writeVarlong(v: bigint): void {
    if (BigInt.asIntN(64, v) !== v) throw new ProtocolEncodeError(`varlong out of range: ${String(v)}`)
    this.writeUvarlong(BigInt.asUintN(64, (v << 1n) ^ (v >> 63n)))
  }

  writeUuid(v: string): void {
    if (typeof v !== 'string' || !UUID_RE.test(v)) throw new ProtocolEncodeError(`not a base64url UUID: ${String(v)}`)
    this.ensure(16)
    this.buf.write(v, this.pos, 16, 'base64url')
    this.pos += 16
  }

  private utf8(s: string, len: number): void {
    this.ensure(len)
    if (len === s.length) {
      // ASCII: byte length equals character count, skip the encoder.
      const b = this.buf
      const p = this.pos
      for (let i = 0; i < len; i++) b[p + i] = s.charCodeAt(i)
    } else {
      this.buf.write(s, this.pos, len, 'utf8')
    }
    this.pos += len
  }

  private stringLength(s: string): number {
    if (typeof s !== 'string') throw new ProtocolEncodeError(`null or non-string in a non-nullable string: ${String(s)}`)
    const len = Buffer.byteLength(s, 'utf8')
    if (len > 0x7fff) throw new ProtocolEncodeError(`string of ${len} bytes exceeds 32767`)
    return len
  }

  writeString(s: string): void {
    const len = this.stringLength(s)
    this.writeInt16(len)
    this.utf8(s, len)
  }

  writeNullableString(s: string | null): void {
    if (s === null) this.writeInt16(-1)
    else this.writeString(s)
  }

  writeCompactString(s: string): void {
    const len = this.stringLength(s)
    this.writeUvarint(len + 1)
    this.utf8(s, len)
  }

  writeCompactNullableString(s: string | null): void {
    if (s === null) this.writeUvarint(0)
    else this.writeCompactString(s)
  }

  /** Raw bytes, no length prefix. Large buffers are linked, not copied. */
  writeRaw(b: Buffer): void {
    if (b.length >= LINK_THRESHOLD) {
      this.closeRun()
      this.done.push(b)
      this.doneLength += b.length
      return
    }
    this.ensure(b.length)
    b.copy(this.buf, this.pos)
    this.pos += b.length
  }

  private checkBytes(b: Buffer): void {
    if (!Buffer.isBuffer(b)) throw new ProtocolEncodeError('null or non-Buffer in a non-nullable bytes field')
  }

  writeBytes(b: Buffer): void {
    this.checkBytes(b)
    this.writeInt32(b.length)
    this.writeRaw(b)
  }

  writeNullableBytes(b: Buffer | null): void {
    if (b === null) this.writeInt32(-1)
    else this.writeBytes(b)
  }

  writeCompactBytes(b: Buffer): void {
    this.checkBytes(b)
    this.writeUvarint(b.length + 1)
    this.writeRaw(b)
  }

  writeCompactNullableBytes(b: Buffer | null): void {
    if (b === null) this.writeUvarint(0)
    else this.writeCompactBytes(b)
  }

  /** Array count: int32 (classic, -1 = null) or uvarint count+1 (compact, 0 = null). */
  writeArrayLength(n: number, compact: boolean): void {
    if (compact) this.writeUvarint(n + 1)
    else this.writeInt32(n)
  }

  /** A file region as a chunk of its own (sent with sendfile). */
  writeRegion(ref: FileRegion): void {
    if (!Number.isInteger(ref.length) || ref.length < 0) throw new ProtocolEncodeError(`bad region length ${ref.length}`)
    this.closeRun()
    this.done.push(ref)
    this.doneLength += ref.length
    this.hasRegions = true
  }

  /** A records field: nullable bytes whose content may be a Buffer or a list of Buffers and regions. */
  writeRecords(records: Records, compact: boolean): void {
    if (records === null) {
      if (compact) this.writeUvarint(0)
      else this.writeInt32(-1)
      return
    }
    if (Buffer.isBuffer(records)) {
      if (compact) this.writeCompactBytes(records)
      else this.writeBytes(records)
      return
    }
    let len = 0
    for (const c of records.chunks) len += c.length
    if (compact) this.writeUvarint(len + 1)
    else this.writeInt32(len)
    for (const c of records.chunks) {
      if (Buffer.isBuffer(c)) this.writeRaw(c)
      else this.writeRegion(c)
    }
  }

  /** A complete tagged-field section holding only unknown fields (or none). */
  writeUnknownTaggedFields(fields: TaggedField[] | undefined): void {
    if (fields === undefined) {
      this.writeUvarint(0)
      return
    }
    this.writeUvarint(fields.length)
    this.writeUnknownTagsBelow(fields, 0, Infinity)
  }

  /**
   * Writes unknown tagged fields from `index` on whose tag is below `limit`, so that unknown and
   * known fields come out in ascending tag order. Returns the index of the first one not written.
   */
  writeUnknownTagsBelow(fields: TaggedField[] | undefined, index: number, limit: number): number {
    if (fields === undefined) return 0
    let i = index
    while (i < fields.length && fields[i]!.tag < limit) {
      const f = fields[i]!
      this.writeUvarint(f.tag)
      this.writeUvarint(f.data.length)
      this.writeRaw(f.data)
      i++
    }
    if (i < fields.length && fields[i]!.tag === limit) throw new ProtocolEncodeError(`unknown tagged field ${limit} duplicates a known tag`)
    return i
  }

  /** A known tagged field whose value was encoded into `data`. */
  writeTaggedField(tag: number, data: Writer): void {
    this.writeUvarint(tag)
    this.writeUvarint(data.length)
    this.writeWriter(data)
  }

  /** Appends everything written to another Writer. */
  writeWriter(other: Writer): void {
    for (const c of other.chunks()) {
      if (Buffer.isBuffer(c)) this.writeRaw(c)
      else this.writeRegion(c)
    }
  }

  /** Reserves 4 bytes (e.g. a frame size) to be filled by patchInt32; returns their position. */
  reserveInt32(): number {
    this.ensure(4)
    const at = this.length
    this.pos += 4
    return at
  }

  patchInt32(at: number, v: number): void {
    if ((v | 0) !== v) throw new ProtocolEncodeError(`int32 out of range: ${v}`)
    if (at >= this.doneLength) {
      this.buf.writeInt32BE(v, this.start + at - this.doneLength)
      return
    }
    let base = 0
    for (const c of this.done) {
      if (at < base + c.length) {
        if (!Buffer.isBuffer(c) || at + 4 > base + c.length) throw new ProtocolEncodeError(`position ${at} was not reserved`)
        c.writeInt32BE(v, at - base)
        return
      }
      base += c.length
    }
    throw new ProtocolEncodeError(`position ${at} is beyond the written data`)
  }

  /** Everything written, in order: Buffers and file regions. */
  chunks(): (Buffer | FileRegion)[] {
    this.closeRun()
    return this.done.slice()
  }

  /** Everything written as one Buffer; only valid when no file region was written. */
  toBuffer(): Buffer {
    if (this.hasRegions) throw new ProtocolEncodeError('writer holds file regions; use chunks()')
    if (this.done.length === 0) return this.buf.subarray(this.start, this.pos)
    this.closeRun()
    return Buffer.concat(this.done as Buffer[], this.doneLength)
  }
}
