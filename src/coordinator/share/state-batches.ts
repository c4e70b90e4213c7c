// State batches of a share-partition (Kafka's PersisterStateBatch and PersisterStateBatchCombiner): ranges
// of offsets with one delivery state (0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED) and one delivery count.
// A write lays its batches over the ones kept (the newer wins where they overlap), everything before the
// share-partition start offset is dropped, and neighbours with the same state and count are joined.
// Linear in the batches involved: a write of n batches over m kept ones costs O((n + m) log n).

export interface StateBatch {
  firstOffset: number
  lastOffset: number
  deliveryState: number
  deliveryCount: number
}

/** The delivery states a persisted batch may have (an ACQUIRED record is persisted AVAILABLE). */
const PERSISTED_STATES = new Set([0, 1, 2, 4])

/** Why a batch cannot be kept, or undefined when it can (the coordinator answers INVALID_REQUEST). */
export function invalidBatch(b: StateBatch): string | undefined {
  if (!Number.isSafeInteger(b.firstOffset) || !Number.isSafeInteger(b.lastOffset) || b.firstOffset < 0 || b.lastOffset < b.firstOffset) {
    return `invalid state batch offsets ${b.firstOffset}-${b.lastOffset}`
  }
  if (!PERSISTED_STATES.has(b.deliveryState)) return `invalid delivery state ${b.deliveryState}`
  if (b.deliveryCount < 0) return `invalid delivery count ${b.deliveryCount}`
  return undefined
}

/**
 * The batches kept after `incoming` is laid over `kept` from `startOffset` on (-1: no start offset, keep
 * all). `kept` is sorted and non-overlapping (what this function returns); `incoming` may be in any
 * order and overlap itself, in which case the later of two overlapping batches (by first offset) wins.
 */
export function combineStateBatches(kept: readonly StateBatch[], incoming: readonly StateBatch[], startOffset: number): StateBatch[] {
  const fresh = normalize(incoming)
  const out: StateBatch[] = []
  let j = 0
  const push = (b: StateBatch): void => {
    if (startOffset >= 0 && b.lastOffset < startOffset) return
    const first = startOffset >= 0 ? Math.max(b.firstOffset, startOffset) : b.firstOffset
    const prev = out[out.length - 1]
    if (prev !== undefined && prev.lastOffset + 1 === first && prev.deliveryState === b.deliveryState && prev.deliveryCount === b.deliveryCount) {
      prev.lastOffset = b.lastOffset
    } else {
      out.push({ firstOffset: first, lastOffset: b.lastOffset, deliveryState: b.deliveryState, deliveryCount: b.deliveryCount })
    }
  }
  /** The last offset the fresh batches pushed so far cover. */
  let covered = -1
  for (const old of kept) {
    let from = Math.max(old.firstOffset, covered + 1)
    // The fresh batches that start before the end of this old one come first (they win the overlap).
    while (j < fresh.length && fresh[j]!.firstOffset <= old.lastOffset) {
      const f = fresh[j]!
      if (f.firstOffset > from) push({ ...old, firstOffset: from, lastOffset: f.firstOffset - 1 })
      push(f)
      covered = f.lastOffset
      from = Math.max(from, f.lastOffset + 1)
      j++
    }
    if (from <= old.lastOffset) push({ ...old, firstOffset: from })
  }
  while (j < fresh.length) push(fresh[j++]!)
  return out
}

/** Sorted by first offset, without overlaps (a later batch cuts the end of an earlier one it overlaps). */
function normalize(batches: readonly StateBatch[]): StateBatch[] {
  const sorted = batches.map((b, i) => ({ b, i })).sort((x, y) => x.b.firstOffset - y.b.firstOffset || x.i - y.i)
  const out: StateBatch[] = []
  for (const { b } of sorted) {
    let tail: StateBatch | undefined
    for (let prev = out[out.length - 1]; prev !== undefined && prev.lastOffset >= b.firstOffset; prev = out[out.length - 1]) {
      out.pop()
      if (prev.lastOffset > b.lastOffset) tail = { ...prev, firstOffset: b.lastOffset + 1 }
      if (prev.firstOffset < b.firstOffset) {
        out.push({ ...prev, lastOffset: b.firstOffset - 1 })
        break
      }
    }
    out.push({ ...b })
    if (tail !== undefined) out.push(tail)
  }
  return out
}
