// The purgatory of acks=all produces (Kafka's DelayedProduce): an append waits here until the partition's
// high watermark reaches the offset after its last record, bounded by the request's timeout. Answers, by
// Kafka's rules (Partition.checkEnoughReplicasReachOffset):
// - NONE once the HW passes the append and the ISR still has min.insync.replicas members;
// - NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR fell below min.insync.replicas before that (the HW then
//   stops: the append is on the leader but not acknowledged as replicated);
// - NOT_LEADER_OR_FOLLOWER when the leadership moved away meanwhile;
// - REQUEST_TIMED_OUT at the timeout.
// Waiters of a partition are kept in append order, so completing them is a walk from the front.
import { ErrorCode } from '../domain/errors.js'

interface Waiter {
  requiredOffset: number
  resolve(code: ErrorCode): void
  timer: NodeJS.Timeout
}

export class DelayedProducePurgatory {
  readonly #waiting = new Map<string, Waiter[]>()

  /** Waiting appends, over every partition. */
  get size(): number {
    let n = 0
    for (const list of this.#waiting.values()) n += list.length
    return n
  }

  /** Resolves with the append's answer once the HW reaches requiredOffset (see the file header). */
  wait(key: string, requiredOffset: number, timeoutMs: number): Promise<ErrorCode> {
    return new Promise((resolve) => {
      let list = this.#waiting.get(key)
      if (list === undefined) this.#waiting.set(key, (list = []))
      const waiter: Waiter = {
        requiredOffset,
        resolve,
        timer: setTimeout(() => {
          const l = this.#waiting.get(key)
          const i = l?.indexOf(waiter) ?? -1
          if (i >= 0) {
            l!.splice(i, 1)
            if (l!.length === 0) this.#waiting.delete(key)
          }
          resolve(ErrorCode.REQUEST_TIMED_OUT)
        }, Math.max(0, timeoutMs)),
      }
      // Keep the list sorted by offset (appends of one partition finish in order; markers may interleave).
      let at = list.length
      while (at > 0 && list[at - 1]!.requiredOffset > requiredOffset) at--
      list.splice(at, 0, waiter)
    })
  }

  /** The HW of a partition moved to highWatermark: the appends it passed are answered. */
  complete(key: string, highWatermark: number, enoughReplicas: boolean): void {
    const list = this.#waiting.get(key)
    if (list === undefined) return
    let n = 0
    while (n < list.length && list[n]!.requiredOffset <= highWatermark) n++
    if (n === 0) return
    const done = list.splice(0, n)
    if (list.length === 0) this.#waiting.delete(key)
    for (const w of done) {
      clearTimeout(w.timer)
      w.resolve(enoughReplicas ? ErrorCode.NONE : ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    }
  }

  /** Every append waiting on a partition is answered with `code` (ISR below min, leadership lost). */
  failAll(key: string, code: ErrorCode): void {
    const list = this.#waiting.get(key)
    if (list === undefined) return
    this.#waiting.delete(key)
    for (const w of list) {
      clearTimeout(w.timer)
      w.resolve(code)
    }
  }

  /** Answers every waiter (shutdown). */
  failEverything(code: ErrorCode): void {
    for (const key of [...this.#waiting.keys()]) this.failAll(key, code)
  }
}
