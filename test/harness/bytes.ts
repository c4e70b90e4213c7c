// Big-endian integers as bytes, for tests that build wire or record bytes by hand (so that what they check
// is written by something other than the codec under test).
export const i8 = (v: number): Buffer => Buffer.from([v & 0xff])

export const i16 = (v: number): Buffer => {
  const b = Buffer.alloc(2)
  b.writeInt16BE(v)
  return b
}

export const i32 = (v: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(v)
  return b
}

export const i64 = (v: number | bigint): Buffer => {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(BigInt(v))
  return b
}
