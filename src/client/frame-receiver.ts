// Splits the bytes a broker sends into size-prefixed response frames, reading from the socket into
// buffers this receiver chooses (net's `onread`), not into chunks libuv allocates:
// - between frames the socket reads into one reusable staging buffer; frames found whole in it are
//   copied out (the staging buffer is overwritten by the next read), which costs little since such
//   frames are small;
// - once a frame's size prefix is in and the frame is bigger than what has arrived, the frame is
//   allocated (after its size was checked) and the socket reads straight into the rest of it. A large
//   Fetch response is then written once, by the kernel, into the buffer its records are decoded from:
//   no per-read chunk to allocate and copy from, and reads as large as the socket has data for.

/** Bytes read per socket read between frames; larger frames are read into themselves. */
export const STAGING_BYTES = 64 * 1024

export interface FrameSink {
  /** A whole frame (after the size prefix). The receiver keeps no reference to it. */
  onFrame(frame: Buffer): void
  /**
   * A size prefix outside 4..maxFrameBytes: the stream cannot be followed any further. `start` holds the
   * bytes read from the prefix on (at least the 4 prefix bytes, at most 64), to tell what the peer is.
   */
  onBadSize(size: number, start: Buffer): void
}

export class ResponseFrameReceiver {
  private readonly staging = Buffer.allocUnsafeSlow(STAGING_BYTES)
  /** The size prefix being read, when it was split across reads (buffered of its 4 bytes). */
  private readonly head = Buffer.alloc(4)
  private buffered = 0
  /** The frame being received and how much of it is filled. */
  private frame: Buffer | null = null
  private filled = 0
  private stopped = false
  sink: FrameSink | null = null

  constructor(readonly maxFrameBytes: number) {}

  /** net's onread.buffer: where the socket's next read goes. */
  nextBuffer(): Buffer {
    if (this.frame !== null) return this.frame.subarray(this.filled)
    return this.staging
  }

  /** net's onread.callback: nread bytes were read into the start of buf (the last nextBuffer()). */
  onRead(nread: number, buf: Uint8Array): void {
    if (this.stopped) return
    if (buf !== this.staging) {
      this.filled += nread
      if (this.frame !== null && this.filled === this.frame.length) {
        const frame = this.frame
        this.frame = null
        this.sink!.onFrame(frame)
      }
      return
    }
    this.splitStaging(nread)
  }

  /** Drops any partial frame and ignores later reads (the connection failed). */
  stop(): void {
    this.stopped = true
    this.frame = null
    this.buffered = 0
  }

  private splitStaging(length: number): void {
    const data = this.staging
    let pos = 0
    while (pos < length && !this.stopped) {
      if (this.frame !== null) {
        // Only the bytes of a frame that began earlier in this same read.
        const take = Math.min(length - pos, this.frame.length - this.filled)
        data.copy(this.frame, this.filled, pos, pos + take)
        this.filled += take
        pos += take
        if (this.filled < this.frame.length) return
        const frame = this.frame
        this.frame = null
        this.sink!.onFrame(frame)
        continue
      }
      // The 4-byte size prefix, which may itself be split across reads.
      if (this.buffered > 0 || length - pos < 4) {
        const need = Math.min(4 - this.buffered, length - pos)
        data.copy(this.head, this.buffered, pos, pos + need)
        this.buffered += need
        pos += need
        if (this.buffered < 4) return
        this.buffered = 0
        const size = this.head.readInt32BE(0)
        if (!this.startFrame(size)) return this.badSize(size, Buffer.concat([this.head, data.subarray(pos, Math.min(length, pos + 60))]))
        continue
      }
      const size = data.readInt32BE(pos)
      pos += 4
      if (!this.startFrame(size)) return this.badSize(size, data.subarray(pos - 4, Math.min(length, pos + 60)))
    }
  }

  /** Checks a size prefix, then allocates the frame it announces; false on a bad size. */
  private startFrame(size: number): boolean {
    if (size < 4 || size > this.maxFrameBytes) return false
    this.frame = Buffer.allocUnsafe(size)
    this.filled = 0
    return true
  }

  private badSize(size: number, start: Buffer): void {
    // A copy: the staging buffer is overwritten by the next read.
    const copy = Buffer.from(start)
    this.stop()
    this.sink!.onBadSize(size, copy)
  }
}
