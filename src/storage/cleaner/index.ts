// Compaction over record batch bytes: the offset map of latest offsets per key, the batch filter that
// keeps, drops or rewrites records, and the reader that walks a segment's batches. They know nothing of
// segments or partition logs; ../log-cleaner.ts runs them over a partition's segments.
export { OffsetMap } from './offset-map.js'
export { DELETE_HORIZON_MASK } from './batch-filter.js'
