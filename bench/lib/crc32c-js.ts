// CRC32C (Castagnoli) in plain JS, slicing-by-8: the baseline the native kernels are measured against
// in native.bench.ts. Same seed convention as native.crc32c: crc32c(b, crc32c(a)) === crc32c(a ++ b).

const POLYNOMIAL = 0x82f63b78

// TABLES[k * 256 + i]: CRC of byte i followed by k zero bytes, so one step folds 8 input bytes.
const TABLES = (() => {
  const t = new Uint32Array(8 * 256)
  for (let i = 0; i < 256; i++) {
    let crc = i
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ POLYNOMIAL : crc >>> 1
    t[i] = crc >>> 0
  }
  for (let i = 0; i < 256; i++) {
    for (let k = 1; k < 8; k++) {
      const prev = t[(k - 1) * 256 + i]!
      t[k * 256 + i] = ((prev >>> 8) ^ t[prev & 0xff]!) >>> 0
    }
  }
  return t
})()

export function crc32cJs(data: Uint8Array, seed = 0): number {
  const t = TABLES
  let crc = ~seed >>> 0
  let i = 0
  const end8 = data.length - (data.length % 8)
  while (i < end8) {
    const lo = (crc ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24))) >>> 0
    const hi = data[i + 4]! | (data[i + 5]! << 8) | (data[i + 6]! << 16) | (data[i + 7]! << 24)
    crc =
      t[7 * 256 + (lo & 0xff)]! ^
      t[6 * 256 + ((lo >>> 8) & 0xff)]! ^
      t[5 * 256 + ((lo >>> 16) & 0xff)]! ^
      t[4 * 256 + (lo >>> 24)]! ^
      t[3 * 256 + (hi & 0xff)]! ^
      t[2 * 256 + ((hi >>> 8) & 0xff)]! ^
      t[256 + ((hi >>> 16) & 0xff)]! ^
      t[(hi >>> 24) & 0xff]!
    i += 8
  }
  for (; i < data.length; i++) crc = (crc >>> 8) ^ t[(crc ^ data[i]!) & 0xff]!
  return ~crc >>> 0
}
