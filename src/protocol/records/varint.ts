// Kafka's zig-zag varints (protobuf style), used inside RecordBatch v2 records. Lengths are bounded
// (5 bytes for int32, 10 for int64) so a malformed record can never make a reader loop or allocate.

/** Bytes needed to encode value (int32 range) as a zig-zag varint. */
export function sizeOfVarint(value: number): number {
  // Compares instead of a shift loop: this runs several times per record on the producer path.
  const v = ((value << 1) ^ (value >> 31)) >>> 0
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5
}

/** Writes value (int32) as a zig-zag varint at pos; returns the position after it. */
export function writeVarint(buf: Buffer, pos: number, value: number): number {
  let v = ((value << 1) ^ (value >> 31)) >>> 0
  while (v >= 0x80) {
    buf[pos++] = (v & 0x7f) | 0x80
    v >>>= 7
  }
  buf[pos++] = v
  return pos
}

/** Bytes needed to encode value (a safe integer) as a zig-zag varlong. */
export function sizeOfVarlong(value: number): number {
  // Timestamp deltas are almost always int32: no BigInt for them (it allocated per record).
  if (value >= -0x40000000 && value < 0x40000000) return sizeOfVarint(value)
  let v = zigZag64(value)
  let n = 1
  while (v >= 0x80n) {
    v >>= 7n
    n++
  }
  return n
}

/** Writes value (a safe integer) as a zig-zag varlong at pos; returns the position after it. */
export function writeVarlong(buf: Buffer, pos: number, value: number): number {
  if (value >= -0x40000000 && value < 0x40000000) return writeVarint(buf, pos, value)
  let v = zigZag64(value)
  while (v >= 0x80n) {
    buf[pos++] = Number(v & 0x7fn) | 0x80
    v >>= 7n
  }
  buf[pos++] = Number(v)
  return pos
}

function zigZag64(value: number): bigint {
  const b = BigInt(value)
  return BigInt.asUintN(64, (b << 1n) ^ (b >> 63n))
}

/** A decoded varint and the position after it. */
export interface VarintRead {
  value: number
  next: number
}

/**
 * Reads a zig-zag varint (int32) at pos, not reading at or past end. Returns null when the bytes run
 * out or the encoding is longer than 5 bytes (a corrupt record).
 */
export function readVarint(buf: Uint8Array, pos: number, end: number): VarintRead | null {
  let raw = 0
  let shift = 0
  for (let i = 0; i < 5; i++) {
    if (pos >= end) return null
    const b = buf[pos++]!
    raw |= (b & 0x7f) << shift
    if ((b & 0x80) === 0) return { value: (raw >>> 1) ^ -(raw & 1), next: pos }
    shift += 7
  }
  return null
}

/** Reads a zig-zag varlong at pos (see readVarint); values beyond 2^53 lose precision. */
export function readVarlong(buf: Uint8Array, pos: number, end: number): VarintRead | null {
  let raw = 0n
  let shift = 0n
  for (let i = 0; i < 10; i++) {
    if (pos >= end) return null
    const b = buf[pos++]!
    raw |= BigInt(b & 0x7f) << shift
    if ((b & 0x80) === 0) {
      const v = (raw >> 1n) ^ -(raw & 1n)
      return { value: Number(BigInt.asIntN(64, v)), next: pos }
    }
    shift += 7n
  }
  return null
}
