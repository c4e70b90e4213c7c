// COPY ... FROM STDIN over a `pg` client, and the text format of its rows.
//
// `pg` runs any object with a submit(connection) method as a query (its Submittable, what pg-cursor and
// pg-copy-streams use) and hands it the backend's messages: CopyInResponse, CommandComplete,
// ErrorResponse, ReadyForQuery. CopyIn below sends the whole COPY text as one CopyData message and
// CopyDone right behind the query, without waiting for the server's CopyInResponse: the rows are already
// encoded, and the wait was a round trip that stalled whenever this process's event loop was busy (the
// sink runtime converts the next records while a put is in flight), leaving PostgreSQL idle. The server
// reads its input in order, so the data is there when the COPY starts; if a statement before the COPY
// fails, PostgreSQL ignores CopyData and CopyDone outside copy mode (its protocol says so: the frontend
// may still be sending data of a failed COPY), and reports the error. The
// query is a simple query, so it may hold more statements around the COPY (BEGIN; COPY ...; INSERT ...;
// COMMIT): PostgreSQL runs them in order, the ones after the COPY once its data has arrived, stops at
// the first error, and answers ReadyForQuery once at the end.
//
// CopyIn is a pg.Query (pg's pipeline mode, which the sink's connection uses, takes no other kind of
// query) that replaces how the query is sent and answered.
//
// The text format (PostgreSQL's COPY, FORMAT text): one line per row, columns separated by a tab, NULL
// as \N, and inside a value a backslash, newline, carriage return and tab written as \\, \n, \r and \t.
// A value is read by its column's input function, as a query parameter in text is.
import pg from 'pg'

interface PgConnection {
  query(text: string): void
  sendCopyFromChunk(chunk: Buffer): void
  endCopyFrom(): void
  sendCopyFail(message: string): void
}

/** A query string with one COPY ... FROM STDIN and its data; resolves to the COPY's row count. */
class CopyIn extends pg.Query {
  private copiedRows = 0
  private error: Error | null = null
  readonly done: Promise<number>
  private resolve!: (rows: number) => void
  private reject!: (err: Error) => void

  constructor(private readonly sql: string, private readonly data: Buffer) {
    super({ text: sql })
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  // A property in pg's typings, so replaced by one here.
  override submit = (connection: pg.Connection): void => {
    const c = connection as unknown as PgConnection
    c.query(this.sql)
    if (this.data.length > 0) c.sendCopyFromChunk(this.data)
    c.endCopyFrom()
  }

  // The data went with the query (see the top of the file).
  handleCopyInResponse(): void {}

  handleCommandComplete(msg: { text?: string }): void {
    const m = /^COPY (\d+)/.exec(msg.text ?? '')
    if (m !== null) this.copiedRows = Number(m[1])
  }

  handleError(err: Error): void {
    // pg delivers the error, then the ReadyForQuery that follows it to no query.
    this.error = err
    this.reject(err)
  }

  handleReadyForQuery(): void {
    if (this.error === null) this.resolve(this.copiedRows)
  }

  // Messages a COPY FROM does not answer with; present because pg calls them on whatever query is active.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Runs a query string holding one `COPY ... FROM STDIN`, with data (rows in COPY text format); the rows copied. */
export function copyFrom(client: pg.Client, sql: string, data: Buffer): Promise<number> {
  const copy = new CopyIn(sql, data)
  client.query(copy as unknown as pg.Submittable)
  return copy.done
}

const NEEDS_ESCAPE = /[\\\n\r\t]/
const ESCAPED = /[\\\n\r\t]/g
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** A string as one COPY text value. */
export function copyString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? s.replace(ESCAPED, (c) => ESCAPES[c]!) : s
}

/**
 * A query parameter value (what the sink would bind: null, number, bigint, boolean, string or bytes) as
 * one COPY text value: the text pg would send for it, escaped.
 */
export function copyValue(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return NEEDS_ESCAPE.test(v) ? v.replace(ESCAPED, (c) => ESCAPES[c]!) : v
    case 'number':
    case 'bigint':
      return String(v)
    case 'boolean':
      return v ? 't' : 'f'
    default:
      if (v === null || v === undefined) return '\\N'
      // bytea in hex, its backslash written as \\
      if (v instanceof Uint8Array) return `\\\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`
      return copyString(String(v))
  }
}
