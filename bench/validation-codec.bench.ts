// What the record walk costs per codec, at the validator alone (validateProducerBatches on the same
// ~11 KB-decoded producer batches bench/validation.bench.ts appends): three variants side by side in
// one process, alternating A B C each round: fused (the addon decompresses and walks gzip, snappy and
// lz4 in one call, native/src/batch-walk.cc), typescript (compareOnlySkipFusedWalk: chunked
// decompression feeding the TypeScript walker, the path before the fused walk) and header-only
// (benchOnlySkipRecordWalk: CRC and header checks, no decompression). The table gives the median
// round's CPU ns per batch, and what the walk adds per record over header-only.
// BENCH_BASELINE=<an older build's dist directory, its addon built beside it> adds a fourth variant in
// the same process, that build's validateProducerBatches (e.g. the commit before the fused walk).
// Env: BENCH_ROUNDS (rounds per variant, default 7), BENCH_ROUND_MS (default 300).
import { join, resolve } from 'node:path'
import { native } from '../src/addon/index.js'
import { producerBatch, RECORDS_PER_BATCH, VALIDATION_CODECS } from './lib/validation-batches.js'
import { benchOnlySkipRecordWalk, compareOnlySkipFusedWalk, validateProducerBatches, type BatchValidationPolicy } from '../src/protocol/records/validate.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 300)
const RECORDS = RECORDS_PER_BATCH
const CODECS = VALIDATION_CODECS
type Variant = 'fused' | 'typescript' | 'header-only' | 'baseline'
type Validate = typeof validateProducerBatches
const baselineDir = process.env.BENCH_BASELINE
const baseline: Validate | undefined =
  baselineDir === undefined ? undefined : ((await import(join(resolve(baselineDir), 'src/protocol/records/validate.js'))) as { validateProducerBatches: Validate }).validateProducerBatches
const VARIANTS: Variant[] = baseline === undefined ? ['fused', 'typescript', 'header-only'] : ['fused', 'typescript', 'header-only', 'baseline']

/** CPU ns (user + system: the figure a loaded machine disturbs least) per validateProducerBatches call over one round of ROUND_MS. */
function round(batch: Buffer, policy: BatchValidationPolicy, variant: Variant): number {
  benchOnlySkipRecordWalk(variant === 'header-only')
  compareOnlySkipFusedWalk(variant === 'typescript')
  const validate = variant === 'baseline' ? baseline! : validateProducerBatches
  let n = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let t = t0
  try {
    while (t - t0 < ROUND_MS) {
      for (let i = 0; i < 64; i++) validate(batch, policy, native.crc32c)
      n += 64
      t = performance.now()
    }
  } finally {
    benchOnlySkipRecordWalk(false)
    compareOnlySkipFusedWalk(false)
  }
  const cpu = process.cpuUsage(cpu0)
  return ((cpu.user + cpu.system) * 1000) / n
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const now = Date.now()
const policy: BatchValidationPolicy = {
  maxMessageBytes: 1024 * 1024,
  timestampType: 'CreateTime',
  timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER,
  timestampAfterMaxMs: Number.MAX_SAFE_INTEGER,
  now,
}
const rows: Record<string, string | number>[] = []
for (const [name, codec] of CODECS) {
  const batch = producerBatch(codec, now)
  const times = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]))
  for (const v of VARIANTS) round(batch, policy, v) // warm-up, not measured
  for (let i = 0; i < ROUNDS; i++) for (const v of VARIANTS) times.get(v)!.push(round(batch, policy, v))
  const [fused, ts, header, base] = VARIANTS.map((v) => median(times.get(v)!))
  const baselineColumns: Record<string, number> = base === undefined ? {} : { 'baseline ns/batch': Math.round(base), 'baseline +ns/rec': Math.round((base - header!) / RECORDS) }
  rows.push({
    codec: name,
    'batch B': batch.length,
    'fused ns/batch': Math.round(fused!),
    'typescript ns/batch': Math.round(ts!),
    'header-only ns/batch': Math.round(header!),
    'fused +ns/rec': Math.round((fused! - header!) / RECORDS),
    'typescript +ns/rec': Math.round((ts! - header!) / RECORDS),
    ...baselineColumns,
  })
}
console.log(`validateProducerBatches, ${RECORDS} records per batch, ${ROUNDS} alternating rounds of ${ROUND_MS} ms per variant (medians of CPU ns)`)
console.table(rows)
