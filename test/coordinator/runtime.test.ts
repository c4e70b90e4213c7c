import { describe, expect, it } from 'vitest'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { ManualClock } from '../../src/coordinator/runtime/clock.js'
import { InMemoryPartitionWriter, type StoredRecord } from '../../src/coordinator/runtime/partition-writer.js'
import { CoordinatorRuntime, type CoordinatorStateMachine, type StateMachineContext } from '../../src/coordinator/runtime/runtime.js'
import { quietLog } from './helpers.js'

/** A counter state machine: records are "+n" keys; replay sums them. */
class CounterStateMachine implements CoordinatorStateMachine {
  total = 0
  replayed: number[] = []
  loaded = false
  unloaded = false
  constructor(readonly ctx: StateMachineContext<CounterStateMachine>) {}
  replay(r: StoredRecord): void {
    this.total += Number(r.key.toString())
    this.replayed.push(r.offset)
  }
  onLoaded(): void {
    this.loaded = true
  }
  onUnloaded(): void {
    this.unloaded = true
  }
  add(n: number) {
    return { records: [{ key: Buffer.from(String(n)), value: Buffer.from('v') }], result: this.total }
  }
}

function runtime(writer = new InMemoryPartitionWriter(), clock = new ManualClock()) {
  const machines: CounterStateMachine[] = []
  const rt = new CoordinatorRuntime<CounterStateMachine>({
    writer,
    clock,
    log: quietLog,
    newStateMachine: (ctx) => {
      const s = new CounterStateMachine(ctx)
      machines.push(s)
      return s
    },
  })
  return { rt, writer, clock, machines }
}

describe('CoordinatorRuntime', () => {
  it('runs operations in order, each seeing the records of the previous one replayed', async () => {
    const { rt, writer } = runtime()
    await rt.load(0)
    const results = await Promise.all([1, 2, 3].map((n) => rt.write(0, 'add', (s) => s.add(n))))
    // Each operation ran after the previous one's records were written and replayed.
    expect(results).toEqual([0, 1, 3])
    expect(await rt.read(0, (s) => s.total)).toBe(6)
    expect(writer.records(0).map((r) => r.offset)).toEqual([0, 1, 2])
  })

  it('loading replays the partition in chunks, then calls onLoaded', async () => {
    const writer = new InMemoryPartitionWriter()
    writer.readChunkSize = 2
    for (let i = 1; i <= 5; i++) await writer.append(3, [{ key: Buffer.from(String(i)), value: null }])
    const { rt, machines } = runtime(writer)
    await rt.load(3)
    expect(machines[0]!.total).toBe(15)
    expect(machines[0]!.replayed).toEqual([0, 1, 2, 3, 4])
    expect(machines[0]!.loaded).toBe(true)
    // New writes continue at the partition's end offset.
    await rt.write(3, 'add', (s) => s.add(10))
    expect(machines[0]!.replayed.at(-1)).toBe(5)
  })

  it('a failed append rejects the operation with the coordinator error, replays nothing, and the queue goes on', async () => {
    const { rt, writer } = runtime()
    await rt.load(0)
    writer.failNextAppend = ErrorCode.NOT_LEADER_OR_FOLLOWER
    const seen: (KafkaError | null)[] = []
    await expect(rt.write(0, 'add', (s) => ({ ...s.add(5), onAppended: (e: KafkaError | null) => seen.push(e) }))).rejects.toMatchObject({ code: ErrorCode.NOT_COORDINATOR })
    expect(seen[0]?.code).toBe(ErrorCode.NOT_COORDINATOR)
    expect(await rt.write(0, 'add', (s) => s.add(1))).toBe(0)
    expect(await rt.read(0, (s) => s.total)).toBe(1)
    writer.failNextAppend = ErrorCode.MESSAGE_TOO_LARGE
    await expect(rt.write(0, 'add', (s) => s.add(1))).rejects.toMatchObject({ code: ErrorCode.UNKNOWN_SERVER_ERROR })
  })

  it('a pending result does not hold the queue', async () => {
    const { rt } = runtime()
    await rt.load(0)
    let release!: (v: string) => void
    const slow = rt.write(0, 'slow', () => ({ records: [], result: new Promise<string>((r) => (release = r)) }))
    expect(await rt.write(0, 'add', (s) => s.add(2))).toBe(0)
    release('done')
    expect(await slow).toBe('done')
  })

  it('timers fire as operations on the clock; rescheduling a key replaces it; unload cancels them', async () => {
    const { rt, clock, machines } = runtime()
    await rt.load(0)
    const timer = machines[0]!.ctx.timer
    timer.schedule('k', 1000, (s) => ({ ...s.add(1), result: undefined }))
    timer.schedule('k', 2000, (s) => ({ ...s.add(10), result: undefined }))
    clock.advance(1500)
    await rt.idle()
    expect(await rt.read(0, (s) => s.total)).toBe(0)
    clock.advance(500)
    await rt.idle()
    expect(await rt.read(0, (s) => s.total)).toBe(10)
    timer.schedule('k', 1000, (s) => ({ ...s.add(100), result: undefined }))
    rt.unload(0)
    expect(machines[0]!.unloaded).toBe(true)
    expect(clock.pending).toBe(0)
    await expect(rt.write(0, 'add', (s) => s.add(1))).rejects.toMatchObject({ code: ErrorCode.NOT_COORDINATOR })
    await expect(rt.read(0, (s) => s.total)).rejects.toBeInstanceOf(KafkaError)
  })
})
