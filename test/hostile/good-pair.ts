// The well-behaved neighbours of the hostile-neighbour suite: a producer sending one checksummed record every
// few milliseconds on Skein's own client and a consumer reading them back, each timing its requests. The
// consumer checks every record: offsets without gaps, sequence numbers in order, payload matching its CRC.
import { crc32 } from 'node:zlib'
import { Consumer, Producer } from '../../src/client/index.js'

export interface LatencyWindow {
  /** Produce round trips (send() with lingerMs 0, acks -1), in ms. */
  produceMs: number[]
  /** Produced-to-consumed times of the records, in ms (the consumer's fetch latency plus its wait). */
  endToEndMs: number[]
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** A payload of `seq` whose first 4 bytes are the CRC-32 of the rest. */
function payloadOf(seq: number): Buffer {
  const body = Buffer.from(`good-record-${seq}-${'x'.repeat(seq % 200)}`)
  const out = Buffer.alloc(4 + body.length)
  out.writeUInt32BE(crc32(body), 0)
  body.copy(out, 4)
  return out
}

export class GoodPair {
  private readonly producer: Producer
  private readonly consumer: Consumer
  private window: LatencyWindow = { produceMs: [], endToEndMs: [] }
  private running = true
  /** Set once the produce loop has ended: only then is `produced` final for the consumer to drain to. */
  private producing = true
  private closing = false
  private produced = 0
  private consumed = 0
  private readonly sentAt = new Map<number, number>()
  /** Every fault the consumer saw (gap, reorder, bad checksum, send failure); the suite expects none. */
  readonly faults: string[] = []
  private loops: Promise<void>[] = []

  constructor(
    bootstrap: string,
    private readonly topic: string,
    private readonly intervalMs = 10,
  ) {
    this.producer = new Producer({ bootstrapServers: bootstrap, lingerMs: 0, acks: -1 })
    this.consumer = new Consumer({ bootstrapServers: bootstrap, fetchMaxWaitMs: 100, autoOffsetReset: 'earliest' })
  }

  start(): void {
    this.consumer.assign([{ topic: this.topic, partition: 0 }])
    this.loops = [this.produceLoop(), this.consumeLoop()]
  }

  /** Starts a new latency window and returns the one just ended. */
  takeWindow(): LatencyWindow {
    const w = this.window
    this.window = { produceMs: [], endToEndMs: [] }
    return w
  }

  private async produceLoop(): Promise<void> {
    try {
      await this.produceUntilStopped()
    } finally {
      this.producing = false
    }
  }

  private async produceUntilStopped(): Promise<void> {
    while (this.running) {
      const seq = this.produced
      const t0 = performance.now()
      this.sentAt.set(seq, t0)
      try {
        await this.producer.send({ topic: this.topic, partition: 0, key: String(seq), value: payloadOf(seq) })
        this.window.produceMs.push(performance.now() - t0)
        this.produced++
      } catch (err) {
        this.faults.push(`send of record ${seq} failed: ${(err as Error).message}`)
        return
      }
      const spent = performance.now() - t0
      if (spent < this.intervalMs) await new Promise((r) => setTimeout(r, this.intervalMs - spent))
    }
  }

  private async consumeLoop(): Promise<void> {
    // A send still in flight when stop() is called counts once it is acknowledged: drain to the final count.
    while (this.producing || this.consumed < this.produced) {
      let records
      try {
        records = await this.consumer.poll(200)
      } catch (err) {
        if (!this.closing) this.faults.push(`poll failed: ${(err as Error).message}`)
        return
      }
      const now = performance.now()
      for (const r of records) {
        const seq = this.consumed
        if (r.offset !== seq) this.faults.push(`expected offset ${seq}, read ${r.offset}`)
        if (r.key?.toString() !== String(seq)) this.faults.push(`offset ${r.offset}: expected key ${seq}, read ${r.key?.toString()}`)
        const v = r.value
        if (v === null || v.length < 4 || v.readUInt32BE(0) !== crc32(v.subarray(4)) || !v.subarray(4).equals(payloadOf(seq).subarray(4))) {
          this.faults.push(`offset ${r.offset}: payload corrupt`)
        }
        const sent = this.sentAt.get(seq)
        if (sent !== undefined) this.window.endToEndMs.push(now - sent)
        this.sentAt.delete(seq)
        this.consumed++
      }
      if (this.faults.length > 20) return
    }
  }

  /** Stops producing, waits (bounded) until the consumer has read everything produced, closes both. */
  async stop(drainMs = 30_000): Promise<{ produced: number; consumed: number }> {
    this.running = false
    const drained = Promise.all(this.loops)
    await Promise.race([drained, new Promise((r) => setTimeout(r, drainMs))])
    const counts = { produced: this.produced, consumed: this.consumed }
    this.closing = true
    await this.producer.close().catch(() => undefined)
    await this.consumer.close().catch(() => undefined)
    return counts
  }
}
