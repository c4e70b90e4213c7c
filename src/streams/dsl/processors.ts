// The processors behind the DSL's operators (Kafka's KStreamFilter, KStreamAggregate, KTableSource,
// KStreamKStreamJoin, ...). Each factory returns a ProcessorSupplier; the DSL classes (kstream.ts) wire
// them into the topology with their stores. KTable processors receive and forward Change values.
import { createHash } from 'node:crypto'
import { StreamsException } from '../core/errors.js'
import { KeyValue, Record } from '../core/record.js'
import type { Serde } from '../core/serdes.js'
import type { Processor, ProcessorContext, ProcessorSupplier } from '../processor/api.js'
import { CachingKeyValueStore } from '../state/caching.js'
import { Window, Windowed, readTime, writeTime, type KeyValueStore, type SessionStore, type TimestampedKeyValueStore, type WindowStore } from '../state/stores.js'
import type { Headers } from '../core/headers.js'
import { Change, type ValueGetter, type ValueGetterSupplier } from './internal.js'
import type { JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows } from './windows.js'

type Ctx = ProcessorContext<unknown, unknown>
type Sup = ProcessorSupplier<unknown, unknown, unknown, unknown>

/** A processor from a process function, with the context captured at init. */
function proc<KIn, VIn>(init: (ctx: Ctx) => (r: Record<KIn, VIn>) => void, close?: () => void): Sup {
  return () => {
    let fn: ((r: Record<KIn, VIn>) => void) | null = null
    const p: Processor<unknown, unknown, unknown, unknown> = {
      init(ctx) {
        fn = init(ctx as Ctx)
      },
      process(r) {
        fn!(r as Record<KIn, VIn>)
      },
    }
    if (close !== undefined) p.close = close
    return p
  }
}

// ---- stateless KStream operators ----

export const filterProcessor = <K, V>(predicate: (key: K, value: V) => boolean, not: boolean): Sup =>
  proc<K, V>((ctx) => (r) => {
    if (predicate(r.key, r.value) !== not) ctx.forward(r)
  })

export const mapProcessor = <K, V, K2, V2>(mapper: (key: K, value: V) => KeyValue<K2, V2>): Sup =>
  proc<K, V>((ctx) => (r) => {
    const kv = mapper(r.key, r.value)
    if (kv === null || kv === undefined) throw new StreamsException('map() returned null: it must return a KeyValue')
    ctx.forward(r.withKey(kv.key).withValue(kv.value))
  })

export const mapValuesProcessor = <K, V, V2>(mapper: (value: V, key: K) => V2): Sup => proc<K, V>((ctx) => (r) => ctx.forward(r.withValue(mapper(r.value, r.key))))

export const flatMapProcessor = <K, V, K2, V2>(mapper: (key: K, value: V) => Iterable<KeyValue<K2, V2>>): Sup =>
  proc<K, V>((ctx) => (r) => {
    for (const kv of mapper(r.key, r.value)) ctx.forward(r.withKey(kv.key).withValue(kv.value))
  })

export const flatMapValuesProcessor = <K, V, V2>(mapper: (value: V, key: K) => Iterable<V2>): Sup =>
  proc<K, V>((ctx) => (r) => {
    for (const v of mapper(r.value, r.key)) ctx.forward(r.withValue(v))
  })

export const selectKeyProcessor = <K, V, K2>(mapper: (key: K, value: V) => K2): Sup => proc<K, V>((ctx) => (r) => ctx.forward(r.withKey(mapper(r.key, r.value))))

export const peekProcessor = <K, V>(action: (key: K, value: V) => void, forward: boolean): Sup =>
  proc<K, V>((ctx) => (r) => {
    action(r.key, r.value)
    if (forward) ctx.forward(r)
  })

export const passThroughProcessor = (): Sup => proc((ctx) => (r) => ctx.forward(r))

/** split(): each record goes to the first branch whose predicate holds, or to the default branch. */
export const branchProcessor = <K, V>(branches: { predicate: (key: K, value: V) => boolean; child: string }[], defaultChild: string | null): Sup =>
  proc<K, V>((ctx) => (r) => {
    for (const b of branches) {
      if (b.predicate(r.key, r.value)) {
        ctx.forward(r, b.child)
        return
      }
    }
    if (defaultChild !== null) ctx.forward(r, defaultChild)
  })

/** Drops null keys before a repartition topic (as Kafka's repartition filter does). */
export const dropNullKeys = (): Sup =>
  proc((ctx) => (r) => {
    if (r.key !== null && r.key !== undefined) ctx.forward(r)
  })

// ---- KTable operators (values are Changes) ----

/** A table's source: each record replaces the key's value in the store (null deletes). */
export const tableSourceProcessor = <K, V>(storeName: string | null, forward = true): Sup =>
  proc<K, V>((ctx) => {
    const store = storeName === null ? null : ctx.getStateStore<TimestampedKeyValueStore<K, V>>(storeName)
    return (r) => {
      if (r.key === null || r.key === undefined) return
      let old: V | null = null
      if (store !== null) {
        const prev = store.getWithTimestamp(r.key)
        old = prev?.value ?? null
        store.putWithTimestamp(r.key, r.value, r.timestamp)
      }
      if (forward) ctx.forward(r.withValue(new Change(r.value ?? null, old)))
    }
  })

/** Materializes the changes passing through into storeName (a table made from a derived table). */
function materialize<K, V>(ctx: Ctx, storeName: string | null): ((r: Record<K, Change<V>>) => void) | null {
  if (storeName === null) return null
  const store = ctx.getStateStore<TimestampedKeyValueStore<K, V>>(storeName)
  return (r) => store.putWithTimestamp(r.key, r.value.newValue, r.timestamp)
}

export const tableFilterProcessor = <K, V>(predicate: (key: K, value: V) => boolean, not: boolean, storeName: string | null): Sup =>
  proc<K, Change<V>>((ctx) => {
    const put = materialize<K, V>(ctx, storeName)
    const keep = (k: K, v: V | null): V | null => (v !== null && predicate(k, v) !== not ? v : null)
    return (r) => {
      const n = keep(r.key, r.value.newValue)
      const o = keep(r.key, r.value.oldValue)
      if (n === null && o === null) return
      const out = r.withValue(new Change(n, o))
      put?.(out)
      ctx.forward(out)
    }
  })

export const tableMapValuesProcessor = <K, V, V2>(mapper: (value: V, key: K) => V2, storeName: string | null): Sup =>
  proc<K, Change<V>>((ctx) => {
    const put = materialize<K, V2>(ctx, storeName)
    return (r) => {
      const c = r.value
      const out = r.withValue(new Change(c.newValue === null ? null : mapper(c.newValue, r.key), c.oldValue === null ? null : mapper(c.oldValue, r.key)))
      put?.(out)
      ctx.forward(out)
    }
  })

/** Materializes a table's changes (toTable, Materialized results) and forwards them. */
export const tableMaterializeProcessor = <K, V>(storeName: string): Sup =>
  proc<K, Change<V>>((ctx) => {
    const put = materialize<K, V>(ctx, storeName)!
    return (r) => {
      put(r)
      ctx.forward(r)
    }
  })

export const tableToStreamProcessor = <K, V, V2>(mapper: ((key: K, value: V | null) => V2) | null): Sup =>
  proc<K, Change<V>>((ctx) => (r) => {
    const v = r.value.newValue
    ctx.forward(r.withValue(mapper === null ? v : mapper(r.key, v)))
  })

/** KStream.toTable: a stream record becomes the key's new value. */
export const streamToTableProcessor = <K, V>(storeName: string): Sup => tableSourceProcessor<K, V>(storeName)

// ---- aggregations ----

type ChangeForwarder<K, V> = (key: K, newValue: V | null, oldValue: V | null, timestamp: number, headers: Headers | undefined) => void

/**
 * How an aggregation sends its updates (Kafka's TimestampedTupleForwarder): a store with a record cache
 * forwards them itself when it flushes (one per key per commit, with the value downstream saw last as
 * the old value), so the processor forwards nothing; without a cache, every update goes at once.
 */
function changeForwarder<K, V>(ctx: Ctx, store: TimestampedKeyValueStore<K, V>): ChangeForwarder<K, V> {
  const forward: ChangeForwarder<K, V> = (key, newValue, oldValue, timestamp, headers) => ctx.forward(new Record(key, new Change(newValue, oldValue), timestamp, headers))
  if (!(store instanceof CachingKeyValueStore)) return forward
  ;(store as CachingKeyValueStore<K, V>).setFlushListener(forward)
  return () => {}
}

export const streamAggregateProcessor = <K, V, VA>(storeName: string, initializer: () => VA, aggregator: (key: K, value: V, agg: VA) => VA): Sup =>
  proc<K, V>((ctx) => {
    const store = ctx.getStateStore<TimestampedKeyValueStore<K, VA>>(storeName)
    const forward = changeForwarder<K, VA>(ctx, store)
    return (r) => {
      if (r.key === null || r.key === undefined || r.value === null || r.value === undefined) return
      const prev = store.getWithTimestamp(r.key)
      const old = prev?.value ?? null
      const agg = aggregator(r.key, r.value, old ?? initializer())
      const ts = Math.max(r.timestamp, prev?.timestamp ?? 0)
      store.putWithTimestamp(r.key, agg, ts)
      forward(r.key, agg, old, ts, r.headers)
    }
  })

export const streamReduceProcessor = <K, V>(storeName: string, reducer: (agg: V, value: V) => V): Sup =>
  proc<K, V>((ctx) => {
    const store = ctx.getStateStore<TimestampedKeyValueStore<K, V>>(storeName)
    const forward = changeForwarder<K, V>(ctx, store)
    return (r) => {
      if (r.key === null || r.key === undefined || r.value === null || r.value === undefined) return
      const prev = store.getWithTimestamp(r.key)
      const old = prev?.value ?? null
      const agg = old === null ? r.value : reducer(old, r.value)
      const ts = Math.max(r.timestamp, prev?.timestamp ?? 0)
      store.putWithTimestamp(r.key, agg, ts)
      forward(r.key, agg, old, ts, r.headers)
    }
  })

/** KTable.groupBy: each change becomes a subtraction under the old key and an addition under the new one. */
export const tableRepartitionMapProcessor = <K, V, K2, V2>(selector: (key: K, value: V) => KeyValue<K2, V2>): Sup =>
  proc<K, Change<V>>((ctx) => (r) => {
    const c = r.value
    if (c.oldValue !== null) {
      const kv = selector(r.key, c.oldValue)
      if (kv.key !== null && kv.key !== undefined) ctx.forward(r.withKey(kv.key).withValue(new Change<V2>(null, kv.value)))
    }
    if (c.newValue !== null) {
      const kv = selector(r.key, c.newValue)
      if (kv.key !== null && kv.key !== undefined) ctx.forward(r.withKey(kv.key).withValue(new Change<V2>(kv.value, null)))
    }
  })

export const tableAggregateProcessor = <K, V, VA>(storeName: string, initializer: () => VA, adder: (key: K, value: V, agg: VA) => VA, subtractor: (key: K, value: V, agg: VA) => VA): Sup =>
  proc<K, Change<V>>((ctx) => {
    const store = ctx.getStateStore<TimestampedKeyValueStore<K, VA>>(storeName)
    const forward = changeForwarder<K, VA>(ctx, store)
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const prev = store.getWithTimestamp(r.key)
      const old = prev?.value ?? null
      let agg = old ?? initializer()
      if (r.value.oldValue !== null) agg = subtractor(r.key, r.value.oldValue, agg)
      if (r.value.newValue !== null) agg = adder(r.key, r.value.newValue, agg)
      const ts = Math.max(r.timestamp, prev?.timestamp ?? 0)
      store.putWithTimestamp(r.key, agg, ts)
      forward(r.key, agg, old, ts, r.headers)
    }
  })

export const tableReduceProcessor = <K, V>(storeName: string, adder: (agg: V, value: V) => V, subtractor: (agg: V, value: V) => V): Sup =>
  proc<K, Change<V>>((ctx) => {
    const store = ctx.getStateStore<TimestampedKeyValueStore<K, V>>(storeName)
    const forward = changeForwarder<K, V>(ctx, store)
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const prev = store.getWithTimestamp(r.key)
      const old = prev?.value ?? null
      let agg: V | null = old
      if (r.value.oldValue !== null && agg !== null) agg = subtractor(agg, r.value.oldValue)
      if (r.value.newValue !== null) agg = agg === null ? r.value.newValue : adder(agg, r.value.newValue)
      const ts = Math.max(r.timestamp, prev?.timestamp ?? 0)
      store.putWithTimestamp(r.key, agg, ts)
      forward(r.key, agg, old, ts, r.headers)
    }
  })

/** The windowed processors keep their own stream time (Kafka's observedStreamTime) to judge lateness. */
class ObservedTime {
  t = -1
  observe(ts: number): number {
    if (ts > this.t) this.t = ts
    return this.t
  }
}

export const windowAggregateProcessor = <K, V, VA>(storeName: string, windows: TimeWindows, initializer: () => VA, aggregator: (key: K, value: V, agg: VA) => VA): Sup => {
  return proc<K, V>((ctx) => {
    const store = ctx.getStateStore<WindowStore<K, VA>>(storeName)
    const time = new ObservedTime()
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const streamTime = time.observe(r.timestamp)
      const closeTime = streamTime - windows.graceMs
      for (const w of windows.windowsFor(r.timestamp)) {
        // Late: the window closed (its end plus grace has passed in stream time): the record is dropped.
        if (w.end <= closeTime) continue
        const old = store.fetch(r.key, w.start)
        const agg = aggregator(r.key, r.value, old ?? initializer())
        store.put(r.key, agg, w.start)
        ctx.forward(new Record(new Windowed(r.key, w), new Change(agg, old), r.timestamp, r.headers))
      }
    }
  })
}

/**
 * Sliding windows: the windows a record changes are recomputed from the raw records of the key, kept in
 * a window store of their own (retaining duplicates) for the time difference plus grace. The windows
 * are those of Kafka's definition: a left window [t - d, t] ending at each record, and a right window
 * [t + 1, t + 1 + d] after each record that has later records within d.
 */
export const slidingWindowAggregateProcessor = <K, V, VA>(storeName: string, rawStoreName: string, windows: SlidingWindows, initializer: () => VA, aggregator: (key: K, value: V, agg: VA) => VA): Sup =>
  proc<K, V>((ctx) => {
    const store = ctx.getStateStore<WindowStore<K, VA>>(storeName)
    const raw = ctx.getStateStore<WindowStore<K, V>>(rawStoreName)
    const d = windows.timeDifferenceMs
    const time = new ObservedTime()
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const ts = r.timestamp
      const streamTime = time.observe(ts)
      const closeTime = streamTime - windows.graceMs
      if (ts + 1 + d <= closeTime) return
      raw.put(r.key, r.value, ts)
      const near = raw.fetchRange(r.key, Math.max(0, ts - 2 * d - 1), ts + d + 1)
      const times = [...new Set(near.map((e) => e.key))].sort((a, b) => a - b)
      // Candidate window starts: left windows of records within [ts, ts + d], right windows of records within [ts - d - 1, ts].
      const starts = new Set<number>()
      for (const t of times) {
        if (t >= ts && t <= ts + d) starts.add(Math.max(0, t - d))
        if (t >= ts - d - 1 && t <= ts && times.some((u) => u > t && u <= t + 1 + d)) starts.add(t + 1)
      }
      for (const start of [...starts].sort((a, b) => a - b)) {
        const end = start + d
        // A sliding window's end is inclusive: it closes once stream time minus grace has passed it.
        if (end < closeTime || ts < start || ts > end) continue
        let agg = initializer()
        let any = false
        for (const e of near) {
          if (e.key < start || e.key > end) continue
          agg = aggregator(r.key, e.value, agg)
          any = true
        }
        if (!any) continue
        const old = store.fetch(r.key, start)
        store.put(r.key, agg, start)
        ctx.forward(new Record(new Windowed(r.key, new Window(start, end)), new Change(agg, old), r.timestamp, r.headers))
      }
    }
  })

export const sessionWindowAggregateProcessor = <K, V, VA>(
  storeName: string,
  windows: SessionWindows,
  initializer: () => VA,
  aggregator: (key: K, value: V, agg: VA) => VA,
  merger: (key: K, agg1: VA, agg2: VA) => VA,
): Sup =>
  proc<K, V>((ctx) => {
    const store = ctx.getStateStore<SessionStore<K, VA>>(storeName)
    const time = new ObservedTime()
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const ts = r.timestamp
      const streamTime = time.observe(ts)
      const closeTime = streamTime - windows.graceMs
      const overlapping = store.findSessions(r.key, ts - windows.inactivityGapMs, ts + windows.inactivityGapMs)
      let start = ts
      let end = ts
      let agg = initializer()
      for (const s of overlapping) {
        start = Math.min(start, s.key.window.start)
        end = Math.max(end, s.key.window.end)
        agg = merger(r.key, agg, s.value)
      }
      if (end < closeTime) return
      agg = aggregator(r.key, r.value, agg)
      for (const s of overlapping) {
        if (s.key.window.start === start && s.key.window.end === end) continue
        store.remove(s.key)
        ctx.forward(new Record(s.key, new Change<VA>(null, s.value), r.timestamp, r.headers))
      }
      const merged = new Windowed(r.key, new Window(start, end))
      const old = overlapping.find((s) => s.key.window.start === start && s.key.window.end === end)?.value ?? null
      store.put(merged, agg)
      ctx.forward(new Record(merged, new Change(agg, old), r.timestamp, r.headers))
    }
  })

// ---- suppression ----

/**
 * KTable.suppress: updates wait in a changelogged buffer store keyed [emit time int64][key bytes] (so
 * that a key's later update replaces its earlier one for windows, whose emit time is fixed) and leave it
 * in time order once stream time reaches their emit time. The value is [record time int64][flag int8]
 * [value bytes], flag 1 when the new value is present. untilTimeLimit keeps an index from key to its
 * emit time, rebuilt from the buffer at init.
 */
export const suppressProcessor = <K, V>(bufferStoreName: string, suppressed: Suppressed, graceMs: number, keySerde: (ctx: Ctx) => Serde<K>, valueSerde: (ctx: Ctx) => Serde<V>): Sup =>
  proc<K, Change<V>>((ctx) => {
    const buffer = ctx.getStateStore<KeyValueStore<Buffer, Buffer>>(bufferStoreName)
    const ks = keySerde(ctx)
    const vs = valueSerde(ctx)
    const topic = bufferStoreName
    const untilWindowCloses = suppressed.mode === 'untilWindowCloses'
    const index = new Map<string, number>()
    let size = 0
    for (const e of buffer.all()) {
      size++
      if (!untilWindowCloses) index.set(e.key.subarray(8).toString('latin1'), readTime(e.key, 0))
    }
    const time = new ObservedTime()
    const composite = (at: number, kb: Buffer): Buffer => {
      const out = Buffer.allocUnsafe(8 + kb.length)
      writeTime(out, 0, at)
      kb.copy(out, 8)
      return out
    }
    const emit = (k: Buffer, v: Buffer): void => {
      const key = ks.deserializer.deserialize(topic, k.subarray(8)) as K
      const ts = readTime(v, 0)
      const value = v[8] === 1 ? (vs.deserializer.deserialize(topic, v.subarray(9)) as V) : null
      ctx.forward(new Record(key, new Change<V>(value, null), ts))
    }
    const evict = (upTo: number): void => {
      for (const e of buffer.range(null, null)) {
        if (readTime(e.key, 0) > upTo) break
        buffer.delete(e.key)
        size--
        if (!untilWindowCloses) index.delete(e.key.subarray(8).toString('latin1'))
        emit(e.key, e.value)
      }
    }
    return (r) => {
      const streamTime = time.observe(r.timestamp)
      const kb = ks.serializer.serialize(topic, r.key)
      if (kb === null) return
      let at: number
      if (untilWindowCloses) {
        if (!(r.key instanceof Windowed)) throw new StreamsException('suppress(untilWindowCloses) needs a windowed KTable')
        at = r.key.window.end + graceMs
      } else {
        const k = kb.toString('latin1')
        at = index.get(k) ?? r.timestamp + suppressed.timeLimitMs
        index.set(k, at)
      }
      const nv = r.value.newValue
      const vb = nv === null ? null : vs.serializer.serialize(topic, nv)
      const value = Buffer.allocUnsafe(9 + (vb?.length ?? 0))
      writeTime(value, 0, r.timestamp)
      value[8] = vb !== null ? 1 : 0
      vb?.copy(value, 9)
      const ck = composite(at, kb)
      if (buffer.get(ck) === null) size++
      buffer.put(ck, value)
      if (size > suppressed.buffer.maxRecords) {
        if (suppressed.buffer.whenFull === 'shutDown') throw new StreamsException(`suppression buffer '${bufferStoreName}' is full (${suppressed.buffer.maxRecords} records) and set to shut down when full`)
        const first = buffer.range(null, null)[0]!
        buffer.delete(first.key)
        size--
        if (!untilWindowCloses) index.delete(first.key.subarray(8).toString('latin1'))
        emit(first.key, first.value)
      }
      // untilWindowCloses: a window's final result once stream time reaches its end plus grace.
      evict(streamTime)
    }
  })

// ---- joins ----

export type ValueJoiner<V1, V2, VR> = (value1: V1, value2: V2, key?: unknown) => VR

/** Stream-table join: each stream record looks up the table's current value for its key. */
export const streamTableJoinProcessor = <K, V, VT, VR>(getter: ValueGetterSupplier<K, VT>, joiner: (v: V, vt: VT | null, key: K) => VR, left: boolean): Sup =>
  proc<K, V>((ctx) => {
    const get = getter.init(ctx)
    return (r) => {
      if (r.key === null || r.key === undefined) {
        if (left && r.value !== null) ctx.forward(r.withValue(joiner(r.value, null, r.key)))
        return
      }
      if (r.value === null || r.value === undefined) return
      const vt = get(r.key)?.value ?? null
      if (vt === null && !left) return
      ctx.forward(r.withValue(joiner(r.value, vt, r.key)))
    }
  })

/** Stream-globaltable join: the key of the global table comes from keySelector. */
export const streamGlobalTableJoinProcessor = <K, V, GK, GV, VR>(globalStore: string, keySelector: (key: K, value: V) => GK, joiner: (v: V, gv: GV | null, key: K) => VR, left: boolean): Sup =>
  proc<K, V>((ctx) => {
    const store = ctx.getStateStore<TimestampedKeyValueStore<GK, GV>>(globalStore)
    return (r) => {
      if (r.value === null || r.value === undefined) return
      const gk = keySelector(r.key, r.value)
      const gv = gk === null || gk === undefined ? null : store.get(gk)
      if (gv === null && !left) return
      ctx.forward(r.withValue(joiner(r.value, gv, r.key)))
    }
  })

/** KTable-KTable join, for changes of one side: the other side's current value comes from its getter. */
export const tableTableJoinProcessor = <K, V1, V2, VR>(otherGetter: ValueGetterSupplier<K, V2>, joiner: (thisValue: V1 | null, otherValue: V2 | null) => VR, mode: { thisRequired: boolean; otherRequired: boolean }, storeName: string | null): Sup =>
  proc<K, Change<V1>>((ctx) => {
    const get = otherGetter.init(ctx)
    const put = materialize<K, VR>(ctx, storeName)
    const join = (v: V1 | null, o: V2 | null): VR | null => {
      if (v === null && o === null) return null
      if (mode.thisRequired && v === null) return null
      if (mode.otherRequired && o === null) return null
      return joiner(v, o)
    }
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const other = get(r.key)
      const o = other?.value ?? null
      const n = join(r.value.newValue, o)
      const old = join(r.value.oldValue, o)
      if (n === null && old === null) return
      const out = new Record(r.key, new Change(n, old), Math.max(r.timestamp, other?.timestamp ?? 0), r.headers)
      put?.(out)
      ctx.forward(out)
    }
  })

/** The value getter of a table-table join's result: both sides' getters joined. */
export function joinedGetter<K, V1, V2, VR>(a: ValueGetterSupplier<K, V1>, b: ValueGetterSupplier<K, V2>, joiner: (v1: V1 | null, v2: V2 | null) => VR, mode: { leftRequired: boolean; rightRequired: boolean }): ValueGetterSupplier<K, VR> {
  return {
    storeNames: [...a.storeNames, ...b.storeNames],
    init(ctx) {
      const ga = a.init(ctx)
      const gb = b.init(ctx)
      return (key) => {
        const va = ga(key)
        const vb = gb(key)
        const x = va?.value ?? null
        const y = vb?.value ?? null
        if (x === null && y === null) return null
        if ((mode.leftRequired && x === null) || (mode.rightRequired && y === null)) return null
        return { value: joiner(x, y), timestamp: Math.max(va?.timestamp ?? 0, vb?.timestamp ?? 0) }
      }
    },
  }
}

/** Puts each record of one side of a stream-stream join into its window store (Kafka's KStreamJoinWindow). */
export const joinWindowProcessor = <K, V>(storeName: string): Sup =>
  proc<K, V>((ctx) => {
    const store = ctx.getStateStore<WindowStore<K, V>>(storeName)
    return (r) => {
      if (r.key !== null && r.key !== undefined && r.value !== null && r.value !== undefined) store.put(r.key, r.value, r.timestamp)
      ctx.forward(r)
    }
  })

/**
 * One side of a stream-stream join (Kafka's KStreamKStreamJoin): a record joins the other side's records
 * of its key within [ts - before, ts + after] (the windows mirrored for the other side). For left and
 * outer joins a record without a partner is not emitted at once: it waits in the shared outer store
 * (keyed [time int64][sequence int32][side int8] -> [key length int32][key][value]) and is emitted with a
 * null partner when the join window has closed in stream time (Kafka 3.1's spurious-result fix); a later
 * partner removes it.
 */
export const streamStreamJoinProcessor = <K, V1, V2, VR>(opts: {
  otherStore: string
  outerStore: string | null
  isThis: boolean
  windows: JoinWindows
  joiner: (thisValue: V1 | null, otherValue: V2 | null, key: K) => VR
  /** Left/outer: this side's records without partner are emitted (after the window closes). */
  emitUnmatchedThis: boolean
  /** Outer (on the other side's processor too): matches here clear the other side's waiting records. */
  otherMayWait: boolean
  keySerde: Serde<K> | undefined
  thisValueSerde: Serde<V1> | undefined
  otherValueSerde: Serde<V2> | undefined
}): Sup =>
  proc<K, V1>((ctx) => {
    const other = ctx.getStateStore<WindowStore<K, V2>>(opts.otherStore)
    const outer = opts.outerStore === null ? null : ctx.getStateStore<KeyValueStore<Buffer, Buffer>>(opts.outerStore)
    const ks = (opts.keySerde ?? ctx.keySerde()) as Serde<K>
    const thisVs = (opts.thisValueSerde ?? ctx.valueSerde()) as Serde<V1>
    const otherVs = (opts.otherValueSerde ?? ctx.valueSerde()) as Serde<V2>
    const w = opts.windows
    // Window of partners for a record at ts, from this side's point of view.
    const before = opts.isThis ? w.beforeMs : w.afterMs
    const after = opts.isThis ? w.afterMs : w.beforeMs
    const side = opts.isThis ? 0 : 1
    let seq = 0
    const topic = opts.outerStore ?? ''
    // The user's joiner always takes (left value, right value).
    const userJoiner = opts.joiner as unknown as (left: unknown, right: unknown, key: K) => VR
    const emitJoined = (r: Record<K, V1>, thisV: V1, otherV: V2, ts: number): void => {
      const vr = opts.isThis ? userJoiner(thisV, otherV, r.key) : userJoiner(otherV, thisV, r.key)
      ctx.forward(new Record(r.key, vr, ts, r.headers))
    }
    // Side 0 is the join's left stream, side 1 the right: each decodes with its own value serde.
    const sideSerde = (s: number): Serde<unknown> => (s === side ? thisVs : otherVs) as Serde<unknown>
    const shortestWait = Math.min(w.beforeMs, w.afterMs) + w.graceMs
    /** Emits the waiting unmatched records whose windows have closed. */
    const emitClosed = (streamTime: number): void => {
      if (outer === null) return
      for (const e of outer.range(null, null)) {
        const ts = readTime(e.key, 0)
        // Sorted by time: nothing later can have closed.
        if (ts + shortestWait >= streamTime) break
        const s = e.key[12]!
        // A record waits until no partner can arrive: stream time past its window plus grace.
        if (ts + (s === 0 ? w.afterMs : w.beforeMs) + w.graceMs >= streamTime) continue
        outer.delete(e.key)
        const klen = e.value.readUInt32BE(0)
        const key = ks.deserializer.deserialize(topic, e.value.subarray(4, 4 + klen)) as K
        const v = sideSerde(s).deserializer.deserialize(topic, e.value.subarray(4 + klen))
        ctx.forward(new Record(key, s === 0 ? userJoiner(v, null, key) : userJoiner(null, v, key), ts))
      }
    }
    return (r) => {
      if (r.key === null || r.key === undefined || r.value === null || r.value === undefined) return
      const ts = r.timestamp
      const streamTime = Math.max(ctx.currentStreamTimeMs(), ts)
      const partners = other.fetchRange(r.key, Math.max(0, ts - before), ts + after)
      for (const p of partners) emitJoined(r, r.value, p.value, Math.max(ts, p.key))
      if (outer !== null) {
        if (partners.length > 0 && opts.otherMayWait) {
          // The partners were waiting unmatched: they are matched now.
          const kb = ks.serializer.serialize(topic, r.key)!
          const lo = Buffer.alloc(8)
          writeTime(lo, 0, Math.max(0, ts - before))
          const hi = Buffer.alloc(8)
          writeTime(hi, 0, ts + after + 1)
          for (const e of outer.range(lo, hi)) {
            if (e.key[12] === side) continue
            const klen = e.value.readUInt32BE(0)
            if (Buffer.compare(e.value.subarray(4, 4 + klen), kb) === 0) outer.delete(e.key)
          }
        }
        if (partners.length === 0 && opts.emitUnmatchedThis) {
          const kb = ks.serializer.serialize(topic, r.key)!
          const vb = thisVs.serializer.serialize(topic, r.value) ?? Buffer.alloc(0)
          const key = Buffer.allocUnsafe(13)
          writeTime(key, 0, ts)
          key.writeUInt32BE((seq = (seq + 1) >>> 0), 8)
          key[12] = side
          const value = Buffer.allocUnsafe(4 + kb.length + vb.length)
          value.writeUInt32BE(kb.length, 0)
          kb.copy(value, 4)
          vb.copy(value, 4 + kb.length)
          outer.put(key, value)
        }
        emitClosed(streamTime)
      }
    }
  })

// ---- foreign-key join ----

/** Subscription instructions (Kafka's SubscriptionWrapper.Instruction). */
export const enum Instruction {
  DELETE_KEY_NO_PROPAGATE = 0,
  DELETE_KEY_AND_PROPAGATE = 1,
  PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2,
  PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3,
}

/** A subscription from a left row to a foreign key: [instruction int8][hash 16 bytes or none][primary key bytes]. */
export interface Subscription<K> {
  instruction: Instruction
  hash: Buffer | null
  primaryKey: K
}

/** A response to a left row: [flags int8: 1 hash, 2 value][hash 16][right value bytes]. */
export interface SubscriptionResponse<VO> {
  hash: Buffer | null
  value: VO | null
}

export function valueHash(bytes: Buffer | null): Buffer | null {
  return bytes === null ? null : createHash('md5').update(bytes).digest()
}

export function subscriptionSerde<K>(primaryKeySerde: Serde<K> | undefined): Serde<Subscription<K>> {
  let ks = primaryKeySerde
  const configure = (d: { key: Serde<unknown> }): void => {
    ks ??= d.key as Serde<K>
  }
  return {
    name: 'Subscription',
    serializer: {
      configure,
      serialize(topic, s) {
        if (s === null) return null
        const pk = ks!.serializer.serialize(topic, s.primaryKey) ?? Buffer.alloc(0)
        const out = Buffer.allocUnsafe(2 + (s.hash?.length ?? 0) + pk.length)
        out[0] = s.instruction
        out[1] = s.hash === null ? 0 : 1
        let at = 2
        if (s.hash !== null) at += s.hash.copy(out, 2)
        pk.copy(out, at)
        return out
      },
    },
    deserializer: {
      configure,
      deserialize(topic, data) {
        if (data === null) return null
        const hasHash = data[1] === 1
        const hash = hasHash ? Buffer.from(data.subarray(2, 18)) : null
        return { instruction: data[0] as Instruction, hash, primaryKey: ks!.deserializer.deserialize(topic, data.subarray(hasHash ? 18 : 2)) as K }
      },
    },
  }
}

export function responseSerde<VO>(otherValueSerde: Serde<VO> | undefined): Serde<SubscriptionResponse<VO>> {
  let vs = otherValueSerde
  const configure = (d: { value: Serde<unknown> }): void => {
    vs ??= d.value as Serde<VO>
  }
  return {
    name: 'SubscriptionResponse',
    serializer: {
      configure,
      serialize(topic, r) {
        if (r === null) return null
        const v = r.value === null ? null : vs!.serializer.serialize(topic, r.value)
        const out = Buffer.allocUnsafe(1 + (r.hash?.length ?? 0) + (v?.length ?? 0))
        out[0] = (r.hash !== null ? 1 : 0) | (v !== null ? 2 : 0)
        let at = 1
        if (r.hash !== null) at += r.hash.copy(out, 1)
        v?.copy(out, at)
        return out
      },
    },
    deserializer: {
      configure,
      deserialize(topic, data) {
        if (data === null) return null
        const flags = data[0]!
        const hash = flags & 1 ? Buffer.from(data.subarray(1, 17)) : null
        const at = flags & 1 ? 17 : 1
        return { hash, value: flags & 2 ? (vs!.deserializer.deserialize(topic, data.subarray(at)) as VO) : null }
      },
    },
  }
}

/**
 * Left side of a foreign-key join: each change of a left row (re)subscribes it to its foreign key
 * (records keyed by the foreign key, to the subscription registration topic) and unsubscribes it from a
 * foreign key it left. A row without foreign key is answered at once (left join: joined with null).
 */
export const fkSubscriptionSendProcessor = <K, V, KO, VR>(opts: {
  fkExtractor: (value: V) => KO | null
  leftJoin: boolean
  valueSerde: Serde<V> | undefined
  foreignKeySerde: Serde<KO> | undefined
  registrationSink: string
  resultChild: string
  joiner: (v: V, vo: null) => VR
}): Sup =>
  proc<K, Change<V>>((ctx) => {
    const vs = (opts.valueSerde ?? ctx.valueSerde()) as Serde<V>
    const fks = (opts.foreignKeySerde ?? ctx.keySerde()) as Serde<KO>
    const send = (r: Record<K, Change<V>>, fk: KO, s: Subscription<K>): void => ctx.forward(new Record(fk, s, r.timestamp, r.headers) as unknown as Record<K, Change<V>>, opts.registrationSink)
    const result = (r: Record<K, Change<V>>, v: VR | null): void => ctx.forward(new Record(r.key, new Change(v, null), r.timestamp, r.headers) as unknown as Record<K, Change<V>>, opts.resultChild)
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const { newValue, oldValue } = r.value
      const newFk = newValue === null ? null : opts.fkExtractor(newValue)
      const oldFk = oldValue === null ? null : opts.fkExtractor(oldValue)
      const fkBytes = (fk: KO | null): Buffer | null => (fk === null || fk === undefined ? null : fks.serializer.serialize('', fk))
      const nb = fkBytes(newFk)
      const ob = fkBytes(oldFk)
      const fkChanged = ob !== null && (nb === null || Buffer.compare(nb, ob) !== 0)
      if (newValue === null) {
        if (oldFk !== null && ob !== null) send(r, oldFk, { instruction: Instruction.DELETE_KEY_AND_PROPAGATE, hash: null, primaryKey: r.key })
        else result(r, null)
        return
      }
      if (fkChanged) send(r, oldFk!, { instruction: Instruction.DELETE_KEY_NO_PROPAGATE, hash: null, primaryKey: r.key })
      const hash = valueHash(vs.serializer.serialize('', newValue))
      if (nb === null) {
        // No foreign key: nothing to join with. A left join still has a result; an inner join has none.
        result(r, opts.leftJoin ? opts.joiner(newValue, null) : null)
        return
      }
      const instruction = opts.leftJoin || fkChanged ? Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE : Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE
      send(r, newFk!, { instruction, hash, primaryKey: r.key })
    }
  })

function subscriptionKey(fk: Buffer, pk: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + fk.length + pk.length)
  out.writeUInt32BE(fk.length, 0)
  fk.copy(out, 4)
  pk.copy(out, 4 + fk.length)
  return out
}

/**
 * Right side, subscriptions arriving (keyed by foreign key): kept in the subscription store
 * ([fk length int32][fk][primary key] -> [instruction int8][hash]) and answered with the right row's
 * current value, keyed by primary key, to the response topic.
 */
export const fkSubscriptionReceiveProcessor = <KO, VO, K>(opts: { storeName: string; rightGetter: ValueGetterSupplier<KO, VO>; primaryKeySerde: Serde<K> | undefined; foreignKeySerde: Serde<KO> | undefined }): Sup =>
  proc<KO, Subscription<K>>((ctx) => {
    const store = ctx.getStateStore<KeyValueStore<Buffer, Buffer>>(opts.storeName)
    const get = opts.rightGetter.init(ctx)
    const pks = (opts.primaryKeySerde ?? ctx.keySerde()) as Serde<K>
    const fks = (opts.foreignKeySerde ?? ctx.keySerde()) as Serde<KO>
    return (r) => {
      const s = r.value
      if (r.key === null || r.key === undefined || s === null) return
      const fk = fks.serializer.serialize(opts.storeName, r.key)!
      const pk = pks.serializer.serialize(opts.storeName, s.primaryKey) ?? Buffer.alloc(0)
      const key = subscriptionKey(fk, pk)
      if (s.instruction === Instruction.DELETE_KEY_NO_PROPAGATE || s.instruction === Instruction.DELETE_KEY_AND_PROPAGATE) {
        store.delete(key)
        if (s.instruction === Instruction.DELETE_KEY_AND_PROPAGATE) ctx.forward(new Record(s.primaryKey, { hash: null, value: null } as SubscriptionResponse<VO>, r.timestamp, r.headers))
        return
      }
      store.put(key, Buffer.concat([Buffer.from([s.instruction]), s.hash ?? Buffer.alloc(0)]))
      const right = get(r.key)?.value ?? null
      if (right === null && s.instruction === Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE) return
      ctx.forward(new Record(s.primaryKey, { hash: s.hash, value: right } as SubscriptionResponse<VO>, r.timestamp, r.headers))
    }
  })

/** Right side, right rows changing: every left row subscribed to the key gets the new value. */
export const fkRightChangeProcessor = <KO, VO, K>(opts: { storeName: string; primaryKeySerde: Serde<K> | undefined; foreignKeySerde: Serde<KO> | undefined }): Sup =>
  proc<KO, Change<VO>>((ctx) => {
    const store = ctx.getStateStore<KeyValueStore<Buffer, Buffer>>(opts.storeName)
    const pks = (opts.primaryKeySerde ?? ctx.keySerde()) as Serde<K>
    const fks = (opts.foreignKeySerde ?? ctx.keySerde()) as Serde<KO>
    const bytes = { serialize: (_t: string, b: Buffer) => b }
    return (r) => {
      if (r.key === null || r.key === undefined) return
      const fk = fks.serializer.serialize(opts.storeName, r.key)!
      const prefix = Buffer.allocUnsafe(4 + fk.length)
      prefix.writeUInt32BE(fk.length, 0)
      fk.copy(prefix, 4)
      for (const e of store.prefixScan(prefix, bytes)) {
        const pk = pks.deserializer.deserialize(opts.storeName, e.key.subarray(prefix.length)) as K
        const instruction = e.value[0] as Instruction
        const hash = e.value.length > 1 ? Buffer.from(e.value.subarray(1)) : null
        if (r.value.newValue === null && instruction === Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE) {
          // An inner join whose right row went away: the left row's result is now nothing (a tombstone).
          ctx.forward(new Record(pk, { hash, value: null } as SubscriptionResponse<VO>, r.timestamp, r.headers))
          continue
        }
        ctx.forward(new Record(pk, { hash, value: r.value.newValue } as SubscriptionResponse<VO>, r.timestamp, r.headers))
      }
    }
  })

/**
 * Left side, responses arriving (keyed by primary key): joined with the left row's current value, but
 * only when the row is still the one that subscribed (same hash): an answer to an older version of the
 * row is stale and dropped.
 */
export const fkResponseJoinProcessor = <K, V, VO, VR>(opts: { leftGetter: ValueGetterSupplier<K, V>; valueSerde: Serde<V> | undefined; joiner: (v: V, vo: VO | null) => VR; leftJoin: boolean }): Sup =>
  proc<K, SubscriptionResponse<VO>>((ctx) => {
    const get: ValueGetter<K, V> = opts.leftGetter.init(ctx)
    const vs = (opts.valueSerde ?? ctx.valueSerde()) as Serde<V>
    return (r) => {
      if (r.key === null || r.key === undefined || r.value === null) return
      const current = get(r.key)?.value ?? null
      const currentHash = current === null ? null : valueHash(vs.serializer.serialize('', current))
      const h = r.value.hash
      if (h === null ? currentHash !== null : currentHash === null || Buffer.compare(h, currentHash) !== 0) return
      let result: VR | null = null
      if (current !== null && (r.value.value !== null || opts.leftJoin)) result = opts.joiner(current, r.value.value)
      ctx.forward(new Record(r.key, new Change(result, null), r.timestamp, r.headers))
    }
  })

export { KeyValue }
