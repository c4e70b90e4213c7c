// Long loops in slices, so that one request never holds the event loop for the others (issue 30):
// - MainThreadSlices: a loop over a large request's items calls `turn()` per item, and every SLICE_MS of
//   main-thread time it yields to the event loop (setImmediate), so the other connections' requests are
//   served before it goes on. Reading the clock is cheaper than the items but not free, so it is read
//   every CHECK_EVERY items.
// - inTimedChunks: a long asynchronous operation over many items (creating or deleting partitions through
//   the shards) is sent as consecutive chunks, each sized to take about SLICE_MS of main-thread time; work queued by others
//   meanwhile (a Produce, a Fetch on the same shard) runs between two chunks instead of after them all.
//   Work on a shard's worker thread is timed by the wall clock instead (ChunkClock).
// - Abandoned work stops: both take an optional `abandoned()` (a request's connection has closed), asked
//   after each turn of the event loop; once it is true they throw AbandonedWorkError instead of going on.
//   A client that sends a heavy request and hangs up (or gives up waiting) leaves nothing behind to
//   finish: without it, such requests pile up and every later client waits behind their remains.

/** Main-thread time one slice of a handler's loop may take before others get a turn. */
export const SLICE_MS = 10
const CHECK_EVERY = 256

/** Thrown by a slice or chunk boundary once its work is abandoned (the request's connection closed). */
export class AbandonedWorkError extends Error {
  override readonly name = 'AbandonedWorkError'
}

/** True once nobody waits for the work any more (e.g. `() => connection.isClosed`). */
export type Abandoned = () => boolean

export class MainThreadSlices {
  private sliceStart = performance.now()
  private sinceCheck = 0

  constructor(private readonly abandoned?: Abandoned) {}

  /**
   * Resolves at once while the slice lasts; after SLICE_MS, once the event loop has served the others
   * (rejecting with AbandonedWorkError if the work was abandoned meanwhile). `items`: how many items the
   * work since the last call covered (a chunk of them), so the clock is read as often as for single items.
   */
  turn(items = 1): Promise<void> | undefined {
    this.sinceCheck += items
    if (this.sinceCheck < CHECK_EVERY) return undefined
    this.sinceCheck = 0
    if (performance.now() - this.sliceStart < SLICE_MS) return undefined
    return new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        this.sliceStart = performance.now()
        if (this.abandoned?.() === true) reject(new AbandonedWorkError('abandoned: nobody waits for the answer'))
        else resolve()
      }),
    )
  }

  /** fn over every item in order, a turn of the event loop every SLICE_MS; the results in the items' order. */
  async map<T, R>(items: readonly T[], fn: (item: T, index: number) => R): Promise<R[]> {
    const out: R[] = new Array<R>(items.length)
    for (let i = 0; i < items.length; i++) {
      const turn = this.turn()
      if (turn !== undefined) await turn
      out[i] = fn(items[i]!, i)
    }
    return out
  }
}

/** Bounds of a chunk of inTimedChunks: the first is small, none grows past the last. */
const FIRST_CHUNK = 16
const MAX_CHUNK = 4096

/**
 * What a chunk of inTimedChunks is timed by: 'main-thread' when what it waits for costs others nothing (a
 * store); 'wall' when the chunk holds a resource others queue behind, such as a shard's worker thread
 * (io.threads >= 1: the main thread is idle meanwhile, but every Produce and Fetch of that shard waits).
 */
export type ChunkClock = 'main-thread' | 'wall'

/**
 * Runs `run` over `items` chunk after chunk (each awaited before the next is sent) and answers the
 * results in the items' order. Each chunk's size is the previous one's scaled so that it would have taken
 * SLICE_MS by `clock` (at most doubling); the time measured includes others' work served meanwhile, so a
 * busy broker gets smaller chunks, which is the fair direction.
 */
export async function inTimedChunks<T, R>(
  items: readonly T[],
  run: (chunk: readonly T[]) => Promise<readonly R[]>,
  abandoned?: Abandoned,
  clock: ChunkClock = 'main-thread',
): Promise<R[]> {
  const results: R[] = []
  let size = FIRST_CHUNK
  for (let start = 0; start < items.length; ) {
    const chunk = items.slice(start, start + size)
    const began = performance.eventLoopUtilization()
    const startedAt = performance.now()
    results.push(...(await run(chunk)))
    const busyMs = Math.max(clock === 'wall' ? performance.now() - startedAt : performance.eventLoopUtilization(began).active, 0.01)
    start += chunk.length
    // A chunk answered through microtasks alone (an in-memory store) gave the event loop no turn yet.
    if (start < items.length) await new Promise<void>((resolve) => setImmediate(resolve))
    if (start < items.length && abandoned?.() === true) throw new AbandonedWorkError('abandoned: nobody waits for the answer')
    size = Math.max(1, Math.min(MAX_CHUNK, size * 2, Math.floor((chunk.length * SLICE_MS) / busyMs)))
  }
  return results
}
