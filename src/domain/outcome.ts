// One item's result in a batch operation (the shards, the partition service): a value, or a Kafka error
// code with a message. Batch APIs answer one Outcome per item, never a rejected promise for one bad item.
// A failure may name the records that caused it (a produce batch refused for some of its records).
import type { RecordError } from './errors.js'

export type Outcome<T> = { ok: true; value: T } | { ok: false; errorCode: number; message: string; recordErrors?: RecordError[] }
