// Long handler loops in slices: a handler walking a large request calls `turn()` per item, and every
// SLICE_MS of main-thread time the loop yields to the event loop (setImmediate), so the other
// connections' requests are served before it goes on. Reading the clock is cheaper than the items but not
// free, so it is read every CHECK_EVERY items.

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
