// A sparse offset index searched in JS over a Buffer holding big-endian 8-byte entries (int32 relative
// offset | int32 position), the baseline for the native mmap'd index in native.bench.ts. Same answers
// as NativeIndexFile.lookup: largest key <= target (first of equal keys on an exact hit), else -1;
// same warm-section-first search.

const WARM_SECTION_BYTES = 8192
const ENTRY_SIZE = 8

export class JsOffsetIndex {
  readonly entries: number

  constructor(private readonly buf: Buffer) {
    this.entries = Math.floor(buf.length / ENTRY_SIZE)
  }

  keyAt(i: number): number {
    return this.buf.readUInt32BE(i * ENTRY_SIZE)
  }

  valueAt(i: number): number {
    return this.buf.readUInt32BE(i * ENTRY_SIZE + 4)
  }

  lookup(target: number): number {
    const lb = this.lowerBoundAll(target)
    if (lb < this.entries && this.keyAt(lb) === target) return lb
    return lb - 1
  }

  private lowerBoundAll(target: number): number {
    const n = this.entries
    if (n === 0) return 0
    const warm = Math.floor(WARM_SECTION_BYTES / ENTRY_SIZE)
    const firstHot = n - 1 > warm ? n - 1 - warm : 0
    if (this.keyAt(firstHot) < target) return this.lowerBound(target, firstHot + 1, n)
    return this.lowerBound(target, 0, firstHot + 1)
  }

  private lowerBound(target: number, lo: number, hi: number): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.keyAt(mid) < target) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}
