// The record walk of a produced batch (Kafka's LogValidator, record by record): checks the records
// section of one RecordBatch v2 as it arrives in chunks (the batch's own bytes, or a decompressor's
// output), without building a JavaScript object per record and without keeping more than the bytes of
// a varint that a chunk boundary splits. A record's key, value and header bodies are skipped, not read.
//
// Structure (throws KafkaError(CORRUPT_MESSAGE)): every record's length and varints in bounds, its
// fields filling exactly its length, offset deltas 0..n-1, exactly the declared record count, no byte
// after the last record. Content (collected, the caller decides the answer): keyless records when keys
// are required (compacted topics), CreateTime timestamps outside [low, high].
//
// Whole records inside one chunk take the fast path: the native addon's walkRecords (native/src/
// record-walk.cc) while it finds them sound, else walkWholeRecord here, which also gives the precise
// error for a record the addon stopped at; a record split across chunks is finished by the
// byte-at-a-time state machine (step), which resumes exactly where the chunk ended.
//
// Compressed batches (gzip, snappy, lz4) first try walkCompressedRecords: the addon decompresses and
// walks in one call (native/src/batch-walk.cc). It answers only for sound batches; for anything else
// validate.ts runs this walker over decompressInChunks, which names the fault.

import { native } from '../../addon/index.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'

/** Why a record was named by the walk (Kafka's record errors). */
export interface RecordFault {
  /** Index of the record in its batch. */
  index: number
  kind: 'keyless' | 'timestamp'
  /** baseTimestamp + timestampDelta of the record (for timestamp faults). */
  timestamp: number
  offsetDelta: number
}

/** What a walk checks besides structure. */
export interface RecordWalkRules {
  /** cleanup.policy includes compact: a record without a key is a fault. */
  requireKeys: boolean
  /** CreateTime topics: records whose timestamp (other than -1) lies outside [low, high] are faults. */
  checkTimestamps: boolean
  low: number
  high: number
}

const NO_TIMESTAMP = -1
/** Smallest record body after its length: attributes, timestampDelta, offsetDelta, key length,
 * value length, header count (one byte each). */
const MIN_RECORD_BODY = 6

// States of the byte-at-a-time machine: the field being read.
const LENGTH = 0
const ATTRIBUTES = 1
const TIMESTAMP_DELTA = 2
const OFFSET_DELTA = 3
const KEY_LENGTH = 4
const KEY = 5
const VALUE_LENGTH = 6
const VALUE = 7
const HEADER_COUNT = 8
const HEADER_KEY_LENGTH = 9
const HEADER_KEY = 10
const HEADER_VALUE_LENGTH = 11
const HEADER_VALUE = 12

function corrupt(message: string): KafkaError {
  return new KafkaError(ErrorCode.CORRUPT_MESSAGE, message)
}

/** Zig-zag decoding of a raw varint held exactly in a number (up to 2^53). */
function zigZag(raw: number): number {
  return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2
}

/** The addon's walk, when this build has it; one result array per thread, reused. */
const nativeWalk = native.walkRecords?.bind(native)
const NATIVE_FAULT_ROOM = 64
const nativeOut = new Float64Array(2 + 3 * NATIVE_FAULT_ROOM)
/** Below this many bytes a native call costs more than it saves. */
const NATIVE_MIN_BYTES = 64

/** The addon's fused decompress-and-walk, when this build has it. */
const nativeWalkCompressed = native.walkCompressedRecords?.bind(native)

/**
 * Decompresses and walks a compressed records section (codec 1-3) in one native call. Returns the
 * records' content faults (often none) when every record is sound and exactly `expected` are present
 * within maxBytes decoded; null when the TypeScript path must decide (a structural fault, a bomb, a
 * codec this build does not fuse, or no addon support).
 */
export function walkCompressedRecords(
  codec: number,
  section: Uint8Array,
  maxBytes: number,
  expected: number,
  baseTimestamp: number,
  rules: RecordWalkRules,
): RecordFault[] | null {
  if (nativeWalkCompressed === undefined) return null
  const io = nativeOut
  io[0] = maxBytes
  io[3] = expected
  io[4] = baseTimestamp
  io[5] = rules.low
  io[6] = rules.high
  io[7] = (rules.requireKeys ? 1 : 0) | (rules.checkTimestamps ? 2 : 0)
  if (nativeWalkCompressed(codec, section, io) < 0) return null
  const faults: RecordFault[] = []
  readNativeFaults(faults)
  return faults
}

/** Appends the faults the addon left in nativeOut (offset deltas equal indexes in sound records). */
function readNativeFaults(faults: RecordFault[]): void {
  const n = nativeOut[1]!
  for (let i = 0; i < n; i++) {
    const index = nativeOut[2 + 3 * i]!
    const kind = nativeOut[3 + 3 * i] === 1 ? 'keyless' : 'timestamp'
    faults.push({ index, kind, timestamp: nativeOut[4 + 3 * i]!, offsetDelta: index })
  }
}

// The fast path's readers share one position, `at`, instead of returning objects (they run several
// times per record on the produce path).
let at = 0
/** readVarint's answer when the bytes ran out and that is allowed (the record continues in the next chunk). */
const INCOMPLETE = -(2 ** 40)

/**
 * Reads a zig-zag varint of at most maxBytes bytes at `at`, not at or past end. Running out of bytes
 * answers INCOMPLETE when allowed, else throws; so does a varint longer than maxBytes.
 */
function readVarint(buf: Uint8Array, end: number, maxBytes: number, index: number, incompleteAllowed: boolean): number {
  let raw = 0
  for (let n = 0; ; n++) {
    if (at >= end) {
      if (incompleteAllowed) return INCOMPLETE
      throw corrupt(`record ${index} runs past its length inside a varint`)
    }
    if (n === maxBytes) throw corrupt(`record ${index} has a varint longer than ${maxBytes} bytes`)
    const c = buf[at++]!
    // Four bytes fit in int32 bit operations; later ones (large deltas, varlongs) go through doubles.
    if (n < 4) raw |= (c & 0x7f) << (7 * n)
    else raw += (c & 0x7f) * 2 ** (7 * n)
    if (c < 0x80) return n < 4 ? (raw >>> 1) ^ -(raw & 1) : zigZag(raw)
  }
}

/** Skips a length-prefixed field at `at` (-1 = null when allowNull); answers whether it was not null. */
function skipBytes(buf: Uint8Array, end: number, index: number, what: string, allowNull: boolean): boolean {
  const n = readVarint(buf, end, 5, index, false)
  if (n < 0) {
    if (n !== -1 || !allowNull) throw corrupt(`record ${index} has a bad ${what} length ${n}`)
    return false
  }
  if (n > end - at) throw corrupt(`record ${index}: a ${what} of ${n} bytes runs past its record`)
  at += n
  return true
}

/**
 * Walks the records section of one batch declaring `expected` records whose baseTimestamp is given.
 * Feed it with push (in order, any chunking), then call finish. Faults are collected in `faults`.
 */
export class RecordSectionWalker {
  /** Records completed so far. */
  count = 0
  /** Bytes seen so far (the decompressed size, for compressed batches). */
  bytes = 0
  readonly faults: RecordFault[] = []

  private state = LENGTH
  /** Bytes of the current record not consumed yet (after its length varint). */
  private left = 0
  /** Varint being read across a chunk boundary: value so far, its bytes so far. */
  private raw = 0
  private varBytes = 0
  /** Bytes of a key, value or header body still to skip. */
  private skip = 0
  private headersLeft = 0
  // Fields of the current record, checked when it is complete.
  private timestampDelta = 0
  private offsetDelta = 0
  private keyless = false

  constructor(
    private readonly expected: number,
    private readonly baseTimestamp: number,
    private readonly rules: RecordWalkRules,
  ) {}

  /** Feeds buf[start, end). Throws KafkaError(CORRUPT_MESSAGE) on the first structural fault. */
  push(buf: Uint8Array, start = 0, end = buf.length): void {
    this.bytes += end - start
    let p = start
    const flags = (this.rules.requireKeys ? 1 : 0) | (this.rules.checkTimestamps ? 2 : 0)
    while (p < end) {
      if (this.state === LENGTH && this.varBytes === 0) {
        if (nativeWalk !== undefined && end - p >= NATIVE_MIN_BYTES) {
          const io = nativeOut
          io[0] = p
          io[1] = end
          io[2] = this.count
          io[3] = this.expected
          io[4] = this.baseTimestamp
          io[5] = this.rules.low
          io[6] = this.rules.high
          io[7] = flags
          const next = nativeWalk(buf, io)
          const walked = nativeOut[0]!
          if (walked > 0) {
            this.takeNativeFaults()
            this.count += walked
            p = next
            continue
          }
        }
        const next = this.walkWholeRecord(buf, p, end)
        if (next >= 0) {
          p = next
          continue
        }
      }
      p = this.step(buf, p, end)
    }
  }

  /** Checks that the records ended where the section did. Throws KafkaError(CORRUPT_MESSAGE). */
  finish(): void {
    if (this.state !== LENGTH || this.varBytes !== 0) throw corrupt(`record ${this.count} is truncated at the end of the batch`)
    if (this.count !== this.expected) throw corrupt(`batch declares ${this.expected} records but holds ${this.count}`)
  }

  /** Copies the faults the addon found into this.faults (offset deltas equal indexes in sound records). */
  private takeNativeFaults(): void {
    readNativeFaults(this.faults)
  }

  /** A record is complete: its offset delta, key and timestamp are checked. */
  private completeRecord(): void {
    const index = this.count
    if (index >= this.expected) throw corrupt(`batch declares ${this.expected} records but holds more`)
    if (this.offsetDelta !== index) throw corrupt(`record ${index} has offsetDelta ${this.offsetDelta}; a batch numbers its records 0..n-1`)
    const rules = this.rules
    if (rules.requireKeys && this.keyless) {
      this.faults.push({ index, kind: 'keyless', timestamp: 0, offsetDelta: this.offsetDelta })
    } else if (rules.checkTimestamps) {
      const ts = this.baseTimestamp + this.timestampDelta
      if (ts !== NO_TIMESTAMP && (ts < rules.low || ts > rules.high)) {
        this.faults.push({ index, kind: 'timestamp', timestamp: ts, offsetDelta: this.offsetDelta })
      }
    }
    this.count = index + 1
  }

  /**
   * Walks one record lying wholly in buf[p, end) and returns the position after it, or -1 when it
   * does not fit in the chunk (the state machine takes it then, nothing was consumed).
   */
  private walkWholeRecord(buf: Uint8Array, p: number, end: number): number {
    const index = this.count
    at = p
    const length = readVarint(buf, end, 5, index, true)
    if (length === INCOMPLETE) return -1
    if (length < MIN_RECORD_BODY) throw corrupt(`record ${index} has a bad length ${length}`)
    const recordEnd = at + length
    if (recordEnd > end) return -1
    at++ // the attributes byte is not checked (Kafka reserves it)
    this.timestampDelta = readVarint(buf, recordEnd, 10, index, false)
    this.offsetDelta = readVarint(buf, recordEnd, 5, index, false)
    this.keyless = !skipBytes(buf, recordEnd, index, 'key', true)
    skipBytes(buf, recordEnd, index, 'value', true)
    const headers = readVarint(buf, recordEnd, 5, index, false)
    if (headers < 0 || headers > (recordEnd - at) / 2) throw corrupt(`record ${index} has a bad header count ${headers}`)
    for (let h = 0; h < headers; h++) {
      skipBytes(buf, recordEnd, index, 'header key', false)
      skipBytes(buf, recordEnd, index, 'header value', true)
    }
    if (at !== recordEnd) throw corrupt(`record ${index} declares ${length} bytes but its fields take ${length - (recordEnd - at)}`)
    this.completeRecord()
    return recordEnd
  }

  /** Consumes bytes of buf from p with the state machine until a record completes or the chunk ends. */
  private step(buf: Uint8Array, p: number, end: number): number {
    while (p < end) {
      const state = this.state
      if (state === KEY || state === VALUE || state === HEADER_KEY || state === HEADER_VALUE) {
        const n = Math.min(this.skip, end - p)
        p += n
        this.skip -= n
        this.left -= n
        if (this.skip === 0) this.afterBody(state)
        if (this.state === LENGTH) return p
        continue
      }
      const b = buf[p++]!
      if (state === LENGTH) {
        if (this.varBytes === 5) throw corrupt(`record ${this.count} has a length varint longer than 5 bytes`)
        this.raw += (b & 0x7f) * 2 ** (7 * this.varBytes++)
        if ((b & 0x80) !== 0) continue
        const length = zigZag(this.raw)
        this.raw = 0
        this.varBytes = 0
        if (length < MIN_RECORD_BODY) throw corrupt(`record ${this.count} has a bad length ${length}`)
        this.left = length
        this.state = ATTRIBUTES
        continue
      }
      if (this.left === 0) throw corrupt(`record ${this.count} runs past its length`)
      this.left--
      if (state === ATTRIBUTES) {
        this.state = TIMESTAMP_DELTA
        continue
      }
      // Every other state reads a varint: 10 bytes for the timestamp delta, 5 for the rest.
      const maxBytes = state === TIMESTAMP_DELTA ? 10 : 5
      if (this.varBytes === maxBytes) throw corrupt(`record ${this.count} has a varint longer than ${maxBytes} bytes`)
      this.raw += (b & 0x7f) * 2 ** (7 * this.varBytes++)
      if ((b & 0x80) !== 0) continue
      const value = zigZag(this.raw)
      this.raw = 0
      this.varBytes = 0
      this.afterVarint(state, value)
      if (this.state === LENGTH) return p
    }
    return p
  }

  /** The varint of `state` has been read: moves to the next field. */
  private afterVarint(state: number, value: number): void {
    switch (state) {
      case TIMESTAMP_DELTA:
        this.timestampDelta = value
        this.state = OFFSET_DELTA
        return
      case OFFSET_DELTA:
        this.offsetDelta = value
        this.state = KEY_LENGTH
        return
      case KEY_LENGTH:
        this.keyless = value === -1
        this.startBody(value, 'key', true, KEY)
        return
      case VALUE_LENGTH:
        this.startBody(value, 'value', true, VALUE)
        return
      case HEADER_COUNT:
        if (value < 0 || value > this.left / 2) throw corrupt(`record ${this.count} has a bad header count ${value}`)
        this.headersLeft = value
        this.nextHeaderOrEnd()
        return
      case HEADER_KEY_LENGTH:
        this.startBody(value, 'header key', false, HEADER_KEY)
        return
      case HEADER_VALUE_LENGTH:
        this.headersLeft--
        this.startBody(value, 'header value', true, HEADER_VALUE)
        return
    }
  }

  /** A length was read: skips its body (state `body`), or moves past it at once when null or empty. */
  private startBody(length: number, what: string, allowNull: boolean, body: number): void {
    if (length < 0) {
      if (length !== -1 || !allowNull) throw corrupt(`record ${this.count} has a bad ${what} length ${length}`)
      length = 0
    }
    if (length > this.left) throw corrupt(`record ${this.count}: a ${what} of ${length} bytes runs past its record`)
    if (length > 0) {
      this.skip = length
      this.state = body
    } else {
      this.afterBody(body)
    }
  }

  /** The body of `body` has been skipped: moves to the next field. */
  private afterBody(body: number): void {
    if (body === KEY) this.state = VALUE_LENGTH
    else if (body === VALUE) this.state = HEADER_COUNT
    else if (body === HEADER_KEY) this.state = HEADER_VALUE_LENGTH
    else this.nextHeaderOrEnd()
  }

  private nextHeaderOrEnd(): void {
    if (this.headersLeft > 0) {
      this.state = HEADER_KEY_LENGTH
      return
    }
    if (this.left !== 0) throw corrupt(`record ${this.count} has ${this.left} bytes after its last field`)
    this.state = LENGTH
    this.completeRecord()
  }
}
