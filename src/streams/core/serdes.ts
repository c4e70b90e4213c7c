// Serdes: how keys and values become bytes and back (Kafka's Serde, Serializer, Deserializer and Serdes).
// A null stays null both ways, as in Kafka (tombstones). Numbers follow Kafka's encodings so that Java
// applications read the same bytes: Integer is a 4-byte big-endian int32, Long an 8-byte int64, Double
// and Float IEEE 754 big-endian, Short 2 bytes; String is UTF-8; Json is JSON text in UTF-8.
//
// Serialization is synchronous (it runs inside processing). A serde that needs the network first (the
// Schema Registry formats: a schema id to look up) says so through prepare(): the runtime awaits it
// before handing such a record to the topology, and only when it returns a promise (a cache miss).
import { SerializationException } from './errors.js'
import type { Headers } from './headers.js'

/** default.key.serde and default.value.serde, handed to serdes that wrap one left unspecified. */
export interface SerdeDefaults {
  key: Serde<unknown>
  value: Serde<unknown>
}

export interface Serializer<T> {
  serialize(topic: string, data: T | null, headers?: Headers): Buffer | null
  /** Work to do before serialize() may run for this topic (register a schema). */
  prepare?(topic: string): Promise<void> | undefined
  /** Called when a task starts with the application's default serdes (wrapping serdes of the DSL). */
  configure?(defaults: SerdeDefaults): void
}

export interface Deserializer<T> {
  deserialize(topic: string, data: Buffer | null, headers?: Headers): T | null
  /** Work to do before deserialize() may run on these bytes (fetch a schema); undefined when none. */
  prepare?(topic: string, data: Buffer | null): Promise<void> | undefined
  configure?(defaults: SerdeDefaults): void
}

export interface Serde<T> {
  readonly serializer: Serializer<T>
  readonly deserializer: Deserializer<T>
  /** Shown in error messages. */
  readonly name?: string
}

/** A serde from two functions (Serdes.serdeFrom); null is passed through on both sides. */
export function serdeFrom<T>(name: string, serialize: (data: T, topic: string) => Buffer, deserialize: (data: Buffer, topic: string) => T): Serde<T> {
  return {
    name,
    serializer: { serialize: (topic, data) => (data === null || data === undefined ? null : serialize(data, topic)) },
    deserializer: { deserialize: (topic, data) => (data === null ? null : deserialize(data, topic)) },
  }
}

function fixed(name: string, size: number, data: Buffer): void {
  if (data.length !== size) throw new SerializationException(`size of data received by ${name} deserializer is not ${size} (it is ${data.length})`)
}

const STRING = serdeFrom<string>('String', (s) => Buffer.from(s, 'utf8'), (b) => b.toString('utf8'))
const INTEGER = serdeFrom<number>(
  'Integer',
  (n) => {
    const b = Buffer.allocUnsafe(4)
    b.writeInt32BE(n)
    return b
  },
  (b) => {
    fixed('Integer', 4, b)
    return b.readInt32BE(0)
  },
)
const SHORT = serdeFrom<number>(
  'Short',
  (n) => {
    const b = Buffer.allocUnsafe(2)
    b.writeInt16BE(n)
    return b
  },
  (b) => {
    fixed('Short', 2, b)
    return b.readInt16BE(0)
  },
)
const TWO_32 = 4294967296
/** Kafka's LongSerializer as a JS number: exact within +-2^53 (counts, timestamps); a larger one is refused. */
const LONG = serdeFrom<number>(
  'Long',
  (n) => {
    if (!Number.isSafeInteger(n)) throw new SerializationException(`Long serde: ${n} is not an integer within +-2^53 (use Serdes.BigInt)`)
    const b = Buffer.allocUnsafe(8)
    const hi = Math.floor(n / TWO_32)
    b.writeInt32BE(hi, 0)
    b.writeUInt32BE(n - hi * TWO_32, 4)
    return b
  },
  (b) => {
    fixed('Long', 8, b)
    const n = b.readInt32BE(0) * TWO_32 + b.readUInt32BE(4)
    if (!Number.isSafeInteger(n)) throw new SerializationException('Long serde: the value does not fit a JS number exactly (use Serdes.BigInt)')
    return n
  },
)
const BIGINT = serdeFrom<bigint>(
  'BigInt',
  (n) => {
    const b = Buffer.allocUnsafe(8)
    b.writeBigInt64BE(n)
    return b
  },
  (b) => {
    fixed('Long', 8, b)
    return b.readBigInt64BE(0)
  },
)
const DOUBLE = serdeFrom<number>(
  'Double',
  (n) => {
    const b = Buffer.allocUnsafe(8)
    b.writeDoubleBE(n)
    return b
  },
  (b) => {
    fixed('Double', 8, b)
    return b.readDoubleBE(0)
  },
)
const FLOAT = serdeFrom<number>(
  'Float',
  (n) => {
    const b = Buffer.allocUnsafe(4)
    b.writeFloatBE(n)
    return b
  },
  (b) => {
    fixed('Float', 4, b)
    return b.readFloatBE(0)
  },
)
const BYTES = serdeFrom<Buffer>('Bytes', (b) => b, (b) => b)
const VOID: Serde<null> = {
  name: 'Void',
  serializer: { serialize: () => null },
  deserializer: {
    deserialize: (_t, data) => {
      if (data !== null) throw new SerializationException('Void deserializer got data that is not null')
      return null
    },
  },
}
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const UUID = serdeFrom<string>(
  'UUID',
  (s) => {
    if (!UUID_RE.test(s)) throw new SerializationException(`'${s}' is not a UUID`)
    return Buffer.from(s, 'utf8')
  },
  (b) => b.toString('utf8'),
)

function json<T>(): Serde<T> {
  return serdeFrom<T>(
    'Json',
    (v) => Buffer.from(JSON.stringify(v), 'utf8'),
    (b) => {
      try {
        return JSON.parse(b.toString('utf8')) as T
      } catch (err) {
        throw new SerializationException(`Json deserializer: ${(err as Error).message}`, { cause: err })
      }
    },
  )
}

/** The built-in serdes, by Kafka's names. */
export const Serdes = {
  String: (): Serde<string> => STRING,
  Integer: (): Serde<number> => INTEGER,
  Short: (): Serde<number> => SHORT,
  Long: (): Serde<number> => LONG,
  /** Kafka's Long encoding as a bigint (the whole int64 range). */
  BigInt: (): Serde<bigint> => BIGINT,
  Double: (): Serde<number> => DOUBLE,
  Float: (): Serde<number> => FLOAT,
  Bytes: (): Serde<Buffer> => BYTES,
  ByteArray: (): Serde<Buffer> => BYTES,
  Void: (): Serde<null> => VOID,
  UUID: (): Serde<string> => UUID,
  Json: <T = unknown>(): Serde<T> => json<T>(),
  serdeFrom,
} as const

/** Serializes, naming the serde and topic in the error (Kafka wraps ClassCastException the same way). */
export function serializeWith<T>(serde: Serializer<T>, topic: string, data: T | null, headers: Headers | undefined, what: string): Buffer | null {
  try {
    return serde.serialize(topic, data, headers)
  } catch (err) {
    if (err instanceof SerializationException) throw err
    throw new SerializationException(`cannot serialize the ${what} for topic '${topic}': ${(err as Error).message}`, { cause: err })
  }
}
