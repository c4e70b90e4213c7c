// A PostgreSQL source with the options of Confluent's JDBC source connector where they apply: tables
// (table.whitelist / table.include.list, table.blacklist / table.exclude.list, schema.pattern) or one
// query (query), copied in one of the modes bulk, incrementing (a strictly increasing column),
// timestamp (a last-modified column: inserts and updates) or timestamp+incrementing (both: exact even
// with equal timestamps). Each table's progress is its source offset, under the partition
// {"protocol": "1", "table": "<database>.<schema>.<table>"} (query mode: {"query": "query"}), as
// {"incrementing": n} and/or {"timestamp": ms, "timestamp_nanos": ns}, so a restarted task resumes
// after the last row it wrote. Rows become Structs named after the table, on topic.prefix + table.
import type pg from 'pg'
import { ConfigDef, NO_DEFAULT, Validators } from '../../api/config-def.js'
import { type Schema, SchemaBuilder, Struct } from '../../api/data.js'
import { ConnectException, SourceConnector, type SourceRecord, sourceRecord, SourceTask } from '../../api/plugin.js'
import { columnSchema, columnValue, connect, connectionConfigDef, dataTypeOfOid, describeTable, type NumericMapping, quoteIdent, quoteTable, splitTableName, timestampNanos, VERSION } from './common.js'

const MODES = ['bulk', 'incrementing', 'timestamp', 'timestamp+incrementing']

function sourceConfigDef(): ConfigDef {
  return new ConfigDef()
    .include(connectionConfigDef())
    .define('mode', 'STRING', NO_DEFAULT, 'HIGH', 'The mode for updating a table each time it is polled: bulk, incrementing, timestamp or timestamp+incrementing.', {
      group: 'Mode', orderInGroup: 1, validator: Validators.in(...MODES), dependents: ['incrementing.column.name', 'timestamp.column.name'],
    })
    .define('incrementing.column.name', 'STRING', '', 'MEDIUM', 'The name of the strictly incrementing column to use to detect new rows.', { group: 'Mode', orderInGroup: 2 })
    .define('timestamp.column.name', 'LIST', [], 'MEDIUM', 'Comma separated list of one or more timestamp columns to detect new or modified rows using the COALESCE SQL function.', { group: 'Mode', orderInGroup: 3 })
    .define('timestamp.initial', 'LONG', null, 'LOW', 'The epoch timestamp (ms) used for initial queries that use timestamp criteria; -1 for the current time. Default: from the beginning.', { group: 'Mode', orderInGroup: 4 })
    .define('validate.non.null', 'BOOLEAN', true, 'LOW', 'Whether to check that the ID and timestamp columns are NOT NULL.', { group: 'Mode', orderInGroup: 5 })
    .define('query', 'STRING', '', 'MEDIUM', 'If specified, the query to perform to select new or updated rows (instead of whole tables).', { group: 'Mode', orderInGroup: 6 })
    .define('table.whitelist', 'LIST', [], 'MEDIUM', 'Deprecated: use table.include.list.', { group: 'Database' })
    .define('table.include.list', 'LIST', [], 'MEDIUM', 'List of tables to include in copying; empty: every table.', { group: 'Database' })
    .define('table.blacklist', 'LIST', [], 'MEDIUM', 'Deprecated: use table.exclude.list.', { group: 'Database' })
    .define('table.exclude.list', 'LIST', [], 'MEDIUM', 'List of tables to exclude from copying.', { group: 'Database' })
    .define('schema.pattern', 'STRING', null, 'MEDIUM', 'Schema of the tables to copy (default: the connection\'s current schema).', { group: 'Database' })
    .define('numeric.mapping', 'STRING', 'none', 'LOW', 'Map NUMERIC values by precision and optionally scale to integral or decimal types: none, precision_only, best_fit, best_fit_eager_double.', {
      group: 'Database', validator: Validators.in('none', 'precision_only', 'best_fit', 'best_fit_eager_double'),
    })
    .define('topic.prefix', 'STRING', '', 'HIGH', 'Prefix to prepend to table names to generate the name of the Kafka topic to publish data to, or in the case of a custom query, the full name of the topic to publish to.', { group: 'Connector' })
    .define('poll.interval.ms', 'INT', 5000, 'HIGH', 'Frequency in ms to poll for new data in each table.', { group: 'Connector', validator: Validators.atLeast(1) })
    .define('batch.max.rows', 'INT', 100, 'LOW', 'Maximum number of rows to include in a single batch when polling for new data.', { group: 'Connector', validator: Validators.atLeast(1) })
    .define('table.poll.interval.ms', 'LONG', 60000, 'LOW', 'Frequency in ms to poll for new or removed tables, which may result in updated task configurations to start polling for data in added tables or stop polling for data in removed tables.', { group: 'Connector' })
    .define('timestamp.delay.interval.ms', 'LONG', 0, 'HIGH', 'How long to wait after a row with certain timestamp appears before we include it in the result.', { group: 'Connector', validator: Validators.atLeast(0) })
}

function tableLists(c: Record<string, unknown>): { include: string[]; exclude: string[] } {
  const include = (c['table.include.list'] as string[]).length > 0 ? (c['table.include.list'] as string[]) : (c['table.whitelist'] as string[])
  const exclude = (c['table.exclude.list'] as string[]).length > 0 ? (c['table.exclude.list'] as string[]) : (c['table.blacklist'] as string[])
  return { include, exclude }
}

async function listTables(client: pg.Client, c: Record<string, unknown>): Promise<string[]> {
  const { include, exclude } = tableLists(c)
  if (include.length > 0) return [...include]
  const res = await client.query(
    `SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema = COALESCE($1, current_schema()) ORDER BY table_name`,
    [c['schema.pattern'] ?? null],
  )
  return res.rows.map((r: Record<string, string>) => (c['schema.pattern'] ? `${r['table_schema']}.${r['table_name']}` : r['table_name']!)).filter((t: string) => !exclude.includes(t) && !exclude.includes(splitTableName(t).table))
}

export class PostgresSourceConnector extends SourceConnector {
  private props: Record<string, string> = {}
  private tables: string[] = []
  private monitor: NodeJS.Timeout | null = null

  version(): string {
    return VERSION
  }

  config(): ConfigDef {
    return sourceConfigDef()
  }

  override async validate(props: Record<string, string>): Promise<{ errors: Record<string, string[]> }> {
    const errors: Record<string, string[]> = {}
    const add = (k: string, m: string): void => {
      ;(errors[k] ??= []).push(m)
    }
    let c: Record<string, unknown>
    try {
      c = sourceConfigDef().parse(props)
    } catch {
      return { errors }
    }
    const mode = c['mode'] as string
    if ((mode === 'incrementing' || mode === 'timestamp+incrementing') && c['incrementing.column.name'] === '') add('incrementing.column.name', `incrementing.column.name is required in mode ${mode}`)
    if ((mode === 'timestamp' || mode === 'timestamp+incrementing') && (c['timestamp.column.name'] as string[]).length === 0) add('timestamp.column.name', `timestamp.column.name is required in mode ${mode}`)
    const { include, exclude } = tableLists(c)
    if (include.length > 0 && exclude.length > 0) add('table.include.list', 'Cannot use both table.include.list and table.exclude.list')
    if (c['query'] !== '' && (include.length > 0 || exclude.length > 0)) add('query', 'Do not specify table filtering (table.include.list / table.exclude.list) with a query')
    if (c['query'] === '' && errors['connection.url'] === undefined) {
      try {
        const client = await connect({ ...props, 'connection.attempts': '1' })
        try {
          for (const t of include) if ((await describeTable(client, t)).length === 0) add('table.include.list', `Table ${t} does not exist`)
        } finally {
          await client.end()
        }
      } catch (err) {
        add('connection.url', (err as Error).message)
      }
    }
    return { errors }
  }

  async start(props: Record<string, string>): Promise<void> {
    const c = sourceConfigDef().parse(props)
    this.props = { ...props }
    if (c['query'] !== '') return
    const client = await connect(props)
    try {
      this.tables = await listTables(client, c)
    } finally {
      await client.end()
    }
    const interval = c['table.poll.interval.ms'] as number
    if ((tableLists(c).include.length === 0) && interval > 0) {
      // New or dropped tables change the task configs (Confluent's TableMonitorThread).
      this.monitor = setInterval(() => void this.checkTables(c), interval)
      this.monitor.unref()
    }
  }

  private async checkTables(c: Record<string, unknown>): Promise<void> {
    try {
      const client = await connect({ ...this.props, 'connection.attempts': '1' })
      try {
        const now = await listTables(client, c)
        if (now.join(',') !== this.tables.join(',')) {
          this.tables = now
          this.context.requestTaskReconfiguration()
        }
      } finally {
        await client.end()
      }
    } catch {
      // The database is away for now: look again at the next interval.
    }
  }

  taskClass(): new () => PostgresSourceTask {
    return PostgresSourceTask
  }

  taskConfigs(maxTasks: number): Record<string, string>[] {
    if ((this.props['query'] ?? '') !== '') return [{ ...this.props }]
    if (this.tables.length === 0) return []
    const n = Math.min(maxTasks, this.tables.length)
    const groups: string[][] = Array.from({ length: n }, () => [])
    this.tables.forEach((t, i) => groups[i % n]!.push(t))
    return groups.map((g) => ({ ...this.props, tables: g.join(',') }))
  }

  stop(): void {
    if (this.monitor !== null) clearInterval(this.monitor)
    this.monitor = null
  }

  override exactlyOnceSupport(props: Record<string, string>): 'SUPPORTED' | 'UNSUPPORTED' {
    // Bulk mode has no offsets to resume from; the others are repeatable from their offsets.
    return props['mode'] === 'bulk' ? 'UNSUPPORTED' : 'SUPPORTED'
  }

  override alterOffsets(): boolean {
    return true
  }
}

interface TableQuerier {
  /** Table name as configured, or null in query mode. */
  table: string | null
  topic: string
  partition: Record<string, unknown>
  /** Last offset: incrementing value, timestamp (ms) and nanos within the second. */
  incrementing: number | null
  timestampMs: number | null
  timestampNanos: number
  schema: Schema | null
  nextPollAt: number
  /** Column name -> schema field, in result order. */
  columns: { name: string; schema: Schema }[] | null
}

export class PostgresSourceTask extends SourceTask {
  private client: pg.Client | null = null
  private c: Record<string, unknown> = {}
  private queriers: TableQuerier[] = []
  private stopped = false
  private database = ''
  private wake: (() => void) | null = null

  version(): string {
    return VERSION
  }

  async start(props: Record<string, string>): Promise<void> {
    this.c = sourceConfigDef().parse(props)
    this.client = await connect(props)
    await this.client.query(`SET TIME ZONE 'UTC'`)
    this.database = String((await this.client.query('SELECT current_database() AS db, current_schema() AS s')).rows[0]?.['db'] ?? '')
    const schemaName = String((await this.client.query('SELECT current_schema() AS s')).rows[0]?.['s'] ?? 'public')
    const prefix = this.c['topic.prefix'] as string
    const query = this.c['query'] as string
    if (query !== '') {
      this.queriers = [{ table: null, topic: prefix, partition: { query: 'query' }, incrementing: null, timestampMs: null, timestampNanos: 0, schema: null, nextPollAt: 0, columns: null }]
    } else {
      const tables = (props['tables'] ?? '').split(',').filter((t) => t !== '')
      this.queriers = tables.map((t) => {
        const { schema, table } = splitTableName(t)
        return { table: t, topic: prefix + table, partition: { protocol: '1', table: `${this.database}.${schema ?? schemaName}.${table}` }, incrementing: null, timestampMs: null, timestampNanos: 0, schema: null, nextPollAt: 0, columns: null }
      })
    }
    const offsets = await this.context.offsetStorageReader.offsets(this.queriers.map((q) => q.partition))
    const initial = this.c['timestamp.initial'] as number | null
    for (const q of this.queriers) {
      const o = [...offsets].find(([p]) => JSON.stringify(p) === JSON.stringify(q.partition))?.[1] ?? null
      if (o !== null) {
        if (typeof o['incrementing'] === 'number') q.incrementing = o['incrementing']
        if (typeof o['timestamp'] === 'number') q.timestampMs = o['timestamp']
        if (typeof o['timestamp_nanos'] === 'number') q.timestampNanos = o['timestamp_nanos']
      } else if (initial !== null) {
        q.timestampMs = initial === -1 ? Date.now() : initial
      }
    }
  }

  private get mode(): string {
    return this.c['mode'] as string
  }

  /** The timestamp expression: one column, or COALESCE of several. */
  private tsExpr(): string {
    const cols = (this.c['timestamp.column.name'] as string[]).map(quoteIdent)
    return cols.length === 1 ? cols[0]! : `COALESCE(${cols.join(', ')})`
  }

  private offsetTimestampText(q: TableQuerier): string {
    const ms = q.timestampMs ?? 0
    const d = new Date(Math.floor(ms / 1000) * 1000)
    const micros = Math.floor(q.timestampNanos / 1000) || (ms % 1000) * 1000
    return `${d.toISOString().slice(0, 19).replace('T', ' ')}.${String(micros).padStart(6, '0')}`
  }

  private buildQuery(q: TableQuerier): { text: string; values: unknown[] } {
    const from = q.table === null ? `(${this.c['query'] as string}) AS skein_query` : quoteTable(q.table)
    const limit = this.c['batch.max.rows'] as number
    const inc = quoteIdent(this.c['incrementing.column.name'] as string)
    const delayMs = this.c['timestamp.delay.interval.ms'] as number
    const end = `(CURRENT_TIMESTAMP AT TIME ZONE 'UTC') - interval '${delayMs} milliseconds'`
    switch (this.mode) {
      case 'incrementing':
        return { text: `SELECT * FROM ${from} WHERE ${inc} > $1 ORDER BY ${inc} ASC LIMIT ${limit}`, values: [q.incrementing ?? -1] }
      case 'timestamp':
        return { text: `SELECT * FROM ${from} WHERE ${this.tsExpr()} > $1 AND ${this.tsExpr()} < ${end} ORDER BY ${this.tsExpr()} ASC`, values: [this.offsetTimestampText(q)] }
      case 'timestamp+incrementing': {
        const ts = this.tsExpr()
        return {
          text: `SELECT * FROM ${from} WHERE ${ts} < ${end} AND ((${ts} = $1 AND ${inc} > $2) OR ${ts} > $1) ORDER BY ${ts}, ${inc} ASC LIMIT ${limit}`,
          values: [this.offsetTimestampText(q), q.incrementing ?? -1],
        }
      }
      default:
        return { text: `SELECT * FROM ${from}`, values: [] }
    }
  }

  private async resolveColumns(q: TableQuerier, fields: { name: string; dataTypeID: number }[]): Promise<void> {
    const mapping = this.c['numeric.mapping'] as NumericMapping
    let infos = q.table !== null ? await describeTable(this.client!, q.table) : []
    if (infos.length === 0) infos = fields.map((f) => ({ name: f.name, dataType: dataTypeOfOid(f.dataTypeID), nullable: true, numericScale: null, hasDefault: false }))
    const byName = new Map(infos.map((i) => [i.name, i]))
    const cols = fields.map((f) => {
      const info = byName.get(f.name) ?? { name: f.name, dataType: dataTypeOfOid(f.dataTypeID), nullable: true, numericScale: null, hasDefault: false }
      return { name: f.name, schema: columnSchema(info, mapping) }
    })
    if (this.c['validate.non.null'] === true && q.table !== null) {
      for (const col of [this.c['incrementing.column.name'] as string, ...(this.c['timestamp.column.name'] as string[])]) {
        if (col === '' || !this.mode.includes(col === this.c['incrementing.column.name'] ? 'incrementing' : 'timestamp')) continue
        if (byName.get(col)?.nullable === true && (this.c['timestamp.column.name'] as string[]).length <= 1) throw new ConnectException(`Cannot make incremental queries using column ${col} on ${q.table} because this column is nullable.`)
      }
    }
    const b = SchemaBuilder.struct().name(q.table === null ? (this.c['topic.prefix'] as string) || 'query' : splitTableName(q.table).table)
    for (const col of cols) b.field(col.name, col.schema)
    q.schema = b.build()
    q.columns = cols
  }

  async poll(): Promise<SourceRecord[] | null> {
    while (!this.stopped) {
      const now = Date.now()
      const due = this.queriers.filter((q) => q.nextPollAt <= now)
      if (due.length === 0) {
        const next = Math.min(...this.queriers.map((q) => q.nextPollAt))
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.max(1, Math.min(next - now, 1000)))
          this.wake = () => {
            clearTimeout(t)
            resolve()
          }
        })
        this.wake = null
        // Control goes back to the worker between polls (SourceTask.poll's contract: block a while, then null).
        return null
      }
      for (const q of due) {
        const records = await this.pollTable(q)
        if (records.length > 0) return records
      }
    }
    return null
  }

  private async pollTable(q: TableQuerier): Promise<SourceRecord[]> {
    const { text, values } = this.buildQuery(q)
    const res = await this.client!.query({ text, values, rowMode: 'array' })
    const fields = res.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID }))
    if (q.columns === null || q.columns.length !== fields.length || q.columns.some((c, i) => c.name !== fields[i]!.name)) await this.resolveColumns(q, fields)
    const limit = this.c['batch.max.rows'] as number
    // A full batch: more rows may be waiting, poll again at once; else wait poll.interval.ms.
    const bounded = this.mode === 'incrementing' || this.mode === 'timestamp+incrementing'
    q.nextPollAt = bounded && res.rows.length >= limit ? 0 : Date.now() + (this.c['poll.interval.ms'] as number)
    const incName = this.c['incrementing.column.name'] as string
    const tsNames = this.c['timestamp.column.name'] as string[]
    const incIdx = fields.findIndex((f) => f.name === incName)
    const tsIdx = tsNames.map((n) => fields.findIndex((f) => f.name === n))
    const out: SourceRecord[] = []
    for (const row of res.rows as unknown[][]) {
      const value = new Struct(q.schema!)
      q.columns!.forEach((c, i) => value.put(c.name, columnValue(c.schema, row[i])))
      let offset: Record<string, unknown> | null = null
      if (this.mode !== 'bulk') {
        offset = {}
        if (this.mode.includes('incrementing')) {
          const v = Number(row[incIdx])
          q.incrementing = v
          offset['incrementing'] = v
        }
        if (this.mode.startsWith('timestamp')) {
          const raw = tsIdx.map((i) => row[i]).find((v) => v !== null && v !== undefined)
          if (raw !== undefined) {
            const text = String(raw)
            const date = columnValue({ type: 'int64', optional: false, name: 'org.apache.kafka.connect.data.Timestamp' }, text) as Date
            q.timestampMs = date.getTime()
            q.timestampNanos = timestampNanos(text)
          }
          offset['timestamp'] = q.timestampMs
          offset['timestamp_nanos'] = q.timestampNanos
        }
      }
      out.push(sourceRecord({ topic: q.topic, sourcePartition: q.partition, sourceOffset: offset, valueSchema: q.schema, value }))
    }
    return out
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.wake?.()
    const c = this.client
    this.client = null
    await c?.end().catch(() => {})
  }
}

export { sourceConfigDef as postgresSourceConfigDef }
