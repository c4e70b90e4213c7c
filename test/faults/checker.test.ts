// The fault suite's checker on hand-written histories: each promise it judges (lost, skipped,
// inconsistent offsets, duplicates, aborted reads, non-monotonic sends and polls), the ack-gap figure,
// and the byte comparison of replica logs up to the high watermark.
import { describe, expect, it } from 'vitest'
import { check, compareReplicaLogs, longestAckGap, type Op, type PollOp, type SendOp } from './checker.js'

let seq = 0
const send = (value: string, partition: number, offset: number, extra: Partial<SendOp> = {}): SendOp => ({
  type: 'send', client: 'p', seq: seq++, value, outcome: 'ok', partition, offset, acks: -1, time: 1000 + offset, ...extra,
})
const failed = (value: string, extra: Partial<SendOp> = {}): SendOp => ({ type: 'send', client: 'p', seq: seq++, value, outcome: 'fail', acks: -1, time: 0, error: 'NOT_ENOUGH_REPLICAS', ...extra })
const poll = (value: string, partition: number, offset: number, extra: Partial<PollOp> = {}): PollOp => ({
  type: 'poll', client: 'c', partition, offset, value, isolation: 'read_committed', time: 0, ...extra,
})

/** A clean history: 5 acknowledged sends on partition 0, all read back in order. */
function clean(): Op[] {
  const ops: Op[] = []
  for (let i = 0; i < 5; i++) ops.push(send(`v${i}`, 0, i))
  for (let i = 0; i < 5; i++) ops.push(poll(`v${i}`, 0, i))
  return ops
}

describe('the fault checker', () => {
  it('passes a clean history', () => {
    const r = check(clean(), { idempotent: true })
    expect(r).toMatchObject({ ok: true, acknowledged: 5, lost: 0, inconsistent: 0, duplicates: 0, abortedReads: 0, nonMonotonicSends: 0, nonMonotonicPolls: 0 })
  })

  it('reports an acknowledged write never read as lost (unseen)', () => {
    const ops = clean().filter((o) => !(o.type === 'poll' && o.value === 'v4'))
    const r = check(ops, { idempotent: true })
    expect(r).toMatchObject({ ok: false, lost: 1, unseen: 1, skipped: 0 })
    expect(r.examples[0]!.detail).toContain('v4')
  })

  it('reports an acknowledged write read before but not by the final read after healing as lost', () => {
    const ops = clean()
    for (let i = 0; i < 4; i++) ops.push(poll(`v${i}`, 0, i, { client: 'final' }))
    expect(check(ops, { idempotent: true, finalReaders: ['final'] })).toMatchObject({ ok: false, lost: 1, unseen: 1 })
    expect(check(ops, { idempotent: true })).toMatchObject({ ok: true, lost: 0 })
  })

  it('reports an acknowledged write a consumer read past as lost (skipped), even if another consumer saw it', () => {
    const ops = clean().filter((o) => !(o.type === 'poll' && o.value === 'v2'))
    ops.push(poll('v2', 0, 2, { client: 'other' }))
    const r = check(ops, { idempotent: true })
    expect(r).toMatchObject({ ok: false, lost: 1, unseen: 0, skipped: 1 })
  })

  it('does not call a gap over unacknowledged offsets (transaction markers) a skip', () => {
    const ops: Op[] = [send('a', 0, 0), send('b', 0, 2), poll('a', 0, 0), poll('b', 0, 2)]
    expect(check(ops, { idempotent: true }).ok).toBe(true)
  })

  it('reports one offset with two values (an ack and a replica disagreeing) as inconsistent', () => {
    const ops = clean()
    ops.push({ type: 'replica', broker: 2, partition: 0, offset: 3, value: 'other' })
    const r = check(ops, { idempotent: true })
    expect(r).toMatchObject({ ok: false, inconsistent: 1, duplicates: 0 })
  })

  it('reports one value at two offsets as a duplicate: an error with idempotence, counted only without', () => {
    const ops = clean()
    ops.push(poll('v1', 0, 5, { client: 'late' }))
    expect(check(ops, { idempotent: true })).toMatchObject({ ok: false, duplicates: 1 })
    expect(check(ops, { idempotent: false })).toMatchObject({ ok: true, duplicates: 1 })
  })

  it('takes an acknowledgement without an offset (librdkafka\'s retried idempotent batch) as one with no position', () => {
    const ops = clean()
    ops.push(send('v5', 0, 0, { offset: null as unknown as number }), send('v6', 0, 0, { offset: -1 }), poll('v5', 0, 5), poll('v6', 0, 6))
    expect(check(ops, { idempotent: true })).toMatchObject({ ok: true, acknowledged: 7, inconsistent: 0, duplicates: 0, nonMonotonicSends: 0 })
    // Still lost when never read back, and still a duplicate when read at two positions.
    expect(check(ops.filter((o) => !(o.type === 'poll' && o.value === 'v6')), { idempotent: true })).toMatchObject({ ok: false, lost: 1 })
    expect(check([...ops, poll('v5', 0, 7, { client: 'late' })], { idempotent: true })).toMatchObject({ ok: false, duplicates: 1 })
  })

  it('reports a read of an aborted transaction or a definitely failed send as an aborted read', () => {
    const ops = clean()
    ops.push(send('t1', 0, 7, { transaction: 'aborted' }), poll('t1', 0, 7))
    ops.push(failed('f1', { definite: true }), poll('f1', 1, 0, { isolation: 'read_uncommitted' }))
    const r = check(ops, { idempotent: true })
    expect(r).toMatchObject({ ok: false, abortedReads: 2 })
  })

  it('allows an aborted transaction to be read uncommitted, and an indefinite failure to be visible', () => {
    const ops = clean()
    ops.push(send('t1', 0, 7, { transaction: 'aborted' }), poll('t1', 0, 7, { client: 'raw', isolation: 'read_uncommitted' }))
    ops.push(failed('f1', { error: 'REQUEST_TIMED_OUT' }), poll('f1', 1, 0))
    const r = check(ops, { idempotent: true })
    expect(r).toMatchObject({ ok: true, abortedReads: 0, failedButVisible: 1 })
  })

  it('reports a consumer going backwards and a producer acknowledged out of order as non-monotonic', () => {
    const ops = clean()
    ops.push(poll('v2', 0, 2))
    ops.push(send('w1', 1, 5, { client: 'q' }), send('w0', 1, 4, { client: 'q' }), poll('w0', 1, 4, { client: 'd' }), poll('w1', 1, 5, { client: 'd' }))
    const r = check(ops, { idempotent: false })
    expect(r).toMatchObject({ ok: false, nonMonotonicPolls: 1, nonMonotonicSends: 1 })
  })

  it('does not count unacknowledged (acks=1) or uncommitted transactional sends as lost', () => {
    const ops: Op[] = [send('a', 0, 0, { acks: 1 }), send('b', 0, 1, { transaction: 'unknown' })]
    expect(check(ops, { idempotent: true })).toMatchObject({ ok: true, acknowledged: 0, lost: 0 })
  })

  it('measures the longest gap in acknowledged writes over a window, per partition', () => {
    const at = (t: number, partition = 0): SendOp => send(`g${t}-${partition}`, partition, t, { time: t })
    const ops: Op[] = [at(100), at(200), at(1700), at(1800), at(150, 1), at(1900, 1)]
    expect(longestAckGap(ops, [0], 100, 2000)).toBe(1500)
    expect(longestAckGap(ops, [0, 1], 100, 2000)).toBe(1750)
    expect(longestAckGap(ops, [2], 100, 2000)).toBe(1900)
  })
})

/** A batch header sized like a RecordBatch: baseOffset, batchLength, then filler bytes. */
function batch(baseOffset: number, fill: number, bodyLength = 20): Buffer {
  const b = Buffer.alloc(12 + bodyLength, fill)
  b.writeBigInt64BE(BigInt(baseOffset), 0)
  b.writeInt32BE(bodyLength, 8)
  return b
}

describe('replica log comparison', () => {
  it('compares the batches below the high watermark and ignores the tail above it', () => {
    const common = [batch(0, 1), batch(3, 2)]
    const leader = Buffer.concat([...common, batch(6, 3)])
    const follower = Buffer.concat([...common, batch(6, 9)])
    expect(compareReplicaLogs(new Map([[1, leader], [2, follower]]), 6)).toMatchObject({ identical: true, bytes: 64 })
    expect(compareReplicaLogs(new Map([[1, leader], [2, follower]]), 7)).toMatchObject({ identical: false })
  })

  it('finds a replica missing a batch below the high watermark', () => {
    const leader = Buffer.concat([batch(0, 1), batch(3, 2)])
    const follower = batch(0, 1)
    const r = compareReplicaLogs(new Map([[1, leader], [3, follower]]), 6)
    expect(r.identical).toBe(false)
    expect(r.detail).toContain('broker 3')
  })
})
