// A record as the Processor API sees it (Kafka's org.apache.kafka.streams.processor.api.Record): key,
// value, timestamp and headers. It is immutable by convention: withKey / withValue / withTimestamp /
// withHeaders return a new record, so that a processor forwarding to several children cannot change
// what a sibling sees.
import { Headers } from './headers.js'

export class Record<K, V> {
  readonly headers: Headers

  constructor(
    readonly key: K,
    readonly value: V,
    readonly timestamp: number,
    headers?: Headers,
  ) {
    if (!Number.isFinite(timestamp) || timestamp < 0) throw new RangeError(`a record's timestamp must be a non-negative number, not ${timestamp}`)
    this.headers = headers ?? new Headers()
  }

  withKey<K2>(key: K2): Record<K2, V> {
    return new Record(key, this.value, this.timestamp, this.headers)
  }

  withValue<V2>(value: V2): Record<K, V2> {
    return new Record(this.key, value, this.timestamp, this.headers)
  }

  withTimestamp(timestamp: number): Record<K, V> {
    return new Record(this.key, this.value, timestamp, this.headers)
  }

  withHeaders(headers: Headers): Record<K, V> {
    return new Record(this.key, this.value, this.timestamp, headers)
  }
}

/** A key and a value (Kafka's KeyValue), as the DSL's map and flatMap return them. */
export class KeyValue<K, V> {
  constructor(
    readonly key: K,
    readonly value: V,
  ) {}

  static pair<K, V>(key: K, value: V): KeyValue<K, V> {
    return new KeyValue(key, value)
  }

  toString(): string {
    return `KeyValue(${String(this.key)}, ${String(this.value)})`
  }
}

/** Where the record being processed came from (Kafka's RecordMetadata); absent for punctuations. */
export interface RecordMetadata {
  readonly topic: string
  readonly partition: number
  readonly offset: number
}
