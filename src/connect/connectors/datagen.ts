// A datagen-style source for demos and benchmarks (after Confluent's kafka-connect-datagen): records of
// a quickstart shape (users, pageviews, orders, or a fixed-size `bytes` payload) with a schema, at most
// one per max.interval ms (0: as fast as the runtime takes them), until iterations records were made.
// Each task counts its own records; the count is the source offset ({"task.id": n} -> {"iteration": i}),
// so a restarted task continues instead of starting over. Values are generated from a seeded PRNG,
// so a run is reproducible (random.seed).
import { ConfigDef, NO_DEFAULT, Validators } from '../api/config-def.js'
import { type Schema, SchemaBuilder, Schemas, Struct, TimestampType } from '../api/data.js'
import { SourceConnector, type SourceRecord, sourceRecord, SourceTask } from '../api/plugin.js'

const VERSION = '1.0.0'

/** mulberry32: a small fast seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Quickstart {
  schema: Schema
  keyField: string
  make(i: number, rand: () => number): Struct
}

const USERS = SchemaBuilder.struct().name('ksql.users')
  .field('registertime', Schemas.INT64).field('userid', Schemas.STRING).field('regionid', Schemas.STRING).field('gender', Schemas.STRING).build()
const PAGEVIEWS = SchemaBuilder.struct().name('ksql.pageviews')
  .field('viewtime', Schemas.INT64).field('userid', Schemas.STRING).field('pageid', Schemas.STRING).build()
const ORDERS = SchemaBuilder.struct().name('ksql.orders')
  .field('ordertime', TimestampType.schema()).field('orderid', Schemas.INT32).field('itemid', Schemas.STRING).field('orderunits', Schemas.FLOAT64)
  .field('address', SchemaBuilder.struct().name('ksql.address').field('city', Schemas.STRING).field('state', Schemas.STRING).field('zipcode', Schemas.INT64).build())
  .build()

const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!

function quickstart(name: string, recordBytes: number): Quickstart {
  switch (name) {
    case 'users':
      return {
        schema: USERS,
        keyField: 'userid',
        make: (_i, r) => new Struct(USERS).put('registertime', 1487715775521 + Math.floor(r() * 1e9)).put('userid', `User_${1 + Math.floor(r() * 9)}`)
          .put('regionid', `Region_${1 + Math.floor(r() * 9)}`).put('gender', pick(r, ['MALE', 'FEMALE', 'OTHER'])),
      }
    case 'pageviews':
      return {
        schema: PAGEVIEWS,
        keyField: 'pageid',
        make: (i, r) => new Struct(PAGEVIEWS).put('viewtime', i * 10 + 1).put('userid', `User_${1 + Math.floor(r() * 9)}`).put('pageid', `Page_${1 + Math.floor(r() * 99)}`),
      }
    case 'orders':
      return {
        schema: ORDERS,
        keyField: 'orderid',
        make: (i, r) => new Struct(ORDERS).put('ordertime', new Date(1500000000000 + i * 1000)).put('orderid', i % 2 ** 31).put('itemid', `Item_${Math.floor(r() * 1000)}`)
          .put('orderunits', Math.round(r() * 1000) / 100)
          .put('address', new Struct(ORDERS.fields![4]!.schema).put('city', `City_${Math.floor(r() * 100)}`).put('state', `State_${Math.floor(r() * 50)}`).put('zipcode', 10000 + Math.floor(r() * 89999))),
      }
    case 'bytes': {
      const schema = SchemaBuilder.struct().name('skein.datagen.payload').field('id', Schemas.INT64).field('payload', Schemas.STRING).build()
      const filler = 'x'.repeat(Math.max(0, recordBytes - 30))
      return { schema, keyField: 'id', make: (i) => new Struct(schema).put('id', i).put('payload', filler) }
    }
    default:
      throw new Error(`unknown quickstart ${name}`)
  }
}

const QUICKSTARTS = ['users', 'pageviews', 'orders', 'bytes']

function configDef(): ConfigDef {
  return new ConfigDef()
    .define('kafka.topic', 'STRING', NO_DEFAULT, 'HIGH', 'Topic to write to', { validator: Validators.nonEmptyString() })
    .define('quickstart', 'STRING', 'users', 'HIGH', 'Shape of the generated records: users, pageviews, orders, or bytes (record.bytes of payload).', { validator: Validators.in(...QUICKSTARTS) })
    .define('max.interval', 'LONG', 500, 'MEDIUM', 'Most milliseconds between two records of a task (0: no wait).', { validator: Validators.atLeast(0) })
    .define('iterations', 'LONG', -1, 'MEDIUM', 'Records per task before it stops producing; -1: no end.', { validator: Validators.atLeast(-1) })
    .define('random.seed', 'LONG', 0, 'LOW', 'Seed of the generator, so runs are reproducible.')
    .define('record.bytes', 'INT', 100, 'LOW', 'Approximate size of a `bytes` quickstart record.', { validator: Validators.atLeast(1) })
    .define('batch.size', 'INT', 1000, 'LOW', 'Most records one poll returns when max.interval is 0.', { validator: Validators.atLeast(1) })
    .define('schema.keyfield', 'STRING', '', 'LOW', 'Field of the value to use as the (string) key; empty: the quickstart\'s own key field.')
}

export class DatagenConnector extends SourceConnector {
  private props: Record<string, string> = {}

  version(): string {
    return VERSION
  }

  config(): ConfigDef {
    return configDef()
  }

  start(props: Record<string, string>): void {
    configDef().parse(props)
    this.props = { ...props }
  }

  taskClass(): new () => DatagenTask {
    return DatagenTask
  }

  taskConfigs(maxTasks: number): Record<string, string>[] {
    return Array.from({ length: maxTasks }, (_v, i) => ({ ...this.props, 'task.id': String(i) }))
  }

  stop(): void {}

  override exactlyOnceSupport(): 'SUPPORTED' {
    return 'SUPPORTED'
  }

  override alterOffsets(): boolean {
    return true
  }
}

export class DatagenTask extends SourceTask {
  private topic = ''
  private qs!: Quickstart
  private keyField = ''
  private maxInterval = 500
  private iterations = -1
  private batchSize = 1000
  private count = 0
  private taskId = 0
  private rand: () => number = Math.random
  private stopped = false
  private readonly partition: Record<string, unknown> = {}

  version(): string {
    return VERSION
  }

  async start(props: Record<string, string>): Promise<void> {
    const c = configDef().parse(props)
    this.topic = c['kafka.topic'] as string
    this.qs = quickstart(c['quickstart'] as string, c['record.bytes'] as number)
    this.keyField = (c['schema.keyfield'] as string) || this.qs.keyField
    this.maxInterval = c['max.interval'] as number
    this.iterations = c['iterations'] as number
    this.batchSize = c['batch.size'] as number
    this.taskId = Number(props['task.id'] ?? 0)
    this.partition['task.id'] = this.taskId
    const offset = await this.context.offsetStorageReader.offset(this.partition)
    if (typeof offset?.['iteration'] === 'number') this.count = offset['iteration']
    this.rand = prng((c['random.seed'] as number) * 1000 + this.taskId + this.count)
  }

  async poll(): Promise<SourceRecord[] | null> {
    if (this.stopped) return null
    if (this.iterations >= 0 && this.count >= this.iterations) {
      await new Promise((r) => setTimeout(r, 1000))
      return null
    }
    if (this.maxInterval > 0) await new Promise((r) => setTimeout(r, Math.floor(this.rand() * this.maxInterval)))
    const n = this.maxInterval > 0 ? 1 : Math.min(this.batchSize, this.iterations >= 0 ? this.iterations - this.count : this.batchSize)
    const out: SourceRecord[] = []
    for (let k = 0; k < n; k++) {
      const value = this.qs.make(this.count, this.rand)
      this.count++
      out.push(sourceRecord({
        topic: this.topic,
        keySchema: Schemas.STRING,
        key: String(value.get(this.keyField)),
        valueSchema: this.qs.schema,
        value,
        sourcePartition: this.partition,
        sourceOffset: { iteration: this.count },
      }))
    }
    return out
  }

  stop(): void {
    this.stopped = true
  }
}
