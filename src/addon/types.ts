// The contract of the native IO core (native/, loaded by ./index.ts). Kept apart from the loader so
// that other layers can name these types without loading the binary.

/** A memory-mapped sparse index file (Kafka's AbstractIndex): fixed-size entries, sorted by key. */
export interface NativeIndexFile {
  /** Number of entries in use. */
  entries(): number
  /** Entries that fit in the current mapping (maxBytes / entrySize). */
  maxEntries(): number
  isFull(): boolean
  /**
   * Appends one entry. Offset index: key = offset relative to the segment's base offset (uint32),
   * value = byte position in the .log (uint32). Time index: key = timestamp ms (int64, exact in a
   * double), value = relative offset (uint32). Throws when full or when key < the last key.
   */
  append(key: number, value: number): void
  /**
   * Position of the largest entry whose key <= target, or -1 when every key is greater (or empty).
   * Among equal keys (a time index may repeat a timestamp) an exact hit returns the first of them.
   */
  lookup(target: number): number
  /** Position of the smallest entry whose key >= target (the first of equal keys), or -1 when every key is smaller. */
  lookupCeiling(target: number): number
  keyAt(i: number): number
  valueAt(i: number): number
  /** Drops every entry from position n on. */
  truncateToEntries(n: number): void
  /** Remaps the file with room for maxBytes (rounded down to a whole entry); never below the used size. */
  resize(maxBytes: number): void
  /** msync of the mapping. */
  flush(): void
  /** Unmaps and closes; with trim, the file is first cut to the used size (as Kafka does on roll/close). */
  close(trim: boolean): void
}

export interface NativeBinding {
  /** CRC32C (Castagnoli) of data, continuing from seed (default 0). Returns an unsigned 32-bit value. */
  crc32c(data: Uint8Array, seed?: number): number
  /** The table-driven CRC32C, whatever the CPU (for tests and benchmarks). */
  crc32cSoftware(data: Uint8Array, seed?: number): number
  /** True when crc32c() uses the CPU's CRC32 instruction. */
  crc32cHardware(): boolean
  /**
   * Opens (creating if needed) an index file mapped with room for maxBytes. entrySize is 8 for an
   * offset index and 12 for a time index. An existing file keeps its entries (size / entrySize).
   * maxBytes is at most 2^31 - 1 (Kafka's segment.index.bytes is an int). Throws on I/O errors.
   */
  openIndex(path: string, entrySize: 8 | 12, maxBytes: number): NativeIndexFile
  /**
   * Sends length bytes of fileFd from position to socketFd without blocking the JS thread. The socket
   * must be non-blocking and have no pending writes of its own. Calls back once with the bytes sent
   * (== length on success) or an error (EPIPE, ECONNRESET, ...).
   */
  sendfile(
    socketFd: number,
    fileFd: number,
    position: number,
    length: number,
    callback: (err: Error | null, bytesSent: number) => void,
  ): void
  /**
   * The synchronous, non-blocking first attempt of sendfile: sends what the socket takes now and
   * returns the byte count (0..length; less when the socket buffer is full, then sendfile() does the
   * rest). Same preconditions as sendfile; errors (EPIPE, a file shorter than position + length) throw.
   */
  trySendfile(socketFd: number, fileFd: number, position: number, length: number): number
  /** fsync (dataOnly=false) or fdatasync (dataOnly=true) on the libuv thread pool. */
  fsync(fd: number, dataOnly: boolean, callback: (err: Error | null) => void): void
  /**
   * Opens (creating) path and takes an exclusive non-blocking flock on it; returns the fd, which holds the
   * lock until it is closed or the process exits. Throws an Error with code EWOULDBLOCK (EAGAIN) when
   * another process holds the lock.
   */
  lockFile(path: string): number
  /**
   * glibc malloc tuning (mallopt M_TRIM_THRESHOLD and M_TOP_PAD, and M_MMAP_THRESHOLD when given),
   * process-wide: freed memory up to trimThresholdBytes stays at the heap top instead of going back to the
   * kernel, and allocations up to mmapThresholdBytes come from that heap instead of mmap.
   * Returns false where the C library has no mallopt (nothing changed) or glibc refused a value.
   */
  mallocTune(trimThresholdBytes: number, topPadBytes: number, mmapThresholdBytes?: number): boolean
  /**
   * The record walk's fast path (protocol/records/record-walk.ts): walks the sound whole records of
   * buf[start, end), stopping at the first that is not whole, not sound or past `expected`, or when io
   * is full of faults. io carries the numbers (one typed array instead of ten arguments): in, [start,
   * end, firstIndex, expected, baseTimestamp, low, high, flags (1 keys required, 2 timestamps checked
   * against [low, high])]; out, [records walked, faults, (index, kind 1 keyless / 2 timestamp,
   * timestamp)...]. Returns the position after the last record walked. Optional: an addon built
   * before it lacks it (the walk then runs in TypeScript only).
   */
  walkRecords?(buf: Uint8Array, io: Float64Array): number
  /**
   * Decodes one raw snappy block into dst, which must be exactly the block's declared length (the
   * caller checks that length against its bounds first). Returns dst.length, or -1 when src is not a
   * valid block of that length. Optional, as walkRecords.
   */
  snappyUncompressInto?(src: Uint8Array, dst: Uint8Array): number
  /**
   * Decodes one LZ4 block into dst[dstStart, dstEnd); matches may refer back into dst[0, dstStart) (a
   * linked frame's earlier output). Returns the bytes written, or -1 when src is not a valid block
   * fitting there. Optional, as walkRecords.
   */
  lz4UncompressInto?(src: Uint8Array, dst: Uint8Array, dstStart: number, dstEnd: number): number
  /**
   * The fused record walk of a compressed records section (codec 1 gzip, 2 snappy, 3 lz4; others
   * answer -1): decompresses it block by block into bounded scratch and walks the records as
   * walkRecords does, in one call. io: in, [maxBytes (decoded-size limit), unused, unused, expected,
   * baseTimestamp, low, high, flags]; out, as walkRecords'. Returns the decompressed size when every
   * record is sound and exactly `expected` are present (the faults are then in io), or -1 when the
   * TypeScript path must decide (any fault of the data, a record over 1 MiB split across blocks, more
   * faults than io holds). Optional, as walkRecords.
   */
  walkCompressedRecords?(codec: number, src: Uint8Array, io: Float64Array): number
}
