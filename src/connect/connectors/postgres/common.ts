// What the PostgreSQL source and sink share: the connection settings of Confluent's JDBC connector
// (connection.url as jdbc:postgresql://host:port/db?user=..&password=.., or a postgres:// URL;
// connection.user, connection.password, connection.attempts, connection.backoff.ms), a `pg` client that
// leaves dates, timestamps, int8 and numeric as text (so that they are parsed exactly, in UTC, here), and
// the mapping between PostgreSQL column types and Connect schemas.
import pg from 'pg'
import { ConfigDef, NO_DEFAULT, Validators } from '../../api/config-def.js'
import { DateType, Decimal, type Schema, SchemaBuilder, TimestampType, TimeType, unscaled, formatUnscaled } from '../../api/data.js'
import { ConnectException } from '../../api/plugin.js'

export const VERSION = '1.0.0'

export function connectionConfigDef(): ConfigDef {
  return new ConfigDef()
    .define('connection.url', 'STRING', NO_DEFAULT, 'HIGH', 'JDBC connection URL, e.g. jdbc:postgresql://localhost:5432/db (or a postgres:// URL).', {
      group: 'Database', orderInGroup: 1, width: 'LONG', displayName: 'JDBC URL', validator: Validators.nonEmptyString(),
    })
    .define('connection.user', 'STRING', null, 'HIGH', 'JDBC connection user.', { group: 'Database', orderInGroup: 2, width: 'LONG', displayName: 'JDBC User' })
    .define('connection.password', 'PASSWORD', null, 'HIGH', 'JDBC connection password.', { group: 'Database', orderInGroup: 3, width: 'LONG', displayName: 'JDBC Password' })
    .define('connection.attempts', 'INT', 3, 'LOW', 'Maximum number of attempts to retrieve a valid JDBC connection.', { group: 'Database', orderInGroup: 4, validator: Validators.atLeast(1) })
    .define('connection.backoff.ms', 'LONG', 10000, 'LOW', 'Backoff time in milliseconds between connection attempts.', { group: 'Database', orderInGroup: 5 })
    .define('db.timezone', 'STRING', 'UTC', 'MEDIUM', 'Name of the time zone of timestamp columns without a time zone. Only UTC is supported.', {
      group: 'Database', orderInGroup: 6, validator: Validators.in('UTC', 'Etc/UTC', 'GMT'),
    })
}

/** pg client settings from connection.url / user / password. */
export function pgConfig(props: Record<string, string>): pg.ClientConfig {
  const raw = props['connection.url'] ?? ''
  const url = raw.replace(/^jdbc:/, '')
  let u: URL
  try {
    u = new URL(url)
  } catch {
    throw new ConnectException(`connection.url '${raw}' is not a jdbc:postgresql:// or postgres:// URL`)
  }
  if (u.protocol !== 'postgresql:' && u.protocol !== 'postgres:') throw new ConnectException(`connection.url '${raw}' is not a PostgreSQL URL`)
  const user = props['connection.user'] ?? u.searchParams.get('user') ?? (u.username !== '' ? decodeURIComponent(u.username) : undefined)
  const password = props['connection.password'] ?? u.searchParams.get('password') ?? (u.password !== '' ? decodeURIComponent(u.password) : undefined)
  return {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port === '' ? 5432 : Number(u.port),
    database: decodeURIComponent(u.pathname.replace(/^\//, '')) || undefined,
    user,
    password,
    types: TEXT_TYPES,
    application_name: 'skein-connect',
  }
}

// OIDs whose values stay text: parsed here exactly and in UTC, not by pg's local-time parsers.
const TEXT_OIDS = new Set([20, 1700, 1082, 1083, 1114, 1184, 1266])
const TEXT_TYPES = {
  getTypeParser(oid: number, format?: string): (v: string) => unknown {
    if (TEXT_OIDS.has(oid)) return (v: string) => v
    return pg.types.getTypeParser(oid, (format ?? 'text') as 'text')
  },
}

/** A connected client, trying connection.attempts times with connection.backoff.ms in between. */
/**
 * A connected client, tried connection.attempts times connection.backoff.ms apart. pipeline: pg's
 * pipeline mode (each query is sent at once, behind any still running, instead of after them).
 */
export async function connect(props: Record<string, string>, options: { pipeline?: boolean } = {}): Promise<pg.Client> {
  const attempts = Number(props['connection.attempts'] ?? 3)
  const backoff = Number(props['connection.backoff.ms'] ?? 10000)
  let last: unknown
  for (let i = 0; i < attempts; i++) {
    const client = new pg.Client({ ...pgConfig(props), pipeline: options.pipeline === true })
    // An idle connection dropped by the server must not crash the worker: the next query fails instead.
    client.on('error', () => {})
    try {
      await client.connect()
      return client
    } catch (err) {
      last = err
      await client.end().catch(() => {})
      if (i + 1 < attempts) await new Promise((r) => setTimeout(r, backoff))
    }
  }
  throw new ConnectException(`could not connect to PostgreSQL: ${(last as Error).message}`, { cause: last })
}

/** "schema"."table" with each part quoted (quote.sql.identifiers=ALWAYS). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

export function quoteTable(table: string): string {
  const dot = splitTableName(table)
  return dot.schema === null ? quoteIdent(dot.table) : `${quoteIdent(dot.schema)}.${quoteIdent(dot.table)}`
}

export function splitTableName(table: string): { schema: string | null; table: string } {
  const i = table.indexOf('.')
  return i < 0 ? { schema: null, table } : { schema: table.slice(0, i), table: table.slice(i + 1) }
}

export interface ColumnInfo {
  name: string
  /** information_schema data_type, e.g. integer, bigint, numeric, timestamp without time zone. */
  dataType: string
  nullable: boolean
  numericScale: number | null
  hasDefault: boolean
}

/** Columns of a table in order, or [] when it does not exist. */
export async function describeTable(client: pg.Client, table: string): Promise<ColumnInfo[]> {
  const { schema, table: name } = splitTableName(table)
  const res = await client.query(
    `SELECT column_name, data_type, is_nullable, numeric_scale, column_default FROM information_schema.columns
     WHERE table_schema = COALESCE($1, current_schema()) AND table_name = $2 ORDER BY ordinal_position`,
    [schema, name],
  )
  return res.rows.map((r: Record<string, unknown>) => ({
    name: String(r['column_name']),
    dataType: String(r['data_type']),
    nullable: r['is_nullable'] === 'YES',
    numericScale: r['numeric_scale'] === null ? null : Number(r['numeric_scale']),
    hasDefault: r['column_default'] !== null,
  }))
}

export type NumericMapping = 'none' | 'precision_only' | 'best_fit' | 'best_fit_eager_double'

/** A column's Connect schema (the JDBC source's mapping for PostgreSQL). */
export function columnSchema(c: ColumnInfo, numericMapping: NumericMapping = 'none'): Schema {
  let b: SchemaBuilder
  switch (c.dataType) {
    case 'smallint':
      b = SchemaBuilder.int16()
      break
    case 'integer':
      b = SchemaBuilder.int32()
      break
    case 'bigint':
      b = SchemaBuilder.int64()
      break
    case 'real':
      b = SchemaBuilder.float32()
      break
    case 'double precision':
      b = SchemaBuilder.float64()
      break
    case 'boolean':
      b = SchemaBuilder.bool()
      break
    case 'numeric':
      if (numericMapping !== 'none' && c.numericScale === 0) b = SchemaBuilder.int64()
      else if (numericMapping === 'best_fit_eager_double' || (numericMapping === 'best_fit' && c.numericScale !== null && c.numericScale > 0)) b = SchemaBuilder.float64()
      else b = Decimal.builder(c.numericScale ?? 0)
      break
    case 'date':
      b = DateType.builder()
      break
    case 'time without time zone':
    case 'time with time zone':
      b = TimeType.builder()
      break
    case 'timestamp without time zone':
    case 'timestamp with time zone':
      b = TimestampType.builder()
      break
    case 'bytea':
      b = SchemaBuilder.bytes()
      break
    default:
      // text, varchar, char, uuid, json, jsonb, enums, ...: their text form.
      b = SchemaBuilder.string()
  }
  b.optional()
  if (!c.nullable) b.required()
  return b.build()
}

/** The ColumnInfo data type pg reports for a result field's type OID (query mode). */
export function dataTypeOfOid(oid: number): string {
  const m: Record<number, string> = {
    21: 'smallint', 23: 'integer', 20: 'bigint', 700: 'real', 701: 'double precision', 16: 'boolean', 1700: 'numeric',
    1082: 'date', 1083: 'time without time zone', 1114: 'timestamp without time zone', 1184: 'timestamp with time zone', 17: 'bytea',
  }
  return m[oid] ?? 'text'
}

/** A column value as pg returned it -> the Connect value of schema. */
export function columnValue(schema: Schema, v: unknown): unknown {
  if (v === null || v === undefined) return null
  switch (schema.name) {
    case 'org.apache.kafka.connect.data.Decimal': {
      const scale = Decimal.scale(schema)
      return formatUnscaled(unscaled(String(v), scale), scale)
    }
    case 'org.apache.kafka.connect.data.Date':
      return new Date(`${String(v)}T00:00:00Z`)
    case 'org.apache.kafka.connect.data.Time':
      return new Date(`1970-01-01T${String(v).slice(0, 12).replace(/[+-]\d\d(:\d\d)?$/, '')}Z`)
    case 'org.apache.kafka.connect.data.Timestamp':
      return parseTimestamp(String(v))
  }
  switch (schema.type) {
    case 'int64': {
      const n = typeof v === 'string' ? Number(v) : (v as number)
      if (typeof v === 'string' && !Number.isSafeInteger(n)) return BigInt(v.split('.')[0]!)
      return Math.trunc(n)
    }
    case 'float64':
    case 'float32':
      return Number(v)
    case 'string':
      return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)
    default:
      return v
  }
}

/** PostgreSQL's timestamp text (without zone: UTC; with zone: its offset). */
export function parseTimestamp(text: string): Date {
  const m = /^(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(\.\d+)?([+-]\d\d(?::?\d\d)?(?::\d\d)?)?$/.exec(text.trim())
  if (m === null) {
    if (text === 'infinity') return new Date(8.64e15)
    if (text === '-infinity') return new Date(-8.64e15)
    throw new ConnectException(`cannot parse timestamp '${text}'`)
  }
  const ms = m[7] !== undefined ? Math.floor(Number(m[7]) * 1000) : 0
  let t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]), ms)
  if (m[8] !== undefined) {
    const sign = m[8][0] === '-' ? -1 : 1
    const parts = m[8].slice(1).split(':')
    const hh = Number(parts[0]!.slice(0, 2))
    const mm = Number(parts[1] ?? (parts[0]!.length > 2 ? parts[0]!.slice(2) : 0))
    t -= sign * (hh * 60 + mm) * 60000
  }
  return new Date(t)
}

/** Microseconds past the millisecond of a timestamp text (for timestamp_nanos offsets). */
export function timestampNanos(text: string): number {
  const m = /\.(\d+)/.exec(text)
  return m === null ? 0 : Number(m[1]!.padEnd(9, '0').slice(0, 9))
}
