// Three replica logs of one partition driven by a seeded random schedule, the way the replication layer
// drives them: appends on the leader, follower fetches that truncate where the leader says the logs
// diverged (to the smaller of its epoch end and the follower's own, as the fetcher does), leader changes
// to a replica holding everything below the highest high watermark (an ISR member), clean and unclean
// restarts, and segments small enough to roll every few batches. What must hold throughout:
// - an idempotent producer that resends its in-flight batches (up to 5) to whichever replica leads is
//   never written twice, and its oldest in-flight batch is never refused OUT_OF_ORDER_SEQUENCE_NUMBER
//   (librdkafka's producer treats that as fatal): producer state follows the log through truncations,
//   reloads from snapshots and restarts;
// - a transactional producer whose markers count as written once replicated (acks=all, as the
//   coordinator's WriteTxnMarkers) never has an aborted transaction's record shown to read_committed,
//   which reads by the LSO and the aborted-transaction index. (Counted on the leader's append alone, a
//   marker can be lost with a leader change; the transaction then stays open on the new leader and the
//   producer's next one takes its records in: most seeds show that aborted read.)
// SKEIN_MODEL_SEEDS runs more seeds (default 3 of each).
import { afterEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { buildRecordBatch, decodeRecords } from '../../src/protocol/records/index.js'
import type { LogManager, PartitionLog } from '../../src/storage/index.js'
import { T0, openManager, regionBytes, tempDir } from './helpers.js'
import { xorshift } from './fixtures/crash-shared.js'

const SEEDS = Number(process.env.SKEIN_MODEL_SEEDS ?? 3)
const STEPS = 250
let clock = T0
const now = (): number => clock
const dirs: ReturnType<typeof tempDir>[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) d.cleanup()
})

/** Uniform in [0, 1) from xorshift32: the schedule of a seed is the same on every run. */
function random(seed: number): () => number {
  const next = xorshift(seed)
  return () => next() / 0x100000000
}

interface Replica {
  dir: string
  m: LogManager
  log: PartitionLog
}

interface Batch {
  header: { attributes: number; producerId: number; baseOffset: number }
  values: string[]
  controlType?: number
}

function batchesOf(buf: Buffer): Batch[] {
  const out: Batch[] = []
  for (let pos = 0; pos + 61 <= buf.length; pos += 12 + buf.readInt32BE(pos + 8)) {
    const attributes = buf.readInt16BE(pos + 21)
    const records = decodeRecords(buf, pos)
    const header = { attributes, producerId: Number(buf.readBigInt64BE(pos + 43)), baseOffset: Number(buf.readBigInt64BE(pos)) }
    if ((attributes & 0x20) !== 0) out.push({ header, values: [], controlType: records[0]!.key!.readInt16BE(2) })
    else out.push({ header, values: records.map((r) => r.value!.toString()) })
  }
  return out
}

class Model {
  readonly reps: Replica[] = []
  leader = 0
  epoch = 1
  /** The highest high watermark a leader had: a candidate leader holds everything below it. */
  committed = 0
  readonly history: string[] = []

  constructor(
    readonly rand: () => number,
    readonly cfg: { segmentBytes: number; indexIntervalBytes: number },
  ) {
    for (let i = 0; i < 3; i++) {
      const d = tempDir('skein-model-')
      dirs.push(d)
      const m = openManager(d.path, cfg, { now, cleanShutdown: true, highWatermarkFollowsLeo: false })
      this.reps.push({ dir: d.path, m, log: m.create('t', 0) })
    }
    this.lead.log.assignLeaderEpoch(this.epoch)
  }

  get lead(): Replica {
    return this.reps[this.leader]!
  }

  fail(what: string): never {
    throw new Error(`${what}\n${this.history.slice(-30).join('\n')}`)
  }

  /** The batches of a replica's log, to its end. */
  batches(r: Replica, opts: { readCommitted?: boolean } = {}): { batches: Batch[]; aborted: { producerId: number; firstOffset: number }[] } {
    const res = r.log.read(r.log.logStartOffset, 1 << 30, opts.readCommitted === true ? { isolation: 'read_committed' } : { logEnd: true })
    const out = batchesOf(regionBytes(res))
    r.m.releaseLease(res.leaseId)
    return { batches: out, aborted: res.abortedTransactions }
  }

  /** A follower fetches (one batch or all) from the leader, truncating first where their logs diverged. */
  fetch(f: Replica, oneBatch: boolean): void {
    const l = this.lead
    for (let k = 0; k < 20; k++) {
      const r = l.log.readForFollower(f.log.logEndOffset, oneBatch ? 1 : 1 << 20, f.log.latestEpoch)
      if (r.divergingEpoch !== undefined) {
        const local = f.log.endOffsetForEpoch(r.divergingEpoch.leaderEpoch)
        let target = Math.min(r.divergingEpoch.endOffset, f.log.logEndOffset)
        if (local.endOffset >= 0) target = Math.min(target, local.endOffset)
        f.log.truncateTo(target)
        this.history.push(`replica ${this.reps.indexOf(f)} truncated to ${target}`)
        if (k > 10) this.fail('the follower keeps diverging')
        continue
      }
      const bytes = regionBytes(r)
      l.m.releaseLease(r.leaseId)
      if (bytes.length === 0) break
      f.log.appendAsFollower(bytes)
      if (oneBatch) break
    }
    f.log.maybeIncrementHighWatermark(l.log.highWatermark)
  }

  /** The leader's HW moves to what every replica has. */
  advanceHighWatermark(): void {
    this.lead.log.maybeIncrementHighWatermark(Math.min(...this.reps.map((r) => r.log.logEndOffset)))
    this.committed = Math.max(this.committed, this.lead.log.highWatermark)
  }

  /** Another replica holding everything committed leads, at a new epoch; false when none can. */
  elect(): boolean {
    const hw = Math.max(this.committed, this.lead.log.highWatermark)
    const candidates = [0, 1, 2].filter((i) => i !== this.leader && this.reps[i]!.log.logEndOffset >= hw)
    if (candidates.length === 0) return false
    this.leader = candidates[Math.floor(this.rand() * candidates.length)]!
    this.lead.log.assignLeaderEpoch(++this.epoch)
    this.history.push(`replica ${this.leader} leads epoch ${this.epoch} from ${this.lead.log.logEndOffset}`)
    return true
  }

  /** A replica restarts, after a clean shutdown or a kill (whose writes reached the page cache). */
  async restart(i: number, clean: boolean): Promise<void> {
    const r = this.reps[i]!
    if (clean) await r.m.close()
    else await r.log.flush()
    r.m = openManager(r.dir, this.cfg, { now, cleanShutdown: clean, highWatermarkFollowsLeo: false })
    r.log = r.m.get('t', 0)!
    this.history.push(`replica ${i} restarted ${clean ? 'clean' : 'after a kill'} at ${r.log.logEndOffset}`)
    if (i === this.leader) r.log.assignLeaderEpoch(++this.epoch)
  }

  /** One random fault or fetch step; false when the step was the caller's own (produce). */
  async step(): Promise<boolean> {
    const x = this.rand()
    if (x < 0.45) return false
    if (x < 0.65) this.fetch(this.reps[(this.leader + 1 + Math.floor(this.rand() * 2)) % 3]!, this.rand() < 0.5)
    else if (x < 0.75) this.advanceHighWatermark()
    else if (x < 0.87) this.elect()
    else await this.restart(Math.floor(this.rand() * 3), this.rand() < 0.5)
    return true
  }

  async close(): Promise<void> {
    for (const r of this.reps) await r.m.close()
  }
}

function segmentConfig(rand: () => number): { segmentBytes: number; indexIntervalBytes: number } {
  return { segmentBytes: 300 + Math.floor(rand() * 600), indexIntervalBytes: 1 }
}

describe('three replica logs under leader changes, truncations and restarts', () => {
  it('write an idempotent producer once and recognise each retry of its in-flight batches', async () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const rand = random(seed)
      const model = new Model(rand, segmentConfig(rand))
      const pid = 42
      let nextSeq = 0
      let nextValue = 0
      const inflight: { seq: number; values: string[]; payload: Buffer }[] = []
      for (let step = 0; step < STEPS; step++) {
        clock += 10
        if (await model.step()) {
          if (model.rand() < 0.3) {
            // Acknowledged: the in-flight batches below the HW, oldest first.
            const hw = model.lead.log.highWatermark
            const at = new Map<string, number>()
            for (const b of model.batches(model.lead).batches) b.values.forEach((v, i) => at.set(v, b.header.baseOffset + i))
            while (inflight.length > 0 && inflight[0]!.values.every((v) => (at.get(v) ?? hw) < hw)) inflight.shift()
          }
        } else {
          if (inflight.length < 5 && rand() < 0.7) {
            const values = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => `v${nextValue++}`)
            const payload = buildRecordBatch(values.map((v) => ({ value: Buffer.from(v), timestamp: clock })), native.crc32c, { producerId: pid, producerEpoch: 0, baseSequence: nextSeq })
            inflight.push({ seq: nextSeq, values, payload })
            nextSeq += values.length
          }
          for (const b of inflight) {
            try {
              const res = model.lead.log.append(Buffer.from(b.payload), { leaderEpoch: model.epoch, now: clock })
              model.history.push(`seq ${b.seq} at ${res.baseOffset}${res.duplicate === true ? ' (retry)' : ''} on replica ${model.leader}`)
            } catch (err) {
              const code = err instanceof KafkaError ? err.code : -1
              if (b === inflight[0] || code !== ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER) model.fail(`seed ${seed}: seq ${b.seq} refused on replica ${model.leader}: ${(err as Error).message}`)
              break
            }
          }
        }
        for (const [i, r] of model.reps.entries()) {
          const seen = new Set<string>()
          for (const b of model.batches(r).batches) {
            for (const v of b.values) {
              if (seen.has(v)) model.fail(`seed ${seed} step ${step}: ${v} twice in replica ${i}`)
              seen.add(v)
            }
          }
        }
      }
      await model.close()
    }
  }, 60_000)

  it('never show an aborted transaction to read_committed when markers count once replicated', async () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const rand = random(seed * 7919)
      const model = new Model(rand, segmentConfig(rand))
      const pid = 77
      let nextSeq = 0
      let txn = 0
      const decided = new Map<number, boolean>()
      let batches: { seq: number; value: string; payload: Buffer; acked: boolean }[] = []
      // The decision being written, and where its marker was appended (until replicated).
      let commit: boolean | undefined
      let marker: { offset: number; epoch: number } | undefined
      for (let step = 0; step < STEPS; step++) {
        clock += 10
        const epochBefore = model.epoch
        if (await model.step()) {
          // A marker not replicated when the leadership or its epoch moved is written again (the
          // coordinator's retry after NOT_LEADER_OR_FOLLOWER).
          if (model.epoch !== epochBefore) marker = undefined
          if (model.rand() < 0.3) {
            const hw = model.lead.log.highWatermark
            const at = new Map<string, number>()
            for (const b of model.batches(model.lead).batches) b.values.forEach((v, i) => at.set(v, b.header.baseOffset + i))
            for (const b of batches) if ((at.get(b.value) ?? hw) < hw) b.acked = true
            if (marker !== undefined && marker.epoch === model.epoch && hw > marker.offset) {
              model.history.push(`transaction ${txn} complete`)
              ;[marker, commit, batches] = [undefined, undefined, []]
              txn++
            }
          }
          continue
        }
        if (commit === undefined) {
          if (batches.length < 3 && rand() < 0.6) {
            const value = `t${txn}-${batches.length}`
            const payload = buildRecordBatch([{ value: Buffer.from(value), timestamp: clock }], native.crc32c, { producerId: pid, producerEpoch: 0, baseSequence: nextSeq, transactional: true })
            batches.push({ seq: nextSeq++, value, payload, acked: false })
          }
          for (const b of batches.filter((x) => !x.acked)) {
            try {
              model.lead.log.append(Buffer.from(b.payload), { leaderEpoch: model.epoch, now: clock })
            } catch {
              break
            }
          }
          if (batches.length > 0 && batches.every((b) => b.acked) && rand() < 0.5) {
            commit = rand() < 0.5
            decided.set(txn, commit)
          }
        }
        if (commit !== undefined && marker === undefined) {
          const { offset } = model.lead.log.appendTxnMarker({ producerId: pid, producerEpoch: 0, coordinatorEpoch: 0, commit, leaderEpoch: model.epoch })
          marker = { offset, epoch: model.epoch }
          model.history.push(`transaction ${txn}: ${commit ? 'COMMIT' : 'ABORT'} at ${offset} on replica ${model.leader}`)
        }
        // A read_committed consumer of the leader: up to the LSO, skipping aborted transactions.
        const { batches: read, aborted } = model.batches(model.lead, { readCommitted: true })
        const pending = [...aborted].sort((a, b) => a.firstOffset - b.firstOffset)
        const abortedNow = new Set<number>()
        for (const b of read) {
          while (pending.length > 0 && pending[0]!.firstOffset <= b.header.baseOffset) abortedNow.add(pending.shift()!.producerId)
          if (b.controlType === 0) abortedNow.delete(b.header.producerId)
          if (b.controlType !== undefined || ((b.header.attributes & 0x10) !== 0 && abortedNow.has(b.header.producerId))) continue
          for (const v of b.values) {
            const n = Number(/^t(\d+)-/.exec(v)![1])
            if (decided.get(n) !== true) model.fail(`seed ${seed} step ${step}: read_committed returned ${v} of transaction ${n}, ${decided.has(n) ? 'aborted' : 'undecided'}`)
          }
        }
      }
      expect(txn).toBeGreaterThan(0)
      await model.close()
    }
  }, 60_000)
})
