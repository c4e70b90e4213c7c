// Confluent's wire format for schema-registry-encoded Kafka records:
//   byte 0       magic byte 0
//   bytes 1..4   schema id, 32-bit big-endian
//   Protobuf only: the message-index path of the record's message type in the schema, as zigzag varints:
//                the count, then each index; the common path [0] (first message) is the single byte 0
//   then         the payload (Avro binary, JSON text, or the protobuf message)
export const MAGIC_BYTE = 0
export const HEADER_SIZE = 5

export class SerializationError extends Error {}

export function encodeHeader(id: number): Buffer {
  if (!Number.isInteger(id) || id < 0 || id > 0x7fffffff) throw new SerializationError(`invalid schema id ${id}`)
  const b = Buffer.alloc(HEADER_SIZE)
  b[0] = MAGIC_BYTE
  b.writeUInt32BE(id, 1)
  return b
}

/** The schema id and where the payload starts; throws on anything not in the wire format. */
export function decodeHeader(data: Uint8Array): { id: number; offset: number } {
  if (data.length < HEADER_SIZE) throw new SerializationError(`record of ${data.length} bytes is too short for the schema registry wire format`)
  if (data[0] !== MAGIC_BYTE) throw new SerializationError('Unknown magic byte!')
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  return { id: view.getInt32(1, false), offset: HEADER_SIZE }
}

function writeZigzag(value: number, out: number[]): void {
  let v = ((value << 1) ^ (value >> 31)) >>> 0
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80)
    v >>>= 7
  }
  out.push(v)
}

function readZigzag(data: Uint8Array, offset: number): { value: number; offset: number } {
  let result = 0
  let shift = 0
  for (let i = 0; i < 5; i++) {
    if (offset >= data.length) throw new SerializationError('truncated varint in message indexes')
    const b = data[offset++]!
    result |= (b & 0x7f) << shift
    if ((b & 0x80) === 0) return { value: (result >>> 1) ^ -(result & 1), offset }
    shift += 7
  }
  throw new SerializationError('varint too long in message indexes')
}

export function encodeMessageIndexes(indexes: number[]): Buffer {
  if (indexes.length === 1 && indexes[0] === 0) return Buffer.from([0])
  const out: number[] = []
  writeZigzag(indexes.length, out)
  for (const i of indexes) writeZigzag(i, out)
  return Buffer.from(out)
}

/** Reads the message-index path; a path longer than the record could hold is refused. */
export function decodeMessageIndexes(data: Uint8Array, offset: number): { indexes: number[]; offset: number } {
  const count = readZigzag(data, offset)
  if (count.value === 0) return { indexes: [0], offset: count.offset }
  if (count.value < 0 || count.value > data.length - count.offset) throw new SerializationError(`invalid message index count ${count.value}`)
  const indexes: number[] = []
  let at = count.offset
  for (let i = 0; i < count.value; i++) {
    const r = readZigzag(data, at)
    if (r.value < 0) throw new SerializationError(`invalid message index ${r.value}`)
    indexes.push(r.value)
    at = r.offset
  }
  return { indexes, offset: at }
}

/** Subject name strategies of Confluent's serializers (key.subject.name.strategy / value.subject.name.strategy). */
export type SubjectNameStrategy = (topic: string, isKey: boolean, recordName: string | undefined) => string

export const TopicNameStrategy: SubjectNameStrategy = (topic, isKey) => `${topic}-${isKey ? 'key' : 'value'}`

export const RecordNameStrategy: SubjectNameStrategy = (_topic, _isKey, recordName) => {
  if (!recordName) throw new SerializationError('RecordNameStrategy needs a record name: the schema must be a named type')
  return recordName
}

export const TopicRecordNameStrategy: SubjectNameStrategy = (topic, _isKey, recordName) => {
  if (!recordName) throw new SerializationError('TopicRecordNameStrategy needs a record name: the schema must be a named type')
  return `${topic}-${recordName}`
}

export const SUBJECT_NAME_STRATEGIES: Record<string, SubjectNameStrategy> = {
  TopicNameStrategy,
  RecordNameStrategy,
  TopicRecordNameStrategy,
  // Confluent's fully qualified class names, as they appear in client configs.
  'io.confluent.kafka.serializers.subject.TopicNameStrategy': TopicNameStrategy,
  'io.confluent.kafka.serializers.subject.RecordNameStrategy': RecordNameStrategy,
  'io.confluent.kafka.serializers.subject.TopicRecordNameStrategy': TopicRecordNameStrategy,
}
