// Where share-partition state is kept between uses (Kafka's Persister, KIP-932): the share coordinator
// keeps it in __share_group_state, written through InitializeShareGroupState / ReadShareGroupState /
// WriteShareGroupState. The broker's persister is BrokerSharePersister (broker/coordinators/share-states.ts),
// so the state survives a restart of the broker and a move of the leadership to another broker.
// InMemorySharePersister keeps it in memory, for unit tests and embedders without the coordinator.
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
  /**
   * A share-partition's state, or undefined when none was ever initialized. `leaderEpoch` (-1: unknown) is
   * the partition's leader epoch of the reader: the share coordinator fences older leaders' writes by it.
   */
  readState(key: ShareStateKey, leaderEpoch?: number): Promise<ShareGroupState | undefined>
  /** Initializes (or replaces) a share-partition's state: its start offset and no in-flight record. */
  initializeState(key: ShareStateKey, stateEpoch: number, startOffset: number): Promise<void>
  /** Writes the state after acknowledgements, releases and lock timeouts; rejects (with a Kafka error `code`) when it cannot. */
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
