// A PostgreSQL sink with the options of Confluent's JDBC sink connector where they apply: insert.mode
// insert | upsert (INSERT ... ON CONFLICT (pk) DO UPDATE) | update, pk.mode none | kafka | record_key |
// record_value with pk.fields, delete.enabled (a tombstone deletes the row of its key), auto.create and
// auto.evolve (tables and missing columns made from the record schemas), fields.whitelist /
// fields.include.list, table.name.format, batch.size, max.retries and retry.backoff.ms.
//
// Each put() writes its records in one database transaction, in order: consecutive writes to a table
// become batches of at most batch.size rows (an upsert batch keeps only the last record of each key,
// which is what applying them one by one would leave), a delete or a schema change closes the batch.
// A batch is sent in COPY text format: an insert is COPY into the table, an upsert COPY into a
// temporary staging table of the same column types and one INSERT ... SELECT ... ON CONFLICT DO UPDATE
// from it, both in one query string (the rows as PostgreSQL's own bulk load reads them, with no per-row
// statement or array parameter to build, in one round trip); deletes are DELETE ... WHERE (key) IN (...).
//
// The write runs behind put() (SinkTask's contract: records given to put() are durable after flush()).
// put() turns its records into encoded batches, waits for the previous put's write, starts its own and
// returns: the next records are converted and encoded while PostgreSQL writes these, instead of
// PostgreSQL waiting for them. Writes stay one at a time, in put order, on one connection. An upsert
// that is one query string goes out behind the write still running (pg's pipeline mode), so PostgreSQL
// starts it the moment the other ends, not once this process has read that answer; its guard (see
// writesSent) makes it fail, committing nothing, if the write before it did not commit. A failed
// write is rolled back and kept: the next put() throws RetriableException (after retry.backoff.ms the
// runtime gives it its records again, and the failed write goes first), and flush() retries it itself;
// after max.retries a ConnectException fails the task. The runtime commits consumer offsets only after
// flush(), so only for records that are in the database; upserts make a redelivered record land once.
import type pg from 'pg'
import { ConfigDef, Validators } from '../../api/config-def.js'
import { DATE_NAME, DECIMAL_NAME, type Field, type Schema, Struct, TIME_NAME, TIMESTAMP_NAME } from '../../api/data.js'
import { ConnectException, RetriableException, SinkConnector, type SinkRecord, SinkTask, type TopicPartition } from '../../api/plugin.js'
import { copyFrom, copyValue } from './copy.js'
import { type ColumnInfo, connect, connectionConfigDef, describeTable, quoteIdent, quoteTable, VERSION } from './common.js'

function sinkConfigDef(): ConfigDef {
  return new ConfigDef()
    .include(connectionConfigDef())
    .define('insert.mode', 'STRING', 'insert', 'HIGH', 'The insertion mode to use: insert, upsert or update.', { group: 'Writes', orderInGroup: 1, validator: Validators.inIgnoreCase('insert', 'upsert', 'update') })
    .define('batch.size', 'INT', 3000, 'MEDIUM', 'Specifies how many records to attempt to batch together for insertion into the destination table, when possible.', { group: 'Writes', orderInGroup: 2, validator: Validators.atLeast(0) })
    .define('delete.enabled', 'BOOLEAN', false, 'MEDIUM', 'Whether to treat null record values as deletes. Requires pk.mode to be record_key.', { group: 'Writes', orderInGroup: 3 })
    .define('table.name.format', 'STRING', '${topic}', 'MEDIUM', 'A format string for the destination table name, which may contain \'${topic}\' as a placeholder for the originating topic name.', { group: 'Data Mapping', orderInGroup: 1 })
    .define('pk.mode', 'STRING', 'none', 'HIGH', 'The primary key mode: none, kafka, record_key or record_value.', { group: 'Data Mapping', orderInGroup: 2, validator: Validators.inIgnoreCase('none', 'kafka', 'record_key', 'record_value') })
    .define('pk.fields', 'LIST', [], 'MEDIUM', 'List of comma-separated primary key field names. The runtime interpretation of this config depends on the pk.mode.', { group: 'Data Mapping', orderInGroup: 3 })
    .define('fields.whitelist', 'LIST', [], 'MEDIUM', 'Deprecated: use fields.include.list.', { group: 'Data Mapping', orderInGroup: 4 })
    .define('fields.include.list', 'LIST', [], 'MEDIUM', 'List of comma-separated record value field names. If empty, all fields from the record value are utilized, otherwise used to filter to the desired fields.', { group: 'Data Mapping', orderInGroup: 5 })
    .define('auto.create', 'BOOLEAN', false, 'MEDIUM', 'Whether to automatically create the destination table based on record schema if it is found to be missing by issuing CREATE.', { group: 'DDL Support', orderInGroup: 1 })
    .define('auto.evolve', 'BOOLEAN', false, 'MEDIUM', 'Whether to automatically add columns in the table schema when found to be missing relative to the record schema by issuing ALTER.', { group: 'DDL Support', orderInGroup: 2 })
    .define('quote.sql.identifiers', 'STRING', 'always', 'MEDIUM', 'When to quote table names, column names, and other identifiers in SQL statements: always (the only one supported).', { group: 'DDL Support', orderInGroup: 3, validator: Validators.inIgnoreCase('always') })
    .define('max.retries', 'INT', 10, 'MEDIUM', 'The maximum number of times to retry on errors before failing the task.', { group: 'Retries', orderInGroup: 1, validator: Validators.atLeast(0) })
    .define('retry.backoff.ms', 'INT', 3000, 'MEDIUM', 'The time in milliseconds to wait following an error before a retry attempt is made.', { group: 'Retries', orderInGroup: 2, validator: Validators.atLeast(0) })
}

export class PostgresSinkConnector extends SinkConnector {
  private props: Record<string, string> = {}

  version(): string {
    return VERSION
  }

  config(): ConfigDef {
    return sinkConfigDef()
  }

  override validate(props: Record<string, string>): { errors: Record<string, string[]> } {
    const errors: Record<string, string[]> = {}
    const pkMode = (props['pk.mode'] ?? 'none').toLowerCase()
    if (props['delete.enabled'] === 'true' && pkMode !== 'record_key') (errors['delete.enabled'] ??= []).push('Deletes are only supported for pk.mode record_key')
    if ((props['insert.mode'] ?? 'insert').toLowerCase() === 'upsert' && pkMode === 'none') (errors['pk.mode'] ??= []).push('Upserts need a primary key: set pk.mode to record_key, record_value or kafka')
    return { errors }
  }

  start(props: Record<string, string>): void {
    sinkConfigDef().parse(props)
    const v = this.validate(props)
    const first = Object.entries(v.errors)[0]
    if (first !== undefined) throw new ConnectException(`${first[0]}: ${first[1][0]}`)
    this.props = { ...props }
  }

  taskClass(): new () => PostgresSinkTask {
    return PostgresSinkTask
  }

  taskConfigs(maxTasks: number): Record<string, string>[] {
    return Array.from({ length: maxTasks }, () => ({ ...this.props }))
  }

  stop(): void {}

  override alterOffsets(): boolean {
    return true
  }
}

/** Connect schema -> PostgreSQL column type (auto.create / auto.evolve). */
export function sqlType(schema: Schema): string {
  switch (schema.name) {
    case DECIMAL_NAME:
      return 'DECIMAL'
    case DATE_NAME:
      return 'DATE'
    case TIME_NAME:
      return 'TIME'
    case TIMESTAMP_NAME:
      return 'TIMESTAMP'
  }
  switch (schema.type) {
    case 'int8':
    case 'int16':
      return 'SMALLINT'
    case 'int32':
      return 'INT'
    case 'int64':
      return 'BIGINT'
    case 'float32':
      return 'REAL'
    case 'float64':
      return 'DOUBLE PRECISION'
    case 'boolean':
      return 'BOOLEAN'
    case 'string':
      return 'TEXT'
    case 'bytes':
      return 'BYTEA'
    default:
      return 'JSONB'
  }
}

/** A Connect value -> a query parameter pg sends as text (or bytes). */
function sqlValue(schema: Schema, v: unknown): unknown {
  if (v === null || v === undefined) return null
  switch (schema.name) {
    case DATE_NAME:
      return (v as Date).toISOString().slice(0, 10)
    case TIME_NAME:
      return (v as Date).toISOString().slice(11, 23)
    case TIMESTAMP_NAME:
      return (v as Date).toISOString().replace('T', ' ').replace('Z', '')
    case DECIMAL_NAME:
      return String(v)
  }
  switch (schema.type) {
    case 'int64':
      return typeof v === 'bigint' ? v.toString() : v
    case 'bytes':
      return Buffer.from(v as Uint8Array)
    case 'array':
    case 'map':
    case 'struct':
      return JSON.stringify(toJson(v))
    default:
      return v
  }
}

function toJson(v: unknown): unknown {
  if (v instanceof Struct) return Object.fromEntries(v.schema.fields!.map((f) => [f.name, toJson(v.get(f))]))
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), toJson(x)]))
  if (Array.isArray(v)) return v.map(toJson)
  if (typeof v === 'bigint') return Number(v)
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64')
  return v
}

interface Column {
  name: string
  schema: Schema
}

/** What one record writes: the table, its columns (key ones first) and their values; or a delete. */
interface RowOp {
  table: string
  kind: 'write' | 'delete'
  keyColumns: Column[]
  valueColumns: Column[]
  keyValues: unknown[]
  values: unknown[]
  /** Identity of the columns (a batch holds rows of one shape). */
  shape: string
}

/**
 * Same-shape operations on one table, as execute() writes them. An insert or upsert batch keeps only its
 * first operation (its table and columns) and its rows encoded: the rest die young, not kept until the
 * write lands (GC).
 */
interface Batch {
  first: RowOp
  size: number
  /** Every operation: deletes and updates, which are written from their values. */
  ops: RowOp[] | null
  /** The rows in COPY text format (an upsert's last record of each key): inserts and upserts. */
  copyData: Buffer | null
}

/** A put's records as the batches its write executes. */
interface PreparedWrite {
  batches: Batch[]
  /** Set once it is a guarded write whose query is on the connection: the next guarded write may be sent behind it. */
  sent?: boolean
}

const NO_KEY: { columns: Column[]; values: unknown[] } = { columns: [], values: [] }

interface ValueLayout {
  fields: Field[]
  columns: Column[]
  shape: string
}

export class PostgresSinkTask extends SinkTask {
  private client: pg.Client | null = null
  private c: Record<string, unknown> = {}
  private props: Record<string, string> = {}
  private insertMode = 'insert'
  private pkMode = 'none'
  private pkFields: string[] = []
  private include: string[] = []
  private readonly tables = new Map<string, Map<string, ColumnInfo>>()
  private readonly layouts = new WeakMap<Schema, Map<string, ValueLayout>>()
  /** Staging tables of the current connection (upserts), by target table and columns. */
  private readonly stages = new Map<string, string>()
  /** Staging tables written in the current put's transaction (emptied only at its COMMIT). */
  private readonly usedStages = new Set<string>()
  private retriesLeft = 0
  /**
   * The last put's write: running (or null once it failed, to be written again by the next put or flush).
   * Cleared when it lands.
   */
  private pending: { write: PreparedWrite; running: Promise<void> | null } | null = null
  /**
   * Guarded writes sent on this connection. Guarded writes are upserts that are one query string with
   * their own transaction. Each sets the connection's counter in pg_temp.skein_sink_writes
   * from its number - 1 to its number, and fails unless the counter had the value the write before it
   * set. So a write sent behind one that failed, even one that failed at COMMIT, fails too and commits
   * nothing.
   */
  private writesSent = 0

  version(): string {
    return VERSION
  }

  async start(props: Record<string, string>): Promise<void> {
    this.props = props
    this.c = sinkConfigDef().parse(props)
    this.insertMode = (this.c['insert.mode'] as string).toLowerCase()
    this.pkMode = (this.c['pk.mode'] as string).toLowerCase()
    this.pkFields = this.c['pk.fields'] as string[]
    this.include = (this.c['fields.include.list'] as string[]).length > 0 ? (this.c['fields.include.list'] as string[]) : (this.c['fields.whitelist'] as string[])
    this.retriesLeft = this.c['max.retries'] as number
  }

  private async db(): Promise<pg.Client> {
    if (this.client === null) {
      this.stages.clear()
      // Pipeline mode: the next put's write goes out behind the running one (see put()).
      this.client = await connect(this.props, { pipeline: true })
      await this.client.query(`SET TIME ZONE 'UTC'`)
      // The guards' counter, beside the staging tables an upsert needs anyway (both live in the session).
      if (this.insertMode === 'upsert') await this.client.query('CREATE TEMP TABLE skein_sink_writes (n bigint CONSTRAINT previous_write_committed CHECK (n IS NOT NULL)); INSERT INTO skein_sink_writes VALUES (0)')
      this.writesSent = 0
    }
    return this.client
  }

  private readonly tableNames = new Map<string, string>()

  private tableName(topic: string): string {
    let name = this.tableNames.get(topic)
    if (name === undefined) this.tableNames.set(topic, (name = (this.c['table.name.format'] as string).replaceAll('${topic}', topic)))
    return name
  }

  /** The key columns and values of a record by pk.mode. */
  private keyOf(r: SinkRecord): { columns: Column[]; values: unknown[] } {
    switch (this.pkMode) {
      case 'none':
        return NO_KEY
      case 'kafka': {
        if (this.kafkaColumns === null) {
          const names = this.pkFields.length === 3 ? this.pkFields : ['__connect_topic', '__connect_partition', '__connect_offset']
          this.kafkaColumns = [{ name: names[0]!, schema: { type: 'string', optional: false } }, { name: names[1]!, schema: { type: 'int32', optional: false } }, { name: names[2]!, schema: { type: 'int64', optional: false } }]
        }
        return { columns: this.kafkaColumns, values: [r.topic, r.kafkaPartition, r.kafkaOffset] }
      }
      case 'record_key': {
        if (r.keySchema === null && r.key === null) throw new ConnectException(`Sink connector requires records with a non-null key and a key schema for pk.mode record_key (topic ${r.topic}, offset ${r.kafkaOffset})`)
        if (r.key instanceof Struct) return this.structColumns(r.key, this.pkFields, 'key')
        if (this.pkFields.length !== 1) throw new ConnectException(`Need exactly one PK column defined since the key schema for records is a primitive type, defined columns are: [${this.pkFields.join(', ')}]`)
        const schema = r.keySchema ?? { type: typeof r.key === 'number' ? (Number.isInteger(r.key) ? 'int64' : 'float64') : 'string', optional: false } as Schema
        let columns = this.primitiveKeyColumns.get(schema)
        if (columns === undefined) this.primitiveKeyColumns.set(schema, (columns = [{ name: this.pkFields[0]!, schema: { ...schema, optional: false } }]))
        return { columns, values: [sqlValue(schema, r.key)] }
      }
      default: {
        if (!(r.value instanceof Struct)) throw new ConnectException(`Sink connector requires records with a Struct value for pk.mode record_value (topic ${r.topic}, offset ${r.kafkaOffset})`)
        if (this.pkFields.length === 0) throw new ConnectException('pk.mode record_value needs pk.fields')
        return this.structColumns(r.value, this.pkFields, 'value')
      }
    }
  }

  private structColumns(s: Struct, names: string[], what: string): { columns: Column[]; values: unknown[] } {
    let key = this.keyLayouts.get(s.schema)
    if (key === undefined) {
      const fields: Field[] = names.length === 0 ? [...s.schema.fields!] : names.map((n) => {
        const f = s.schema.fields!.find((x) => x.name === n)
        if (f === undefined) throw new ConnectException(`PK field '${n}' not found in the record ${what} schema`)
        return f
      })
      key = { fields, columns: fields.map((f) => ({ name: f.name, schema: f.schema })) }
      this.keyLayouts.set(s.schema, key)
    }
    const fields = key.fields
    const values = new Array<unknown>(fields.length)
    for (let i = 0; i < fields.length; i++) values[i] = sqlValue(fields[i]!.schema, s.get(fields[i]!))
    return { columns: key.columns, values }
  }

  /** Key fields by struct schema (pk.fields is fixed for the task). */
  private readonly keyLayouts = new WeakMap<Schema, { fields: Field[]; columns: Column[] }>()
  /** The key column of a primitive key (pk.mode record_key), by key schema. */
  private readonly primitiveKeyColumns = new WeakMap<Schema, Column[]>()
  /** pk.mode kafka's columns. */
  private kafkaColumns: Column[] | null = null
  /** The last value layout found, by its value schema and key columns: records in a row usually share them. */
  private lastLayout: { schema: Schema; keyColumns: Column[]; layout: ValueLayout } | null = null

  private toOp(r: SinkRecord): RowOp | null {
    const table = this.tableName(r.topic)
    if (r.value === null) {
      if (this.c['delete.enabled'] !== true) return null
      const key = this.keyOf(r)
      return { table, kind: 'delete', keyColumns: key.columns, valueColumns: [], keyValues: key.values, values: [], shape: `d|${key.columns.map((c) => c.name).join(',')}` }
    }
    if (!(r.value instanceof Struct) || r.valueSchema === null) throw new ConnectException(`Sink connector '${this.props['name'] ?? ''}' is configured with 'delete.enabled=${String(this.c['delete.enabled'])}' and 'pk.mode=${this.pkMode}' and therefore requires records with a non-null Struct value and non-null Struct schema, but found record at (topic='${r.topic}',partition=${r.kafkaPartition},offset=${r.kafkaOffset}) with a ${r.value === null ? 'null' : typeof r.value} value and ${r.valueSchema === null ? 'null' : r.valueSchema.type} value schema.`)
    const key = this.keyOf(r)
    const layout = this.valueLayout(r.valueSchema, key.columns)
    const value = r.value
    const values = new Array<unknown>(layout.fields.length)
    for (let i = 0; i < layout.fields.length; i++) values[i] = sqlValue(layout.fields[i]!.schema, value.get(layout.fields[i]!))
    return { table, kind: 'write', keyColumns: key.columns, valueColumns: layout.columns, keyValues: key.values, values, shape: layout.shape }
  }

  /** The value fields a record writes and its batch shape, computed once per value schema and key columns. */
  private valueLayout(schema: Schema, keyColumns: Column[]): ValueLayout {
    const last = this.lastLayout
    if (last !== null && last.schema === schema && last.keyColumns === keyColumns) return last.layout
    let bySchema = this.layouts.get(schema)
    if (bySchema === undefined) this.layouts.set(schema, (bySchema = new Map()))
    const keyId = keyColumns.map((c) => c.name).join(',')
    let layout = bySchema.get(keyId)
    if (layout === undefined) {
      const keyNames = new Set(keyColumns.map((c) => c.name))
      const fields = schema.fields!.filter((f) => !keyNames.has(f.name) && (this.include.length === 0 || this.include.includes(f.name)))
      layout = { fields, columns: fields.map((f) => ({ name: f.name, schema: f.schema })), shape: `w|${keyId}|${fields.map((f) => f.name).join(',')}` }
      bySchema.set(keyId, layout)
    }
    this.lastLayout = { schema, keyColumns, layout }
    return layout
  }

  /** Creates the table or adds missing columns (auto.create / auto.evolve), or fails naming what is missing. */
  private async ensureTable(client: pg.Client, op: RowOp): Promise<void> {
    let cols = this.tables.get(op.table)
    if (cols === undefined) {
      cols = new Map((await describeTable(client, op.table)).map((c) => [c.name, c]))
      if (cols.size === 0) {
        if (this.c['auto.create'] !== true) throw new ConnectException(`Table ${quoteTable(op.table)} is missing and auto-creation is disabled`)
        if (op.kind === 'delete') return
        const defs = [...op.keyColumns, ...op.valueColumns].map((c) => columnDefinition(c, op.keyColumns.includes(c)))
        const pk = op.keyColumns.length > 0 ? `, PRIMARY KEY(${op.keyColumns.map((c) => quoteIdent(c.name)).join(', ')})` : ''
        await client.query(`CREATE TABLE IF NOT EXISTS ${quoteTable(op.table)} (${defs.join(', ')}${pk})`)
        cols = new Map((await describeTable(client, op.table)).map((c) => [c.name, c]))
      }
      this.tables.set(op.table, cols)
    }
    const missing = [...op.keyColumns, ...op.valueColumns].filter((c) => !cols!.has(c.name))
    if (missing.length === 0) return
    if (this.c['auto.evolve'] !== true) throw new ConnectException(`Table ${quoteTable(op.table)} is missing fields (${missing.map((m) => m.name).join(', ')}) and auto-evolution is disabled`)
    for (const m of missing) {
      if (!m.schema.optional && m.schema.defaultValue === undefined) throw new ConnectException(`Cannot ALTER TABLE ${quoteTable(op.table)} to add missing field ${m.name}, as the field is not optional and does not have a default value`)
      await client.query(`ALTER TABLE ${quoteTable(op.table)} ADD COLUMN IF NOT EXISTS ${columnDefinition(m, false)}`)
    }
    this.tables.delete(op.table)
    await this.ensureTable(client, op)
  }

  async put(records: SinkRecord[]): Promise<void> {
    // Encoded while the previous put's write runs (a record the sink cannot write fails the task here).
    const write = this.prepare(records)
    // A guarded write goes out now, behind a guarded one still running: PostgreSQL starts it as soon as
    // that one ends, without waiting for this process to read the answer (its event loop may be busy
    // converting records). If the running write fails, this one commits nothing and is dropped: the
    // runtime puts its records again after the RetriableException, behind the failed write.
    const previous = this.pending
    const pipelined = write !== null && previous !== null && previous.running !== null && previous.write.sent === true && this.isGuarded(write) ? this.write(write) : null
    // Seen by the next put or flush, never as an unhandled rejection (a stopped task drops it).
    pipelined?.catch(() => {})
    try {
      await this.landPending()
    } catch (err) {
      if (err instanceof RetriableException) this.context.timeout(this.c['retry.backoff.ms'] as number)
      throw err
    }
    if (write === null) return
    let running = pipelined
    if (running === null) {
      running = this.write(write)
      running.catch(() => {})
    }
    this.pending = { write, running }
  }

  /** Waits for the last put's write, written again if it failed before; a failure: RetriableException or ConnectException. */
  private async landPending(): Promise<void> {
    const p = this.pending
    if (p === null) return
    try {
      await (p.running ??= this.write(p.write))
    } catch (err) {
      p.running = null
      if (err instanceof ConnectException) {
        this.pending = null
        throw err
      }
      if (this.retriesLeft <= 0) {
        this.pending = null
        throw new ConnectException(`Exceeded max.retries writing to PostgreSQL: ${(err as Error).message}`, { cause: err })
      }
      throw this.retriable(err)
    }
    this.pending = null
    this.retriesLeft = this.c['max.retries'] as number
  }

  /** The records as batches: consecutive same-shape operations on one table, each write batch encoded for COPY. */
  private prepare(records: SinkRecord[]): PreparedWrite | null {
    const ops: RowOp[] = []
    for (const r of records) {
      const op = this.toOp(r)
      if (op !== null) ops.push(op)
    }
    if (ops.length === 0) return null
    const batchSize = Math.max(1, this.c['batch.size'] as number)
    const batches: Batch[] = []
    for (let i = 0; i < ops.length;) {
      const first = ops[i]!
      let j = i + 1
      while (j < ops.length && j - i < batchSize && ops[j]!.table === first.table && ops[j]!.shape === first.shape) j++
      const batch = ops.slice(i, j)
      const copied = first.kind === 'write' && this.insertMode !== 'update'
      batches.push({ first, size: batch.length, ops: copied ? null : batch, copyData: copied ? copyRows(this.insertMode === 'upsert' ? lastOfEachKey(batch) : batch) : null })
      i = j
    }
    return { batches }
  }

  /** One put's batches, in one transaction; on failure rolled back, and the error thrown as it came. */
  private async write(write: PreparedWrite): Promise<void> {
    this.usedStages.clear()
    const batches = write.batches
    // A put that is one batch on a known table is sent in one round trip: a statement atomic by itself,
    // or (an upsert) one query string that carries its own BEGIN, guard and COMMIT. Anything
    // more runs in one transaction. Decided before any await, as put() decided isGuarded() for a write
    // it sends behind another.
    const single = this.isSingle(write)
    const client = await this.db()
    try {
      if (!single) await client.query('BEGIN')
      for (const batch of batches) {
        await this.ensureTable(client, batch.first)
        await this.execute(client, batch, single, () => {
          write.sent = true
        })
      }
      if (!single) await client.query('COMMIT')
    } catch (err) {
      // Also after a single round trip: its own BEGIN may have left a failed transaction open.
      await client.query('ROLLBACK').catch(() => {})
      // A table changed behind our back: read its columns again on the retry. A staging table created in
      // the rolled back transaction is gone.
      this.tables.clear()
      this.stages.clear()
      throw err
    }
  }

  /**
   * Whether write() sends this write as one guarded query string: an upsert of one batch on a known
   * table. (Plain inserts are not guarded: the guard's counter is session state, as an upsert's staging
   * table is, and an insert-only sink keeps working without any, behind PgBouncer's transaction pooling
   * for one.)
   */
  private isGuarded(write: PreparedWrite): boolean {
    return this.isSingle(write) && write.batches[0]!.first.kind === 'write' && this.insertMode === 'upsert'
  }

  /** Whether write() sends this write in one round trip: one batch, on a known table, that execute() writes in one. */
  private isSingle(write: PreparedWrite): boolean {
    const batches = write.batches
    return batches.length === 1 && this.tables.has(batches[0]!.first.table) && this.isOneRoundTrip(batches[0]!)
  }

  /** The statement that makes this write guarded (see writesSent). */
  private nextGuard(): string {
    const n = ++this.writesSent
    return `UPDATE pg_temp.skein_sink_writes SET n = CASE WHEN n = ${n - 1} THEN ${n} END`
  }

  /** Whether execute() writes this batch in one round trip, atomically when it may add its own transaction. */
  private isOneRoundTrip(batch: Batch): boolean {
    const first = batch.first
    if (first.kind === 'delete') return batch.size <= Math.floor(60000 / Math.max(1, first.keyColumns.length))
    if (this.insertMode === 'update') return batch.size === 1
    // insert: one COPY; upsert: BEGIN, the COPY into the staging table, the INSERT from it and COMMIT in one query string.
    return true
  }

  /** A failed write as RetriableException, one retry of max.retries used (the connection is opened again). */
  private retriable(err: unknown): RetriableException {
    const message = (err as Error).message
    this.retriesLeft--
    // A broken connection is opened again on the retry.
    const c = this.client
    this.client = null
    void c?.end().catch(() => {})
    return new RetriableException(`writing to PostgreSQL failed (${this.retriesLeft} retries left): ${message}`, { cause: err })
  }

  /**
   * One batch of same-shape operations on one table: COPY for writes, multi-row DELETEs, or UPDATEs.
   * ownTransaction: the put is this batch alone, and an upsert wraps itself in BEGIN ... COMMIT with its
   * guard (onSent is called once that query is on the connection).
   */
  private async execute(client: pg.Client, prepared: Batch, ownTransaction: boolean, onSent: () => void): Promise<void> {
    const first = prepared.first
    const batch = prepared.ops ?? []
    const table = quoteTable(first.table)
    const keyNames = first.keyColumns.map((c) => quoteIdent(c.name))
    if (first.kind === 'delete') {
      if (keyNames.length === 0) throw new ConnectException('Deletes need a primary key (pk.mode record_key)')
      const perStmt = Math.max(1, Math.floor(60000 / keyNames.length))
      for (let s = 0; s < batch.length; s += perStmt) {
        const part = batch.slice(s, s + perStmt)
        const params: unknown[] = []
        const tuples = part.map((op) => `(${op.keyValues.map((v) => `$${params.push(v)}`).join(', ')})`)
        await client.query(`DELETE FROM ${table} WHERE (${keyNames.join(', ')}) IN (${tuples.join(', ')})`, params)
      }
      return
    }
    const valueNames = first.valueColumns.map((c) => quoteIdent(c.name))
    const columns = [...keyNames, ...valueNames]
    if (this.insertMode === 'update') {
      for (const op of batch) {
        const params = [...op.values, ...op.keyValues]
        const set = valueNames.map((n, i) => `${n} = $${i + 1}`).join(', ')
        const where = keyNames.map((n, i) => `${n} = $${valueNames.length + i + 1}`).join(' AND ')
        if (set !== '' && where !== '') await client.query(`UPDATE ${table} SET ${set} WHERE ${where}`, params)
      }
      return
    }
    const onConflict = this.insertMode !== 'upsert' ? '' : valueNames.length === 0 ? ` ON CONFLICT (${keyNames.join(', ')}) DO NOTHING` : ` ON CONFLICT (${keyNames.join(', ')}) DO UPDATE SET ${valueNames.map((n) => `${n} = EXCLUDED.${n}`).join(', ')}`
    const list = columns.join(', ')
    const data = prepared.copyData!
    if (this.insertMode !== 'upsert') {
      // A plain insert is COPY into the table itself: all rows or, on any error, none.
      await copyFrom(client, `COPY ${table} (${list}) FROM STDIN`, data)
      return
    }
    // An upsert: COPY into a staging table of the same column types, then one INSERT ... SELECT ...
    // ON CONFLICT from it, in one simple-query string (PostgreSQL runs the statements after the COPY once
    // its data has arrived): one round trip. The staging table is emptied at COMMIT; an earlier batch of
    // this transaction (before a delete or another table) left its rows there.
    const stage = await this.stagingTable(client, table, list)
    const empty = this.usedStages.has(stage) ? `DELETE FROM ${stage}; ` : ''
    this.usedStages.add(stage)
    const merge = `INSERT INTO ${table} (${list}) SELECT ${list} FROM ${stage}${onConflict}`
    if (!ownTransaction) {
      await copyFrom(client, `${empty}COPY ${stage} FROM STDIN; ${merge}`, data)
      return
    }
    const sent = copyFrom(client, `BEGIN; ${this.nextGuard()}; ${empty}COPY ${stage} FROM STDIN; ${merge}; COMMIT`, data)
    onSent()
    await sent
  }

  /**
   * This connection's temporary table with the types of these columns of the table (created from the
   * table itself, so any column type works), emptied at every COMMIT.
   */
  private async stagingTable(client: pg.Client, table: string, list: string): Promise<string> {
    const id = `${table} (${list})`
    let name = this.stages.get(id)
    if (name === undefined) {
      name = `pg_temp.skein_stage_${this.stages.size + 1}`
      await client.query(`CREATE TEMP TABLE IF NOT EXISTS ${name} ON COMMIT DELETE ROWS AS SELECT ${list} FROM ${table} WITH NO DATA`)
      this.stages.set(id, name)
    }
    return name
  }

  /** Everything put is in the database when this returns: the last write landed, retried up to max.retries. */
  override async flush(_currentOffsets?: Map<string, { tp: TopicPartition; offset: number }>): Promise<void> {
    for (;;) {
      try {
        await this.landPending()
        return
      } catch (err) {
        if (!(err instanceof RetriableException)) throw err
        await new Promise((resolve) => setTimeout(resolve, this.c['retry.backoff.ms'] as number))
      }
    }
  }

  async stop(): Promise<void> {
    // A write still running is dropped with the connection: its records' offsets were not committed.
    this.pending = null
    const c = this.client
    this.client = null
    await c?.end().catch(() => {})
  }
}

/** An upsert batch's rows: one statement may not touch a row twice, and the last record of each key is what applying them in order leaves. */
function lastOfEachKey(batch: RowOp[]): RowOp[] {
  const last = new Map<unknown, RowOp>()
  for (let i = 0; i < batch.length; i++) {
    const op = batch[i]!
    // A one-column number key is its own map key, a string one tagged 's'; others by their JSON, tagged 'j'.
    const only = op.keyValues.length === 1 ? op.keyValues[0] : undefined
    const k = typeof only === 'number' ? only : typeof only === 'string' ? `s${only}` : `j${JSON.stringify(op.keyValues.map((v) => (Buffer.isBuffer(v) ? v.toString('hex') : v)))}`
    last.set(k, op)
  }
  // No key twice: the batch as it is.
  return last.size < batch.length ? [...last.values()] : batch
}

/** Rows (key values, then values) in COPY text format. */
function copyRows(rows: RowOp[]): Buffer {
  // One string, encoded once: Buffer.write per value costs more than the concatenation.
  let text = ''
  for (let r = 0; r < rows.length; r++) {
    const op = rows[r]!
    const keys = op.keyValues
    const values = op.values
    let line = ''
    for (let i = 0; i < keys.length; i++) line += (i === 0 ? '' : '\t') + copyValue(keys[i])
    for (let i = 0; i < values.length; i++) line += (i === 0 && keys.length === 0 ? '' : '\t') + copyValue(values[i])
    text += line + '\n'
  }
  return Buffer.from(text, 'utf8')
}

function columnDefinition(c: Column, isKey: boolean): string {
  let def = `${quoteIdent(c.name)} ${sqlType(c.schema)}`
  if (!c.schema.optional || isKey) def += ' NOT NULL'
  if (c.schema.defaultValue !== undefined && c.schema.defaultValue !== null) {
    const v = sqlValue(c.schema, c.schema.defaultValue)
    def += ` DEFAULT ${typeof v === 'number' || typeof v === 'boolean' ? String(v) : `'${String(v).replace(/'/g, "''")}'`}`
  }
  return def
}

export { sinkConfigDef as postgresSinkConfigDef }
