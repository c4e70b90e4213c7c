// The store workload of Skein Streams on the embedded stores that install from npm here (npm run
// bench:streams-stores -> node dist/bench/streams-stores.bench.js): lmdb (the project's), and rocksdb 5.2.1
// and classic-level 3.0.0 when STORE_BENCH_MODULES points at a node_modules folder that has them (they are
// not dependencies).
// The workload is a Streams task's: a commit interval's writes in one batch (new keys, then
// overwrites), point reads of random keys (a processor's get(), synchronous when the store allows),
// and short range scans (window fetches). Keys are 16 bytes, values 100. Env: N keys (default 300,000).
import { rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const N = Number(process.env.N ?? 300_000)
const BATCH = 2000
const require = createRequire(process.env.STORE_BENCH_MODULES !== undefined ? join(process.env.STORE_BENCH_MODULES, 'x.js') : import.meta.url)

const keys = Array.from({ length: N }, (_, i) => {
  const b = Buffer.alloc(16)
  b.write('key-', 0)
  b.writeUInt32BE(Math.imul(i, 2654435761) >>> 0, 4)
  b.writeUInt32BE(i, 8)
  return b
})
const value = Buffer.alloc(100, 7)
const random = Array.from({ length: 100_000 }, () => keys[(Math.random() * N) | 0]!)

async function time(label: string, fn: () => unknown): Promise<void> {
  const t0 = performance.now()
  await fn()
  const ms = performance.now() - t0
  console.log(`${label.padEnd(52)} ${ms.toFixed(0).padStart(7)} ms`)
}

/* eslint-disable @typescript-eslint/no-explicit-any */
async function lmdb(dir: string): Promise<void> {
  const db = (require('lmdb') as any).open({ path: dir, keyEncoding: 'binary', encoding: 'binary', compression: false, cache: false })
  const write = () => {
    for (let i = 0; i < N; i += BATCH) db.transactionSync(() => {
      for (let j = i; j < Math.min(N, i + BATCH); j++) db.putSync(keys[j], value)
    })
  }
  await time(`lmdb: write ${N} keys in batches of ${BATCH}`, write)
  await time(`lmdb: overwrite ${N} keys in batches of ${BATCH}`, write)
  await time(`lmdb: ${random.length} random gets (synchronous)`, () => {
    for (const k of random) db.getBinary(k)
  })
  await time('lmdb: 2000 range scans of 100 entries', () => {
    for (let i = 0; i < 2000; i++) for (const e of db.getRange({ start: random[i], limit: 100 })) void e
  })
  await db.close()
}

async function leveldown(kind: 'rocksdb' | 'classic-level', dir: string): Promise<void> {
  let db: any
  let batch: (ops: any[]) => Promise<void>
  let get: (k: Buffer) => Promise<unknown>
  if (kind === 'rocksdb') {
    db = (require('rocksdb') as any)(dir)
    await new Promise<void>((res, rej) => db.open({}, (e: Error | null) => (e ? rej(e) : res())))
    batch = (ops) => new Promise((res, rej) => db.batch(ops, {}, (e: Error | null) => (e ? rej(e) : res())))
    get = (k) => new Promise((res, rej) => db.get(k, { asBuffer: true }, (e: Error | null, v: unknown) => (e ? rej(e) : res(v))))
  } else {
    const { ClassicLevel } = require('classic-level') as any
    db = new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' })
    await db.open()
    batch = (ops) => db.batch(ops)
    get = (k) => db.get(k)
  }
  const write = async () => {
    for (let i = 0; i < N; i += BATCH) {
      const ops = []
      for (let j = i; j < Math.min(N, i + BATCH); j++) ops.push({ type: 'put', key: keys[j], value })
      await batch(ops)
    }
  }
  await time(`${kind}: write ${N} keys in batches of ${BATCH}`, write)
  await time(`${kind}: overwrite ${N} keys in batches of ${BATCH}`, write)
  if (kind === 'classic-level') {
    await time(`${kind}: ${random.length} random gets (getSync)`, () => {
      for (const k of random) db.getSync(k)
    })
  }
  await time(`${kind}: ${random.length} random gets (async, one at a time)`, async () => {
    for (const k of random) await get(k)
  })
  await time(`${kind}: ${random.length} random gets (async, 256 at once)`, async () => {
    for (let i = 0; i < random.length; i += 256) await Promise.all(random.slice(i, i + 256).map(get))
  })
  if (kind === 'rocksdb') await new Promise((r) => db.close(r))
  else await db.close()
}

async function main(): Promise<void> {
  console.log(`store workload: ${N} keys of 16 bytes, values of 100 bytes, node ${process.version}`)
  for (const kind of ['lmdb', 'rocksdb', 'classic-level'] as const) {
    const dir = join(tmpdir(), `skein-store-bench-${kind}`)
    rmSync(dir, { recursive: true, force: true })
    try {
      require.resolve(kind)
    } catch {
      console.log(`${kind}: not installed (set STORE_BENCH_MODULES to a node_modules folder that has it)`)
      continue
    }
    if (kind === 'lmdb') await lmdb(dir)
    else await leveldown(kind, dir)
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
