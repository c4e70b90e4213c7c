// What the DSL classes share: the topology being built with Kafka's generated names
// (KSTREAM-FILTER-0000000001, ...), KTable changes (a new and an old value), the serde of changes sent
// through repartition topics, and value getters (how a processor reads a KTable's current value for a
// key, from its store or through its upstream table's getter, as Kafka's KTableValueGetterSupplier).
import { SerializationException } from '../core/errors.js'
import type { Headers } from '../core/headers.js'
import type { Serde, SerdeDefaults } from '../core/serdes.js'
import type { ProcessorContext } from '../processor/api.js'
import { Topology } from '../processor/topology.js'
import { Stores, TimestampedKeyValueStoreBuilder, type BytesStoreSupplier } from '../state/builders.js'
import type { TimestampedKeyValueStore, ValueAndTimestamp } from '../state/stores.js'
import type { Materialized } from './options.js'

/** A KTable update: the key's new value and the one it replaces (null when absent or not tracked). */
export class Change<V> {
  constructor(
    readonly newValue: V | null,
    readonly oldValue: V | null,
  ) {}
}

export class InternalBuilder {
  readonly topology = new Topology()
  private index = 0

  newName(prefix: string): string {
    return `${prefix}${String(this.index++).padStart(10, '0')}`
  }

  newStoreName(prefix: string): string {
    return `${prefix}STATE-STORE-${String(this.index++).padStart(10, '0')}`
  }

  /** A timestamped key-value store as Materialized says (LMDB unless in_memory is asked for). */
  keyValueStore<K, V>(name: string, m: Materialized<K, V> | undefined, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): TimestampedKeyValueStoreBuilder<K, V> {
    const supplier: BytesStoreSupplier = (m?.supplier as BytesStoreSupplier | undefined) ?? (m?.storeType === 'in_memory' ? Stores.inMemoryKeyValueStore(name) : Stores.persistentTimestampedKeyValueStore(name))
    const b = Stores.timestampedKeyValueStoreBuilder(supplier, m?.keySerde ?? keySerde, m?.valueSerde ?? valueSerde)
    return m !== undefined && !m.loggingEnabled ? b.withLoggingDisabled() : b.withLoggingEnabled(m?.logConfig ?? {})
  }
}

/** Reads a KTable's current value for a key (Kafka's KTableValueGetter). */
export type ValueGetter<K, V> = (key: K) => ValueAndTimestamp<V> | null

/** Makes a ValueGetter inside a task (init), and names the stores it reads (connected to its users). */
export interface ValueGetterSupplier<K, V> {
  storeNames: string[]
  init(ctx: ProcessorContext<unknown, unknown>): ValueGetter<K, V>
}

export function storeGetter<K, V>(storeName: string): ValueGetterSupplier<K, V> {
  return {
    storeNames: [storeName],
    init(ctx) {
      const store = ctx.getStateStore<TimestampedKeyValueStore<K, V>>(storeName)
      return (key) => store.getWithTimestamp(key)
    },
  }
}

/**
 * Serde of a Change sent through a repartition topic (KTable.groupBy): [flags int8][new length int32]
 * [new bytes][old bytes], flag 1 = new present, 2 = old present. Without an inner serde, the
 * application's default value serde (given by configure).
 */
export function changeSerde<V>(given: Serde<V> | undefined): Serde<Change<V>> {
  let serde = given
  const inner = (): Serde<V> => {
    if (serde === undefined) throw new SerializationException('no value serde for a KTable change (the task did not configure one)')
    return serde
  }
  const configure = (d: SerdeDefaults): void => {
    serde ??= d.value as Serde<V>
  }
  return {
    name: 'Change',
    serializer: {
      configure,
      serialize(topic: string, c: Change<V> | null, headers?: Headers) {
        if (c === null) return null
        const n = c.newValue === null ? null : inner().serializer.serialize(topic, c.newValue, headers)
        const o = c.oldValue === null ? null : inner().serializer.serialize(topic, c.oldValue, headers)
        const out = Buffer.allocUnsafe(5 + (n?.length ?? 0) + (o?.length ?? 0))
        out[0] = (n !== null ? 1 : 0) | (o !== null ? 2 : 0)
        out.writeUInt32BE(n?.length ?? 0, 1)
        n?.copy(out, 5)
        o?.copy(out, 5 + (n?.length ?? 0))
        return out
      },
    },
    deserializer: {
      configure,
      deserialize(topic: string, data: Buffer | null, headers?: Headers) {
        if (data === null) return null
        if (data.length < 5) throw new SerializationException('a KTable change needs at least 5 bytes')
        const flags = data[0]!
        const nlen = data.readUInt32BE(1)
        const n = flags & 1 ? inner().deserializer.deserialize(topic, data.subarray(5, 5 + nlen), headers) : null
        const o = flags & 2 ? inner().deserializer.deserialize(topic, data.subarray(5 + nlen), headers) : null
        return new Change(n, o)
      },
    },
  }
}
