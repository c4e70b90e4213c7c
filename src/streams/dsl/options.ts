// The DSL's parameter objects, by Kafka's names: Consumed, Produced, Grouped, Materialized, Joined,
// StreamJoined, Repartitioned, Named, Branched, TableJoined. Each is an immutable-looking builder:
// the static factories start one, the with* methods return a copy with one more setting.
import type { StreamPartitioner, TimestampExtractor } from '../processor/api.js'
import type { Serde } from '../core/serdes.js'
import type { OffsetResetPolicy } from '../processor/topology.js'
import type { BytesStoreSupplier, SessionBytesStoreSupplier, WindowBytesStoreSupplier } from '../state/builders.js'

abstract class Options<T> {
  protected copy(patch: Partial<T>): this {
    return Object.assign(Object.create(Object.getPrototypeOf(this) as object) as this, this, patch)
  }
}

export class Named {
  private constructor(readonly name: string) {}
  static as(name: string): Named {
    return new Named(name)
  }
}

export class Consumed<K, V> extends Options<Consumed<K, V>> {
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  timestampExtractor?: TimestampExtractor
  offsetReset?: OffsetResetPolicy
  name?: string
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Consumed<K, V> {
    return new Consumed<K, V>().copy({ keySerde, valueSerde })
  }
  static as<K, V>(name: string): Consumed<K, V> {
    return new Consumed<K, V>().copy({ name })
  }
  withKeySerde(keySerde: Serde<K>): Consumed<K, V> {
    return this.copy({ keySerde })
  }
  withValueSerde(valueSerde: Serde<V>): Consumed<K, V> {
    return this.copy({ valueSerde })
  }
  withTimestampExtractor(timestampExtractor: TimestampExtractor): Consumed<K, V> {
    return this.copy({ timestampExtractor })
  }
  withOffsetResetPolicy(offsetReset: OffsetResetPolicy): Consumed<K, V> {
    return this.copy({ offsetReset })
  }
  withName(name: string): Consumed<K, V> {
    return this.copy({ name })
  }
}

export class Produced<K, V> extends Options<Produced<K, V>> {
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  partitioner?: StreamPartitioner<K, V>
  name?: string
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>, partitioner?: StreamPartitioner<K, V>): Produced<K, V> {
    return new Produced<K, V>().copy({ keySerde, valueSerde, partitioner })
  }
  static streamPartitioner<K, V>(partitioner: StreamPartitioner<K, V>): Produced<K, V> {
    return new Produced<K, V>().copy({ partitioner })
  }
  static as<K, V>(name: string): Produced<K, V> {
    return new Produced<K, V>().copy({ name })
  }
  withKeySerde(keySerde: Serde<K>): Produced<K, V> {
    return this.copy({ keySerde })
  }
  withValueSerde(valueSerde: Serde<V>): Produced<K, V> {
    return this.copy({ valueSerde })
  }
  withStreamPartitioner(partitioner: StreamPartitioner<K, V>): Produced<K, V> {
    return this.copy({ partitioner })
  }
  withName(name: string): Produced<K, V> {
    return this.copy({ name })
  }
}

export class Grouped<K, V> extends Options<Grouped<K, V>> {
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  name?: string
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Grouped<K, V> {
    return new Grouped<K, V>().copy({ keySerde, valueSerde })
  }
  static as<K, V>(name: string): Grouped<K, V> {
    return new Grouped<K, V>().copy({ name })
  }
  withKeySerde(keySerde: Serde<K>): Grouped<K, V> {
    return this.copy({ keySerde })
  }
  withValueSerde(valueSerde: Serde<V>): Grouped<K, V> {
    return this.copy({ valueSerde })
  }
  withName(name: string): Grouped<K, V> {
    return this.copy({ name })
  }
}

export class Repartitioned<K, V> extends Options<Repartitioned<K, V>> {
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  name?: string
  numberOfPartitions?: number
  partitioner?: StreamPartitioner<K, V>
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Repartitioned<K, V> {
    return new Repartitioned<K, V>().copy({ keySerde, valueSerde })
  }
  static as<K, V>(name: string): Repartitioned<K, V> {
    return new Repartitioned<K, V>().copy({ name })
  }
  static numberOfPartitions<K, V>(n: number): Repartitioned<K, V> {
    return new Repartitioned<K, V>().copy({ numberOfPartitions: n })
  }
  withName(name: string): Repartitioned<K, V> {
    return this.copy({ name })
  }
  withKeySerde(keySerde: Serde<K>): Repartitioned<K, V> {
    return this.copy({ keySerde })
  }
  withValueSerde(valueSerde: Serde<V>): Repartitioned<K, V> {
    return this.copy({ valueSerde })
  }
  withNumberOfPartitions(numberOfPartitions: number): Repartitioned<K, V> {
    if (!Number.isInteger(numberOfPartitions) || numberOfPartitions < 1) throw new RangeError(`number of partitions must be a positive integer, not ${numberOfPartitions}`)
    return this.copy({ numberOfPartitions })
  }
  withStreamPartitioner(partitioner: StreamPartitioner<K, V>): Repartitioned<K, V> {
    return this.copy({ partitioner })
  }
}

export type StoreType = 'persistent' | 'in_memory'

export class Materialized<K, V> extends Options<Materialized<K, V>> {
  storeName?: string
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  loggingEnabled = true
  /** The record cache of the store (state/caching.ts); used by the key-value stores of aggregations. */
  cachingEnabled = true
  logConfig: Record<string, string> = {}
  retentionMs?: number
  storeType?: StoreType
  supplier?: BytesStoreSupplier | WindowBytesStoreSupplier | SessionBytesStoreSupplier
  static as<K, V>(nameOrSupplier: string | BytesStoreSupplier | WindowBytesStoreSupplier | SessionBytesStoreSupplier): Materialized<K, V> {
    return typeof nameOrSupplier === 'string' ? new Materialized<K, V>().copy({ storeName: nameOrSupplier }) : new Materialized<K, V>().copy({ storeName: nameOrSupplier.name, supplier: nameOrSupplier })
  }
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Materialized<K, V> {
    return new Materialized<K, V>().copy({ keySerde, valueSerde })
  }
  withKeySerde(keySerde: Serde<K>): Materialized<K, V> {
    return this.copy({ keySerde })
  }
  withValueSerde<V2>(valueSerde: Serde<V2>): Materialized<K, V2> {
    return (this as unknown as Materialized<K, V2>).copy({ valueSerde })
  }
  withLoggingEnabled(config: Record<string, string> = {}): Materialized<K, V> {
    return this.copy({ loggingEnabled: true, logConfig: { ...config } })
  }
  withLoggingDisabled(): Materialized<K, V> {
    return this.copy({ loggingEnabled: false })
  }
  /** The default: an aggregation's updates of a key are deduplicated until the commit (window and session stores have no cache). */
  withCachingEnabled(): Materialized<K, V> {
    return this.copy({ cachingEnabled: true })
  }
  /** Every update of an aggregation goes downstream at once. */
  withCachingDisabled(): Materialized<K, V> {
    return this.copy({ cachingEnabled: false })
  }
  withRetention(retentionMs: number): Materialized<K, V> {
    return this.copy({ retentionMs })
  }
  withStoreType(storeType: StoreType): Materialized<K, V> {
    return this.copy({ storeType })
  }
}

export class Joined<K, V, VO> extends Options<Joined<K, V, VO>> {
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  otherValueSerde?: Serde<VO>
  name?: string
  static with<K, V, VO>(keySerde?: Serde<K>, valueSerde?: Serde<V>, otherValueSerde?: Serde<VO>): Joined<K, V, VO> {
    return new Joined<K, V, VO>().copy({ keySerde, valueSerde, otherValueSerde })
  }
  static as<K, V, VO>(name: string): Joined<K, V, VO> {
    return new Joined<K, V, VO>().copy({ name })
  }
  withName(name: string): Joined<K, V, VO> {
    return this.copy({ name })
  }
}

export class StreamJoined<K, V, VO> extends Options<StreamJoined<K, V, VO>> {
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  otherValueSerde?: Serde<VO>
  name?: string
  storeName?: string
  loggingEnabled = true
  static with<K, V, VO>(keySerde?: Serde<K>, valueSerde?: Serde<V>, otherValueSerde?: Serde<VO>): StreamJoined<K, V, VO> {
    return new StreamJoined<K, V, VO>().copy({ keySerde, valueSerde, otherValueSerde })
  }
  static as<K, V, VO>(storeName: string): StreamJoined<K, V, VO> {
    return new StreamJoined<K, V, VO>().copy({ storeName })
  }
  withName(name: string): StreamJoined<K, V, VO> {
    return this.copy({ name })
  }
  withStoreName(storeName: string): StreamJoined<K, V, VO> {
    return this.copy({ storeName })
  }
  withLoggingDisabled(): StreamJoined<K, V, VO> {
    return this.copy({ loggingEnabled: false })
  }
}

/** Options of a foreign-key join (Kafka's TableJoined). */
export class TableJoined<K, KO> extends Options<TableJoined<K, KO>> {
  name?: string
  partitioner?: StreamPartitioner<K, null>
  otherPartitioner?: StreamPartitioner<KO, null>
  static as<K, KO>(name: string): TableJoined<K, KO> {
    return new TableJoined<K, KO>().copy({ name })
  }
  withName(name: string): TableJoined<K, KO> {
    return this.copy({ name })
  }
}
