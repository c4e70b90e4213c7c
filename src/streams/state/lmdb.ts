// The persistent BytesStore: one LMDB environment per store and task, in
// <state.dir>/<application.id>/<task>/lmdb/<store>/ (data.mdb and lock.mdb, LMDB's own files).
//
// Why LMDB (lmdb-js): its reads are synchronous and served from a memory map, so a processor's get()
// needs no promise per record, and its prebuilt binary comes inside the npm package. RocksDB's npm
// binding (rocksdb 5.2.1) answers reads only through callbacks; see bench/streams-stores.bench.ts and
// docs/streams.md (Choices) for the measurements behind the choice.
//
// Writes: the logging layer above (logged.ts) batches a commit interval's writes and puts them here in
// one write transaction (transactionSync). Crash recovery: LMDB's copy-on-write B-tree is consistent
// after a crash at any point (a torn transaction is simply absent); what the store lacks relative to
// the changelog is replayed from the task's .checkpoint offset (or, without a checkpoint, the store is
// wiped and rebuilt from the changelog's start, as under exactly_once_v2 after an unclean stop).
import { mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { StreamsException } from '../core/errors.js'
import type { BytesStore } from './stores.js'

const require = createRequire(import.meta.url)

/* The part of lmdb-js used here. */
interface LmdbDatabase {
  getBinary(key: Buffer): Buffer | undefined
  putSync(key: Buffer, value: Buffer): boolean
  removeSync(key: Buffer): boolean
  transactionSync<T>(fn: () => T): T
  getRange(opts: { start?: Buffer; end?: Buffer; reverse?: boolean; snapshot?: boolean }): Iterable<{ key: Buffer; value: Buffer }>
  getCount(opts?: object): number
  clearSync(): void
  close(): Promise<void>
  flushed: Promise<void>
}

let lmdbModule: { open(opts: object): LmdbDatabase } | null = null

function lmdb(): { open(opts: object): LmdbDatabase } {
  lmdbModule ??= require('lmdb') as { open(opts: object): LmdbDatabase }
  return lmdbModule
}

/** LMDB refuses keys longer than 1978 bytes (its default page size); one byte goes to the prefix below. */
export const LMDB_MAX_KEY_SIZE = 1977

/**
 * Every key is stored behind one 0x01 byte: LMDB refuses an empty key, which a store must take (the
 * empty string is a key), and a common prefix keeps the byte order of the keys. (Not 0x00: lmdb-js
 * never yields the one-byte key 0x00 when walking backwards.)
 */
const PREFIX = 1
function stored(key: Buffer): Buffer {
  const out = Buffer.allocUnsafe(key.length + 1)
  out[0] = PREFIX
  key.copy(out, 1)
  return out
}

export class LmdbBytesStore implements BytesStore {
  readonly persistent = true
  private db: LmdbDatabase | null = null

  constructor(readonly name: string) {}

  open(dir: string | null): void {
    if (dir === null) throw new StreamsException(`persistent store '${this.name}' needs a directory`)
    mkdirSync(dir, { recursive: true })
    this.db = lmdb().open({ path: dir, keyEncoding: 'binary', encoding: 'binary', compression: false, cache: false })
  }

  isOpen(): boolean {
    return this.db !== null
  }

  private live(): LmdbDatabase {
    if (this.db === null) throw new StreamsException(`store '${this.name}' is not open`)
    return this.db
  }

  get(key: Buffer): Buffer | undefined {
    if (key.length > LMDB_MAX_KEY_SIZE) return undefined
    return this.live().getBinary(stored(key))
  }

  put(key: Buffer, value: Buffer | null): void {
    this.putAll([[key, value]])
  }

  putAll(entries: Iterable<readonly [Buffer, Buffer | null]>): void {
    const db = this.live()
    db.transactionSync(() => {
      for (const [k, v] of entries) {
        checkKey(this.name, k)
        if (v === null) db.removeSync(stored(k))
        else db.putSync(stored(k), v)
      }
    })
  }

  *range(from: Buffer | null, to: Buffer | null, reverse = false): IterableIterator<[Buffer, Buffer]> {
    const opts: { start?: Buffer; end?: Buffer; reverse?: boolean } = { reverse }
    // lmdb-js takes start as the first key walked: the upper bound when walking backwards.
    const lo = from === null ? Buffer.from([PREFIX]) : stored(from)
    const hi = to === null ? Buffer.from([PREFIX + 1]) : stored(to)
    if (!reverse) {
      opts.start = lo
      opts.end = hi
    } else {
      // Backwards, lmdb-js's end bound is exclusive, but from is inclusive: the walk stops below.
      opts.start = hi
    }
    for (const { key, value } of this.live().getRange(opts)) {
      // Walking backwards from an exclusive bound, lmdb-js may start at the bound itself.
      if (reverse && Buffer.compare(key, hi) >= 0) continue
      if (reverse && Buffer.compare(key, lo) < 0) break
      yield [key.subarray(1), value]
    }
  }

  approximateNumEntries(): number {
    return this.live().getCount()
  }

  async flush(): Promise<void> {
    await this.live().flushed
  }

  clear(): void {
    this.live().clearSync()
  }

  close(): void {
    const db = this.db
    this.db = null
    if (db !== null) void db.close().catch(() => {})
  }
}

function checkKey(store: string, key: Buffer): void {
  if (key.length > LMDB_MAX_KEY_SIZE) throw new StreamsException(`store '${store}': a key of ${key.length} bytes is longer than LMDB's ${LMDB_MAX_KEY_SIZE}`)
}
