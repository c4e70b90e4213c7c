// Splits a ZooKeeper byte stream into packets: an int length, then that many bytes. The length is checked
// against the limit (jute.maxbuffer) as soon as its 4 bytes are in, before anything is allocated for the
// packet, so a hostile or confused peer announcing a huge packet costs nothing: the caller drops the
// connection. At most one packet plus one read chunk is ever buffered.

export class FrameTooLargeError extends Error {
  override readonly name = 'FrameTooLargeError'
  constructor(
    readonly length: number,
    readonly limit: number,
  ) {
    super(`response frame of ${length} bytes exceeds the limit of ${limit} bytes (jute.maxbuffer)`)
  }
}

export class FrameReader {
  private chunks: Buffer[] = []
  private buffered = 0
  /** Length of the packet being assembled, -1 while its length prefix is incomplete. */
  private expected = -1

  constructor(private readonly maxFrameBytes: number) {}

  /**
   * Adds bytes and returns every packet they complete (without the length prefix). Throws
   * FrameTooLargeError for a length over the limit (or negative); the reader is unusable afterwards.
   */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk)
    this.buffered += chunk.length
    const frames: Buffer[] = []
    for (;;) {
      if (this.expected < 0) {
        if (this.buffered < 4) break
        const length = this.take(4).readInt32BE(0)
        if (length < 0 || length > this.maxFrameBytes) throw new FrameTooLargeError(length, this.maxFrameBytes)
        this.expected = length
      }
      if (this.buffered < this.expected) break
      frames.push(this.take(this.expected))
      this.expected = -1
    }
    return frames
  }

  /** Removes and returns the next n buffered bytes (a view when they sit in one chunk). */
  private take(n: number): Buffer {
    const first = this.chunks[0]
    if (first !== undefined && first.length >= n) {
      const out = first.subarray(0, n)
      if (first.length === n) this.chunks.shift()
      else this.chunks[0] = first.subarray(n)
      this.buffered -= n
      return out
    }
    const out = Buffer.allocUnsafe(n)
    let filled = 0
    while (filled < n) {
      const c = this.chunks[0]!
      const want = n - filled
      if (c.length <= want) {
        c.copy(out, filled)
        filled += c.length
        this.chunks.shift()
      } else {
        c.copy(out, filled, 0, want)
        this.chunks[0] = c.subarray(want)
        filled += want
      }
    }
    this.buffered -= n
    return out
  }
}
