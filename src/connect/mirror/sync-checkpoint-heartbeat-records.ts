// MirrorMaker 2's record formats, byte for byte as Kafka writes them (org.apache.kafka.connect.mirror
// OffsetSync, Checkpoint and Heartbeat): Kafka protocol Structs, big-endian, STRING = int16 length +
// UTF-8 bytes. Checkpoint and Heartbeat values start with a header Struct {version: int16} (0 today);
// OffsetSync has no header.
//
//   OffsetSync  key {topic: STRING, partition: INT32}             value {upstreamOffset: INT64, offset: INT64}
//   Checkpoint  key {group: STRING, topic: STRING, partition: INT32}
//               value {version: INT16} {upstreamOffset: INT64, offset: INT64, metadata: STRING}
//   Heartbeat   key {sourceClusterAlias: STRING, targetClusterAlias: STRING}
//               value {version: INT16} {timestamp: INT64}
//
// Decoders throw MirrorFormatError on short or malformed input (a foreign record in the topic), never
// read past the buffer.

export class MirrorFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'MirrorFormatError'
  }
}

class StructWriter {
  private readonly parts: Buffer[] = []

  string(s: string): this {
    const bytes = Buffer.from(s, 'utf8')
    if (bytes.length > 0x7fff) throw new MirrorFormatError(`string of ${bytes.length} bytes is too long for a STRING field`)
    const len = Buffer.allocUnsafe(2)
    len.writeInt16BE(bytes.length)
    this.parts.push(len, bytes)
    return this
  }

  int16(n: number): this {
    const b = Buffer.allocUnsafe(2)
    b.writeInt16BE(n)
    this.parts.push(b)
    return this
  }

  int32(n: number): this {
    const b = Buffer.allocUnsafe(4)
    b.writeInt32BE(n)
    this.parts.push(b)
    return this
  }

  int64(n: number): this {
    const b = Buffer.allocUnsafe(8)
    b.writeBigInt64BE(BigInt(n))
    this.parts.push(b)
    return this
  }

  done(): Buffer {
    return Buffer.concat(this.parts)
  }
}

class StructReader {
  private pos = 0
  constructor(private readonly buf: Buffer, private readonly what: string) {}

  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new MirrorFormatError(`${this.what}: truncated (${this.buf.length} bytes)`)
  }

  string(): string {
    this.need(2)
    const len = this.buf.readInt16BE(this.pos)
    this.pos += 2
    if (len < 0) throw new MirrorFormatError(`${this.what}: null or negative STRING length ${len}`)
    this.need(len)
    const s = this.buf.toString('utf8', this.pos, this.pos + len)
    this.pos += len
    return s
  }

  int16(): number {
    this.need(2)
    const v = this.buf.readInt16BE(this.pos)
    this.pos += 2
    return v
  }

  int32(): number {
    this.need(4)
    const v = this.buf.readInt32BE(this.pos)
    this.pos += 4
    return v
  }

  int64(): number {
    this.need(8)
    const v = Number(this.buf.readBigInt64BE(this.pos))
    this.pos += 8
    return v
  }
}

function nonNull(b: Buffer | null, what: string): Buffer {
  if (b === null) throw new MirrorFormatError(`${what}: null`)
  return b
}

// ---- OffsetSync ----

export interface OffsetSync {
  topic: string
  partition: number
  upstreamOffset: number
  downstreamOffset: number
}

export function encodeOffsetSync(s: OffsetSync): { key: Buffer; value: Buffer } {
  return {
    key: new StructWriter().string(s.topic).int32(s.partition).done(),
    value: new StructWriter().int64(s.upstreamOffset).int64(s.downstreamOffset).done(),
  }
}

export function decodeOffsetSync(key: Buffer | null, value: Buffer | null): OffsetSync {
  const k = new StructReader(nonNull(key, 'offset sync key'), 'offset sync key')
  const v = new StructReader(nonNull(value, 'offset sync value'), 'offset sync value')
  return { topic: k.string(), partition: k.int32(), upstreamOffset: v.int64(), downstreamOffset: v.int64() }
}

// ---- Checkpoint ----

export const CHECKPOINT_VERSION = 0

export interface Checkpoint {
  group: string
  /** The topic-partition on the cluster the checkpoint is written to (the downstream name). */
  topic: string
  partition: number
  upstreamOffset: number
  downstreamOffset: number
  metadata: string
}

export function encodeCheckpointKey(c: Pick<Checkpoint, 'group' | 'topic' | 'partition'>): Buffer {
  return new StructWriter().string(c.group).string(c.topic).int32(c.partition).done()
}

export function encodeCheckpoint(c: Checkpoint): { key: Buffer; value: Buffer } {
  return {
    key: encodeCheckpointKey(c),
    value: new StructWriter().int16(CHECKPOINT_VERSION).int64(c.upstreamOffset).int64(c.downstreamOffset).string(c.metadata).done(),
  }
}

export function decodeCheckpoint(key: Buffer | null, value: Buffer | null): Checkpoint {
  const k = new StructReader(nonNull(key, 'checkpoint key'), 'checkpoint key')
  const v = new StructReader(nonNull(value, 'checkpoint value'), 'checkpoint value')
  const version = v.int16()
  if (version !== CHECKPOINT_VERSION) throw new MirrorFormatError(`checkpoint value version ${version} is not supported`)
  return { group: k.string(), topic: k.string(), partition: k.int32(), upstreamOffset: v.int64(), downstreamOffset: v.int64(), metadata: v.string() }
}

// ---- Heartbeat ----

export const HEARTBEAT_VERSION = 0

export interface Heartbeat {
  sourceClusterAlias: string
  targetClusterAlias: string
  timestamp: number
}

export function encodeHeartbeat(h: Heartbeat): { key: Buffer; value: Buffer } {
  return {
    key: new StructWriter().string(h.sourceClusterAlias).string(h.targetClusterAlias).done(),
    value: new StructWriter().int16(HEARTBEAT_VERSION).int64(h.timestamp).done(),
  }
}

export function decodeHeartbeat(key: Buffer | null, value: Buffer | null): Heartbeat {
  const k = new StructReader(nonNull(key, 'heartbeat key'), 'heartbeat key')
  const v = new StructReader(nonNull(value, 'heartbeat value'), 'heartbeat value')
  const version = v.int16()
  if (version !== HEARTBEAT_VERSION) throw new MirrorFormatError(`heartbeat value version ${version} is not supported`)
  return { sourceClusterAlias: k.string(), targetClusterAlias: k.string(), timestamp: v.int64() }
}
