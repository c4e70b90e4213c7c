// Where share-partition state is kept between uses (Kafka's Persister, KIP-932): the share coordinator
// keeps it in the compacted __share_group_state topic, written through InitializeShareGroupState /
// ReadShareGroupState / WriteShareGroupState. Skein keeps it in memory for now (InMemorySharePersister):
// it survives a share partition being dropped and loaded again (a leadership move within this broker, a
// topic's partition going idle), not a restart of the broker or a move of the leader to another broker.
import type { ShareSnapshot } from './share-partition.js'

export interface ShareStateKey {
  group: string
  topicId: string
  partition: number
}

/** Kafka's ReadShareGroupState answer for one share-partition. */
export interface ShareGroupState extends ShareSnapshot {
  /** Bumped when the state is initialized again (offsets altered or deleted by an admin). */
  stateEpoch: number
  /** The leader epoch of the partition when it was written. */
  leaderEpoch: number
}

export interface SharePersister {
  /** A share-partition's state, or undefined when none was ever initialized. */
  readState(key: ShareStateKey): Promise<ShareGroupState | undefined>
  /** Initializes (or replaces) a share-partition's state: its start offset and no in-flight record. */
  initializeState(key: ShareStateKey, stateEpoch: number, startOffset: number): Promise<void>
  /** Writes the state after acknowledgements, releases and lock timeouts. */
  writeState(key: ShareStateKey, state: ShareGroupState): Promise<void>
  /** Forgets a share-partition's state (its topic deleted). */
  deleteState(key: ShareStateKey): Promise<void>
}

export class InMemorySharePersister implements SharePersister {
  readonly #states = new Map<string, ShareGroupState>()

  get size(): number {
    return this.#states.size
  }

  readState(key: ShareStateKey): Promise<ShareGroupState | undefined> {
    const s = this.#states.get(keyOf(key))
    return Promise.resolve(s === undefined ? undefined : copy(s))
  }

  initializeState(key: ShareStateKey, stateEpoch: number, startOffset: number): Promise<void> {
    this.#states.set(keyOf(key), { stateEpoch, leaderEpoch: -1, startOffset, stateBatches: [] })
    return Promise.resolve()
  }

  writeState(key: ShareStateKey, state: ShareGroupState): Promise<void> {
    this.#states.set(keyOf(key), copy(state))
    return Promise.resolve()
  }

  deleteState(key: ShareStateKey): Promise<void> {
    this.#states.delete(keyOf(key))
    return Promise.resolve()
  }
}

function keyOf(k: ShareStateKey): string {
  return `${k.group}\u0000${k.topicId}\u0000${k.partition}`
}

function copy(s: ShareGroupState): ShareGroupState {
  return { ...s, stateBatches: s.stateBatches.map((b) => ({ ...b })) }
}
