// Jute, ZooKeeper's binary record format (zookeeper-jute BinaryOutputArchive / BinaryInputArchive):
// big-endian int (4 bytes) and long (8 bytes), boolean as one byte, `buffer` and `ustring` as an int
// length (-1 for null) followed by the bytes (UTF-8 for strings), `vector` as an int count (-1 for null)
// followed by the elements. Records are their fields in declaration order, nothing else.
//
// The reader never trusts a length: every read is checked against the bytes left in the frame, so a
// malformed frame throws a JuteError (the connection is then dropped) instead of reading garbage.

export class JuteError extends Error {
  override readonly name = 'JuteError'
}

/** Appends jute fields to a growing buffer. */
export class JuteWriter {
  private buf: Buffer
  private pos = 0

  constructor(initialSize = 256) {
    this.buf = Buffer.allocUnsafe(initialSize)
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  int(v: number): this {
    this.ensure(4)
    this.buf.writeInt32BE(v, this.pos)
    this.pos += 4
    return this
  }

  long(v: bigint): this {
    this.ensure(8)
    this.buf.writeBigInt64BE(v, this.pos)
    this.pos += 8
    return this
  }

  bool(v: boolean): this {
    this.ensure(1)
    this.buf[this.pos++] = v ? 1 : 0
    return this
  }

  buffer(v: Buffer | null): this {
    if (v === null) return this.int(-1)
    this.int(v.length)
    this.ensure(v.length)
    v.copy(this.buf, this.pos)
    this.pos += v.length
    return this
  }

  ustring(v: string | null): this {
    if (v === null) return this.int(-1)
    const len = Buffer.byteLength(v, 'utf8')
    this.int(len)
    this.ensure(len)
    this.buf.write(v, this.pos, len, 'utf8')
    this.pos += len
    return this
  }

  stringVector(v: readonly string[]): this {
    this.int(v.length)
    for (const s of v) this.ustring(s)
    return this
  }

  get length(): number {
    return this.pos
  }

  /** The bytes written so far (a view, not a copy). */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos)
  }

  /** The bytes written so far preceded by their length as an int: one frame on the wire. */
  frame(): Buffer {
    const out = Buffer.allocUnsafe(4 + this.pos)
    out.writeInt32BE(this.pos, 0)
    this.buf.copy(out, 4, 0, this.pos)
    return out
  }
}

/** Reads jute fields from one frame, checking every length against what is left. */
export class JuteReader {
  private pos = 0

  constructor(private readonly buf: Buffer) {}

  private need(n: number, what: string): void {
    if (n < 0 || this.pos + n > this.buf.length) {
      throw new JuteError(`truncated frame: ${what} needs ${n} bytes at offset ${this.pos} of ${this.buf.length}`)
    }
  }

  int(): number {
    this.need(4, 'int')
    const v = this.buf.readInt32BE(this.pos)
    this.pos += 4
    return v
  }

  long(): bigint {
    this.need(8, 'long')
    const v = this.buf.readBigInt64BE(this.pos)
    this.pos += 8
    return v
  }

  /** A long that is a time in milliseconds (exact in a double for any realistic date). */
  longAsNumber(): number {
    return Number(this.long())
  }

  bool(): boolean {
    this.need(1, 'boolean')
    return this.buf[this.pos++] !== 0
  }

  /** A jute buffer; null (length -1) reads as an empty buffer. The bytes are copied out of the frame. */
  buffer(): Buffer {
    const len = this.int()
    if (len === -1) return Buffer.alloc(0)
    this.need(len, 'buffer')
    const v = Buffer.from(this.buf.subarray(this.pos, this.pos + len))
    this.pos += len
    return v
  }

  ustring(): string {
    const len = this.int()
    if (len === -1) return ''
    this.need(len, 'ustring')
    const v = this.buf.toString('utf8', this.pos, this.pos + len)
    this.pos += len
    return v
  }

  stringVector(): string[] {
    const count = this.int()
    if (count === -1) return []
    // Each element takes at least its 4-byte length: a count the frame cannot hold is malformed.
    this.need(count * 4, 'vector')
    const out: string[] = new Array(count)
    for (let i = 0; i < count; i++) out[i] = this.ustring()
    return out
  }

  get remaining(): number {
    return this.buf.length - this.pos
  }

  /** True when the frame still holds at least n bytes (optional trailing fields such as readOnly). */
  has(n: number): boolean {
    return this.pos + n <= this.buf.length
  }
}
