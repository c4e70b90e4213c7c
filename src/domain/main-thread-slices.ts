// Long loops in slices, so that one request never holds the event loop for the others (issue 30):
// - MainThreadSlices: a loop over a large request's items calls `turn()` per item, and every SLICE_MS of
//   main-thread time it yields to the event loop (setImmediate), so the other connections' requests are
//   served before it goes on. Reading the clock is cheaper than the items but not free, so it is read
//   every CHECK_EVERY items.
// - inTimedChunks: a long asynchronous operation over many items (creating or deleting partitions through
//   the shards) is sent as consecutive chunks, each sized to take about SLICE_MS of main-thread time; work queued by others
//   meanwhile (a Produce, a Fetch on the same shard) runs between two chunks instead of after them all.
//   Work on a shard's worker thread is timed by the wall clock instead (ChunkClock).

/** Main-thread time one slice of a handler's loop may take before others get a turn. */
export const SLICE_MS = 10
const CHECK_EVERY = 256

export class MainThreadSlices {
  private sliceStart = performance.now()
  private sinceCheck = 0

  /** Resolves at once while the slice lasts; after SLICE_MS, once the event loop has served the others. */
  turn(): Promise<void> | undefined {
    if (++this.sinceCheck < CHECK_EVERY) return undefined
    this.sinceCheck = 0
    if (performance.now() - this.sliceStart < SLICE_MS) return undefined
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        this.sliceStart = performance.now()
        resolve()
      }),
    )
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
export async function inTimedChunks<T, R>(items: readonly T[], run: (chunk: readonly T[]) => Promise<readonly R[]>, clock: ChunkClock = 'main-thread'): Promise<R[]> {
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
    size = Math.max(1, Math.min(MAX_CHUNK, size * 2, Math.floor((chunk.length * SLICE_MS) / busyMs)))
  }
  return results
}
