// ListOffsets' special timestamps (Kafka's ListOffsetsRequest constants): a ListOffsets timestamp is one
// of these or a time in ms. The broker's partition log interprets them (PartitionLog.fetchOffsetByTimestamp);
// the client sends them.

/** The end of what a consumer may read: the high watermark, or the last stable offset for read_committed. */
export const LATEST_TIMESTAMP = -1
/** The log start offset. */
export const EARLIEST_TIMESTAMP = -2
/** The batch with the largest timestamp. */
export const MAX_TIMESTAMP = -3
/** The first offset in local storage; equal to EARLIEST_TIMESTAMP without tiered storage. */
export const EARLIEST_LOCAL_TIMESTAMP = -4
