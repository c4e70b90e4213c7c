// The PostgreSQL connectors against a real PostgreSQL (test/harness/postgres.ts), driven directly as the
// worker drives them (the task contexts are small doubles: no broker is involved here). Sink: insert
// with pk.mode=kafka into an auto-created table, auto.evolve adding an optional column, update mode,
// fields.include.list, the write running behind put() until flush, a failing write rolled back and kept,
// written again first by the next put (RetriableException) or by flush until max.retries, then a
// ConnectException; a write sent behind a running one and refused by its guard when that one fails at
// COMMIT; COPY data sent behind its query, ignored after an error. Source: bulk, incrementing
// (resuming from a stored offset), query mode, table include lists, and a validation error for a missing
// column name.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import {
  ConnectException, ConnectHeaders, PostgresSinkConnector, PostgresSinkTask, PostgresSourceConnector, PostgresSourceTask, RetriableException,
  type Schema, SchemaBuilder, Schemas, type SinkRecord, type SourceRecord, Struct, TimestampType,
} from '../../src/connect/index.js'
import { copyFrom } from '../../src/connect/connectors/postgres/copy.js'
import { PostgresServer, postgresMissing } from '../harness/postgres.js'

const skip = postgresMissing()

function sinkRecord(topic: string, offset: number, keySchema: Schema | null, key: unknown, valueSchema: Schema | null, value: unknown): SinkRecord {
  return {
    topic, kafkaPartition: 0, kafkaOffset: offset, keySchema, key, valueSchema, value, timestamp: 0, headers: new ConnectHeaders(), timestampType: 'CreateTime',
    originalTopic: topic, originalKafkaPartition: 0, originalKafkaOffset: offset,
  }
}

describe.skipIf(skip !== undefined)('PostgreSQL connectors against a real server', () => {
  let pgs: PostgresServer
  let timeouts: number[] = []

  beforeAll(async () => {
    pgs = await PostgresServer.start({ settings: { fsync: 'off' } })
  }, 60000)
  afterAll(async () => {
    await pgs?.stop()
  })

  async function sinkTask(props: Record<string, string>): Promise<PostgresSinkTask> {
    const all = { 'connection.url': pgs.jdbcUrl, 'connection.user': 'skein', ...props }
    const connector = new PostgresSinkConnector()
    await connector.start(all)
    const [config] = await connector.taskConfigs(1)
    const task = new PostgresSinkTask()
    task.initialize({ configs: () => config!, offset: () => {}, timeout: (ms) => void timeouts.push(ms), assignment: () => [], requestCommit: () => {}, errantRecordReporter: null })
    await task.start(config!)
    return task
  }

  const V1 = SchemaBuilder.struct().name('item').field('sku', Schemas.STRING).field('qty', Schemas.INT32).build()
  const V2 = SchemaBuilder.struct().name('item').field('sku', Schemas.STRING).field('qty', Schemas.INT32).field('note', Schemas.OPTIONAL_STRING).build()

  test('sink: insert with pk.mode=kafka into an auto-created table, then auto.evolve adds an optional column', async () => {
    const task = await sinkTask({ topics: 'items', 'insert.mode': 'insert', 'pk.mode': 'kafka', 'auto.create': 'true', 'auto.evolve': 'true' })
    try {
      await task.put([0, 1, 2].map((i) => sinkRecord('items', i, null, null, V1, new Struct(V1).put('sku', `s${i}`).put('qty', i))))
      await task.put([sinkRecord('items', 3, null, null, V2, new Struct(V2).put('sku', 's3').put('qty', 3).put('note', 'new column'))])
      await task.flush(new Map())
    } finally {
      await task.stop()
    }
    const cols = await pgs.query<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_name = 'items' ORDER BY ordinal_position`)
    expect(cols.map((c) => c.column_name)).toEqual(['__connect_topic', '__connect_partition', '__connect_offset', 'sku', 'qty', 'note'])
    const pk = await pgs.query<{ attname: string }>(`SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'items'::regclass AND i.indisprimary ORDER BY a.attname`)
    expect(pk.map((p) => p.attname)).toEqual(['__connect_offset', '__connect_partition', '__connect_topic'])
    const rows = await pgs.query('SELECT "__connect_offset"::int AS o, sku, qty, note FROM items ORDER BY 1')
    expect(rows).toEqual([
      { o: 0, sku: 's0', qty: 0, note: null }, { o: 1, sku: 's1', qty: 1, note: null }, { o: 2, sku: 's2', qty: 2, note: null }, { o: 3, sku: 's3', qty: 3, note: 'new column' },
    ])
  })

  test('sink: upsert writes every column type through COPY and the staging table, awkward text and nulls included', async () => {
    const K = SchemaBuilder.struct().name('k').field('id', Schemas.INT64).build()
    const V = SchemaBuilder.struct().name('v')
      .field('id', Schemas.INT64).field('label', Schemas.OPTIONAL_STRING).field('raw', Schemas.OPTIONAL_BYTES)
      .field('ratio', Schemas.OPTIONAL_FLOAT64).field('ok', Schemas.OPTIONAL_BOOLEAN).field('at', TimestampType.builder().optional().build())
      .build()
    // COPY text's own escapes (tab, newline, carriage return, backslash, \\N, \\.) must come back verbatim.
    const awkward = 'quote " backslash \\ brace { } comma , NULL tab\there newline\nthere cr\rthere \\N \\. \\t é 🙂'
    const at = new Date(Date.UTC(2026, 11, 1, 12, 30, 45, 123))
    const record = (offset: number, id: number, label: string | null, raw: Buffer | null, ratio: number | null, ok: boolean | null): SinkRecord =>
      sinkRecord('typed', offset, K, new Struct(K).put('id', BigInt(id)), V,
        new Struct(V).put('id', BigInt(id)).put('label', label).put('raw', raw).put('ratio', ratio).put('ok', ok).put('at', label === null ? null : at))
    const task = await sinkTask({ topics: 'typed', 'insert.mode': 'upsert', 'pk.mode': 'record_key', 'auto.create': 'true' })
    try {
      await task.put([
        record(0, 1, 'first', Buffer.from([0, 1, 255]), 0.5, true),
        record(1, 2, awkward, Buffer.alloc(0), -1e300, false),
        record(2, 3, null, null, null, null),
        record(3, 1, 'first, again', Buffer.from('\\x00', 'latin1'), 2.25, false),
      ])
      // The table is known now: a put that is one statement goes without BEGIN/COMMIT, still deduplicated.
      await task.put([record(4, 4, 'four', null, 4, true), record(5, 4, 'four, again', null, 4.5, true)])
      await task.flush(new Map())
    } finally {
      await task.stop()
    }
    const rows = await pgs.query<Record<string, unknown>>(`SELECT id::int AS id, label, encode(raw, 'hex') AS raw, ratio, ok, to_char(at, 'YYYY-MM-DD HH24:MI:SS.MS') AS at FROM typed ORDER BY id`)
    expect(rows).toEqual([
      { id: 1, label: 'first, again', raw: Buffer.from('\\x00', 'latin1').toString('hex'), ratio: 2.25, ok: false, at: '2026-12-01 12:30:45.123' },
      { id: 2, label: awkward, raw: '', ratio: -1e300, ok: false, at: '2026-12-01 12:30:45.123' },
      { id: 3, label: null, raw: null, ratio: null, ok: null, at: null },
      { id: 4, label: 'four, again', raw: null, ratio: 4.5, ok: true, at: '2026-12-01 12:30:45.123' },
    ])
  })

  test('sink: tombstones delete in record order within one put, between upserts of the same keys (delete.enabled)', async () => {
    const K = SchemaBuilder.struct().name('k').field('id', Schemas.INT32).build()
    const V = SchemaBuilder.struct().name('v').field('id', Schemas.INT32).field('n', Schemas.INT32).build()
    const write = (offset: number, id: number, n: number): SinkRecord => sinkRecord('tomb', offset, K, new Struct(K).put('id', id), V, new Struct(V).put('id', id).put('n', n))
    const tombstone = (offset: number, id: number): SinkRecord => sinkRecord('tomb', offset, K, new Struct(K).put('id', id), null, null)
    const task = await sinkTask({ topics: 'tomb', 'insert.mode': 'upsert', 'pk.mode': 'record_key', 'delete.enabled': 'true', 'auto.create': 'true' })
    try {
      await task.put([write(0, 1, 1), write(1, 2, 1), write(2, 3, 1)])
      // 1: deleted, then written again; 2: written twice, then deleted; 3: untouched; 4: written, deleted, written twice.
      await task.put([tombstone(3, 1), write(4, 2, 2), write(5, 2, 3), write(6, 1, 2), tombstone(7, 2), write(8, 4, 1), tombstone(9, 4), write(10, 4, 2), write(11, 4, 3)])
      // Redelivered (at least once): the same records leave the same rows.
      await task.put([tombstone(3, 1), write(4, 2, 2), write(5, 2, 3), write(6, 1, 2), tombstone(7, 2), write(8, 4, 1), tombstone(9, 4), write(10, 4, 2), write(11, 4, 3)])
      await task.flush(new Map())
    } finally {
      await task.stop()
    }
    expect(await pgs.query('SELECT id, n FROM tomb ORDER BY id')).toEqual([{ id: 1, n: 2 }, { id: 3, n: 1 }, { id: 4, n: 3 }])
  })

  test('sink: update mode changes existing rows only; fields.include.list limits the columns written', async () => {
    await pgs.query('CREATE TABLE stock (sku TEXT PRIMARY KEY, qty INT, note TEXT)')
    await pgs.query(`INSERT INTO stock VALUES ('a', 1, 'keep'), ('b', 2, 'keep')`)
    const task = await sinkTask({ topics: 'stock', 'insert.mode': 'update', 'pk.mode': 'record_value', 'pk.fields': 'sku', 'fields.include.list': 'sku,qty' })
    try {
      await task.put([
        sinkRecord('stock', 0, null, null, V2, new Struct(V2).put('sku', 'a').put('qty', 10).put('note', 'ignored')),
        sinkRecord('stock', 1, null, null, V2, new Struct(V2).put('sku', 'zzz').put('qty', 99).put('note', null)),
      ])
      await task.flush(new Map())
    } finally {
      await task.stop()
    }
    expect(await pgs.query('SELECT sku, qty, note FROM stock ORDER BY sku')).toEqual([{ sku: 'a', qty: 10, note: 'keep' }, { sku: 'b', qty: 2, note: 'keep' }])
  })

  test('sink: the write runs behind put(): put returns while PostgreSQL is still busy with the last write, flush waits for it, and writes land in put order', async () => {
    await pgs.query('CREATE TABLE behind (sku TEXT PRIMARY KEY, qty INT)')
    const task = await sinkTask({ topics: 'behind', 'insert.mode': 'upsert', 'pk.mode': 'record_value', 'pk.fields': 'sku' })
    const row = (offset: number, qty: number): SinkRecord => sinkRecord('behind', offset, null, null, V1, new Struct(V1).put('sku', 'a').put('qty', qty))
    const locker = await pgs.client()
    try {
      await task.put([row(0, 1)])
      await task.flush(new Map())
      // Another session holds the table: the next write waits for it inside PostgreSQL.
      await locker.query('BEGIN')
      await locker.query('LOCK TABLE behind IN ACCESS EXCLUSIVE MODE')
      await task.put([row(1, 2)])
      let flushed = false
      const flush = task.flush(new Map()).then(() => (flushed = true))
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(flushed).toBe(false)
      await locker.query('COMMIT')
      await flush
      expect(await pgs.query('SELECT qty FROM behind')).toEqual([{ qty: 2 }])
      // A put while the last write waits: it returns once that write landed and its own started, and the last write wins.
      await locker.query('BEGIN')
      await locker.query('LOCK TABLE behind IN ACCESS EXCLUSIVE MODE')
      await task.put([row(2, 3)])
      let second = false
      const put = task.put([row(3, 4)]).then(() => (second = true))
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(second).toBe(false)
      await locker.query('COMMIT')
      await put
      await task.flush(new Map())
      expect(await pgs.query('SELECT qty FROM behind')).toEqual([{ qty: 4 }])
    } finally {
      await locker.end()
      await task.stop()
    }
  })

  test('sink: a failing write is rolled back and kept; the next put throws RetriableException (retry.backoff.ms) and writes it again first, until max.retries, then ConnectException', async () => {
    await pgs.query('CREATE TABLE strict_items (sku TEXT PRIMARY KEY, qty INT CHECK (qty >= 0))')
    timeouts = []
    const task = await sinkTask({ topics: 'strict_items', 'insert.mode': 'insert', 'pk.mode': 'record_value', 'pk.fields': 'sku', 'max.retries': '1', 'retry.backoff.ms': '5' })
    const batch = [
      sinkRecord('strict_items', 0, null, null, V1, new Struct(V1).put('sku', 'ok').put('qty', 1)),
      sinkRecord('strict_items', 1, null, null, V1, new Struct(V1).put('sku', 'bad').put('qty', -1)),
    ]
    const next = [sinkRecord('strict_items', 2, null, null, V1, new Struct(V1).put('sku', 'later').put('qty', 2))]
    try {
      // The write runs behind put(): its failure reaches the next put.
      await task.put(batch)
      await expect(task.put(next)).rejects.toBeInstanceOf(RetriableException)
      expect(timeouts).toEqual([5])
      // Redelivered: the failed write goes first, fails again, and max.retries (1) is used up.
      await expect(task.put(next)).rejects.toBeInstanceOf(ConnectException)
    } finally {
      await task.stop()
    }
    // One transaction per put: the good row of the failed batch is not there, nor anything after it.
    expect(await pgs.query('SELECT * FROM strict_items')).toEqual([])
  })

  test('sink: a failed upsert (one round trip with its own BEGIN) leaves nothing, lands before the records put after it once it can, and flush retries by itself', async () => {
    await pgs.query('CREATE TABLE strict_upserts (sku TEXT PRIMARY KEY, qty INT CONSTRAINT qty_not_negative CHECK (qty >= 0))')
    timeouts = []
    const task = await sinkTask({ topics: 'strict_upserts', 'insert.mode': 'upsert', 'pk.mode': 'record_value', 'pk.fields': 'sku', 'max.retries': '5', 'retry.backoff.ms': '1' })
    const row = (offset: number, sku: string, qty: number): SinkRecord => sinkRecord('strict_upserts', offset, null, null, V1, new Struct(V1).put('sku', sku).put('qty', qty))
    try {
      await task.put([row(0, 'a', 1)])
      await task.put([row(1, 'a', 2), row(2, 'b', -1)])
      await expect(task.put([row(3, 'b', 4), row(4, 'c', 5)])).rejects.toBeInstanceOf(RetriableException)
      expect(await pgs.query('SELECT sku, qty FROM strict_upserts ORDER BY sku')).toEqual([{ sku: 'a', qty: 1 }])
      // What failed it is gone: redelivered, the put writes the failed records first, then its own (b ends at 4, not -1).
      await pgs.query('ALTER TABLE strict_upserts DROP CONSTRAINT qty_not_negative')
      await task.put([row(3, 'b', 4), row(4, 'c', 5)])
      await task.flush(new Map())
      expect(await pgs.query('SELECT sku, qty FROM strict_upserts ORDER BY sku')).toEqual([{ sku: 'a', qty: 2 }, { sku: 'b', qty: 4 }, { sku: 'c', qty: 5 }])
      // flush() retries a failed write itself, and fails the task once max.retries is used up.
      await pgs.query('ALTER TABLE strict_upserts ADD CONSTRAINT qty_below_100 CHECK (qty < 100)')
      await task.put([row(5, 'd', 100)])
      const started = Date.now()
      await expect(task.flush(new Map())).rejects.toThrow(/Exceeded max.retries/)
      expect(Date.now() - started).toBeGreaterThanOrEqual(5)
      expect(timeouts).toEqual([1])
    } finally {
      await task.stop()
    }
    expect(await pgs.query('SELECT sku, qty FROM strict_upserts ORDER BY sku')).toEqual([{ sku: 'a', qty: 2 }, { sku: 'b', qty: 4 }, { sku: 'c', qty: 5 }])
  })

  test('sink: a write sent behind a running one commits nothing when that one fails, even at COMMIT; redelivered, both land in put order', async () => {
    await pgs.query('CREATE TABLE guarded (sku TEXT PRIMARY KEY, qty INT)')
    // A deferred constraint trigger fails a transaction at its COMMIT (after which the connection takes the next statement normally).
    await pgs.query(`CREATE FUNCTION guarded_no_13() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN IF NEW.qty = 13 THEN RAISE EXCEPTION 'qty 13 refused at commit'; END IF; RETURN NULL; END$$`)
    await pgs.query('CREATE CONSTRAINT TRIGGER guarded_no_13 AFTER INSERT OR UPDATE ON guarded DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION guarded_no_13()')
    timeouts = []
    const task = await sinkTask({ topics: 'guarded', 'insert.mode': 'upsert', 'pk.mode': 'record_value', 'pk.fields': 'sku', 'max.retries': '5', 'retry.backoff.ms': '1' })
    const row = (offset: number, sku: string, qty: number): SinkRecord => sinkRecord('guarded', offset, null, null, V1, new Struct(V1).put('sku', sku).put('qty', qty))
    const locker = await pgs.client()
    try {
      await task.put([row(0, 'a', 1)])
      await task.flush(new Map())
      // Another session holds the table: the next write waits inside PostgreSQL, and the put after it is
      // sent behind it on the same connection.
      await locker.query('BEGIN')
      await locker.query('LOCK TABLE guarded IN ACCESS EXCLUSIVE MODE')
      await task.put([row(1, 'a', 13), row(2, 'b', 13)])
      await new Promise((resolve) => setTimeout(resolve, 100))
      const behind = task.put([row(3, 'a', 2), row(4, 'b', 3)])
      behind.catch(() => {})
      await new Promise((resolve) => setTimeout(resolve, 200))
      await locker.query('COMMIT')
      // The first write fails at COMMIT; the one behind it ran, and its guard refused it.
      await expect(behind).rejects.toBeInstanceOf(RetriableException)
      expect(timeouts).toEqual([1])
      expect(await pgs.query('SELECT sku, qty FROM guarded ORDER BY sku')).toEqual([{ sku: 'a', qty: 1 }])
      expect(pgs.log).toContain('previous_write_committed')
      // Redelivered once the trigger is gone: the failed write lands first, then the one put after it.
      await pgs.query('DROP TRIGGER guarded_no_13 ON guarded')
      await task.put([row(3, 'a', 2), row(4, 'b', 3)])
      await task.flush(new Map())
      expect(await pgs.query('SELECT sku, qty FROM guarded ORDER BY sku')).toEqual([{ sku: 'a', qty: 2 }, { sku: 'b', qty: 3 }])
    } finally {
      await locker.end()
      await task.stop()
    }
  })

  async function sourceTask(props: Record<string, string>, stored: Record<string, unknown> | null = null): Promise<PostgresSourceTask> {
    const all = { 'connection.url': pgs.jdbcUrl, 'connection.user': 'skein', 'poll.interval.ms': '50', ...props }
    const connector = new PostgresSourceConnector()
    connector.initialize({ requestTaskReconfiguration: () => {}, raiseError: () => {} })
    await connector.start(all)
    try {
      const [config] = await connector.taskConfigs(1)
      const task = new PostgresSourceTask()
      task.initialize({ configs: () => config!, offsetStorageReader: { offset: async () => stored, offsets: async (ps) => new Map(ps.map((p) => [p, stored])) }, transactionContext: null })
      await task.start(config!)
      return task
    } finally {
      await connector.stop()
    }
  }

  async function pollUntil(task: PostgresSourceTask, count: number): Promise<SourceRecord[]> {
    const out: SourceRecord[] = []
    const deadline = Date.now() + 10000
    while (out.length < count && Date.now() < deadline) out.push(...((await task.poll()) ?? []))
    return out
  }

  test('copyFrom sends the COPY data behind its query: a failing statement before the COPY leaves the connection in step', async () => {
    await pgs.query('CREATE TABLE copy_pipelined (id integer PRIMARY KEY, name text)')
    const c = await pgs.client()
    try {
      // The server rejects the first statement, so the data arrives outside copy mode and is ignored.
      await expect(copyFrom(c, 'INSERT INTO copy_missing VALUES (1); COPY copy_pipelined FROM STDIN', Buffer.from('1\tignored\n'))).rejects.toThrow(/copy_missing/)
      // A bad row fails the COPY itself; the rest of its data is ignored too.
      await expect(copyFrom(c, 'COPY copy_pipelined FROM STDIN', Buffer.from('x\tbad\n2\ttoo\n'))).rejects.toThrow(/integer/)
      // The next COPY on the same connection gets exactly its own rows.
      expect(await copyFrom(c, 'BEGIN; COPY copy_pipelined FROM STDIN; COMMIT', Buffer.from('3\tthree\n4\tfour\n'))).toBe(2)
      expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
    } finally {
      await c.end()
    }
    expect(await pgs.query('SELECT id, name FROM copy_pipelined ORDER BY id')).toEqual([{ id: 3, name: 'three' }, { id: 4, name: 'four' }])
  })

  test('source: bulk copies the whole table on every poll; incrementing resumes after a stored offset', async () => {
    await pgs.query('CREATE TABLE events (id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, amount NUMERIC(8,2))')
    await pgs.query(`INSERT INTO events (kind, amount) SELECT 'k' || g, g * 1.25 FROM generate_series(1, 5) g`)
    const bulk = await sourceTask({ mode: 'bulk', 'table.include.list': 'events', 'topic.prefix': 'db-' })
    try {
      const twice = await pollUntil(bulk, 10)
      expect(twice.map((r) => (r.value as Struct).get('kind'))).toEqual(['k1', 'k2', 'k3', 'k4', 'k5', 'k1', 'k2', 'k3', 'k4', 'k5'])
      expect(twice[0]!.topic).toBe('db-events')
      expect(twice[0]!.sourceOffset).toBeNull()
      expect((twice[1]!.value as Struct).get('amount')).toBe('2.50')
    } finally {
      await bulk.stop()
    }
    const inc = await sourceTask({ mode: 'incrementing', 'incrementing.column.name': 'id', 'table.include.list': 'events', 'topic.prefix': 'db-' }, { incrementing: 3 })
    try {
      const rest = await pollUntil(inc, 2)
      expect(rest.map((r) => (r.value as Struct).get('id'))).toEqual([4, 5])
      expect(rest[1]!.sourceOffset).toEqual({ incrementing: 5 })
      expect(rest[1]!.sourcePartition).toEqual({ protocol: '1', table: 'postgres.public.events' })
      await pgs.query(`INSERT INTO events (kind) VALUES ('late')`)
      const late = await pollUntil(inc, 1)
      expect(late.map((r) => [(r.value as Struct).get('id'), (r.value as Struct).get('kind')])).toEqual([[6, 'late']])
    } finally {
      await inc.stop()
    }
  })

  test('source: query mode reads a custom query into topic.prefix; validation names what is missing', async () => {
    const q = await sourceTask({ mode: 'incrementing', 'incrementing.column.name': 'id', query: `SELECT id, upper(kind) AS kind FROM events`, 'topic.prefix': 'events-upper' })
    try {
      const rows = await pollUntil(q, 6)
      expect(rows.map((r) => (r.value as Struct).get('kind'))).toEqual(['K1', 'K2', 'K3', 'K4', 'K5', 'LATE'])
      expect(new Set(rows.map((r) => r.topic))).toEqual(new Set(['events-upper']))
    } finally {
      await q.stop()
    }
    const v = await new PostgresSourceConnector().validate!({ 'connection.url': pgs.jdbcUrl, mode: 'incrementing', 'topic.prefix': 'x' })
    expect(v.errors['incrementing.column.name']!.join()).toMatch(/incrementing\.column\.name is required/)
  })
})
