// The ports a replica fetcher works through: the leader it fetches from (LeaderEndpoint; the network
// implementation over Skein's client connection is the broker's, src/broker/remote-leader-endpoint.ts, so this
// floor imports no client and tests can drive a fetcher without sockets) and the local log it writes
// (FollowerLog, the shard operations of a follower).

/** One partition of a follower's fetch. */
export interface FollowerFetchPartition {
  topic: string
  partition: number
  fetchOffset: number
  /** The leader epoch the follower knows (the leader refuses an older one, FENCED_LEADER_EPOCH). */
  currentLeaderEpoch: number
  /** The epoch of the last batch the follower has (-1: none): the leader checks for divergence. */
  lastFetchedEpoch: number
  maxBytes: number
}

export interface FollowerFetchAnswer {
  topic: string
  partition: number
  errorCode: number
  highWatermark: number
  logStartOffset: number
  /** Whole batches as the leader stored them (may end with a partial one). */
  records: Buffer
  /** Set when the follower's log diverged from the leader's: truncate to this epoch's end offset. */
  divergingEpoch?: { epoch: number; endOffset: number }
}

/**
 * One Fetch of a follower, in a fetch session (KIP-227) when the leader opened one: a full fetch (epoch 0)
 * names every partition and asks for a session; an incremental one (the session's id and epoch) names
 * only the partitions added or changed since they were last named, and those the session drops.
 */
export interface FollowerFetchRequest {
  /** 0 for none; with epoch 0, the session a full fetch closes. */
  sessionId: number
  sessionEpoch: number
  partitions: readonly FollowerFetchPartition[]
  /** Partitions the session drops (incremental fetches only). */
  forgotten: readonly { topic: string; partition: number }[]
}

export interface FollowerFetchResult {
  /** The answer's own error: a session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH...) or NONE. */
  errorCode: number
  /** The session the leader opened or continued; 0 for none. */
  sessionId: number
  /** A full fetch's answer has every partition; an incremental one's only those with something new. */
  answers: FollowerFetchAnswer[]
}

export interface FollowerFetchSettings {
  maxWaitMs: number
  minBytes: number
  maxBytes: number
}

export interface LeaderEndpoint {
  /**
   * Whether the leader reports a diverging epoch in Fetch (v12+, inter.broker.protocol.version 2.7+):
   * otherwise the follower truncates through OffsetForLeaderEpoch before it fetches (epochEndOffset).
   */
  readonly truncatesOnFetch: boolean
  /** OffsetForLeaderEpoch as a replica: the leader's end offset of `epoch` (Kafka's (-1, -1) when unknown). */
  epochEndOffset(topic: string, partition: number, currentLeaderEpoch: number, epoch: number): Promise<{ errorCode: number; leaderEpoch: number; endOffset: number }>
  /** One Fetch with this broker's replica id; rejects when the connection fails. A leader that keeps no session answers session id 0. */
  fetch(request: FollowerFetchRequest, settings: FollowerFetchSettings): Promise<FollowerFetchResult>
  /** The leader's log end offset and log start offset of a partition (ListOffsets as a replica). */
  offsets(topic: string, partition: number, currentLeaderEpoch: number): Promise<{ errorCode: number; logEndOffset: number; logStartOffset: number }>
  close(): void
}

/** A follower's log after an operation. */
export interface FollowerLogState {
  logStartOffset: number
  logEndOffset: number
  highWatermark: number
  /** The newest epoch in the leader epoch cache, -1 when none. */
  latestEpoch: number
}

export interface FollowerLog {
  /** Appends the leader's batches verbatim and takes its HW and log start offset. */
  append(topic: string, partition: number, records: Buffer, highWatermark: number, logStartOffset: number): Promise<FollowerLogState & { lastEpoch: number }>
  /** Cuts the log back to offset (durably). */
  truncate(topic: string, partition: number, offset: number): Promise<FollowerLogState>
  /** Empties the log and starts it at offset (durably). */
  truncateFullyAndStartAt(topic: string, partition: number, offset: number): Promise<FollowerLogState>
  /** The end offset of an epoch in the local log ((-1, -1) when unknown). */
  endOffsetForEpoch(topic: string, partition: number, epoch: number): Promise<{ leaderEpoch: number; endOffset: number }>
}
