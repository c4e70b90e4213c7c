// Per-partition checkpoint files (the data directory's own files, its lock and clean-shutdown marker,
// are in data-directory.ts).
//
// Checkpoint format (Kafka's OffsetCheckpointFile, text, '\n' line ends):
//   line 1: version, always 0
//   line 2: number of entries (here always 1: one owner per partition, one file per partition dir)
//   line 3: "<topic> <partition> <offset>"
// Files: <dataDir>/<topic>-<partition>/recovery-point-offset-checkpoint (offset below which every
// segment has been fsynced), .../log-start-offset-checkpoint (DeleteRecords / retention floor) and
// .../replication-offset-checkpoint (the high watermark of a replicated partition, whose high watermark
// does not follow its LEO; Kafka keeps these three in one file per log dir, Skein one per partition, as
// one thread owns each partition).
// Written atomically (tmp + fsync + rename + dir fsync), so a crash leaves the old or the new value.
// Recovery: a missing or malformed file (or one naming another partition) reads as absent, which means
// "recover everything" for the recovery point, "first segment's base offset" for the log start and "the
// log start" for the high watermark (nothing known to be committed: the leader's answers raise it).
// Both meanings equal those of the value 0, so a partition writes no file while its value is 0 (a new
// partition writes none until its offsets move: creating thousands of partitions costs no fsyncs).

import { readFileSync } from 'node:fs'
import { writeFileAtomic } from './durability.js'

export const RECOVERY_POINT_CHECKPOINT = 'recovery-point-offset-checkpoint'
export const LOG_START_OFFSET_CHECKPOINT = 'log-start-offset-checkpoint'
export const REPLICATION_OFFSET_CHECKPOINT = 'replication-offset-checkpoint'
const MAX_CHECKPOINT_BYTES = 4096

/** Reads one partition's offset from a checkpoint file, or undefined when absent or unusable. */
export function readCheckpoint(path: string, topic: string, partition: number): number | undefined {
  let text: string
  try {
    const buf = readFileSync(path)
    if (buf.length > MAX_CHECKPOINT_BYTES) return undefined
    text = buf.toString('utf8')
  } catch {
    return undefined
  }
  const lines = text.split('\n')
  if (lines[0] !== '0') return undefined
  const count = Number(lines[1])
  if (!Number.isInteger(count) || count < 0 || count > 1000) return undefined
  for (let i = 0; i < count; i++) {
    const parts = (lines[2 + i] ?? '').split(' ')
    if (parts.length !== 3) return undefined
    const offset = Number(parts[2])
    if (parts[0] === topic && Number(parts[1]) === partition && Number.isSafeInteger(offset) && offset >= 0) return offset
  }
  return undefined
}

export function formatCheckpoint(topic: string, partition: number, offset: number): string {
  return `0\n1\n${topic} ${partition} ${offset}\n`
}

export function writeCheckpoint(path: string, topic: string, partition: number, offset: number): Promise<void> {
  return writeFileAtomic(path, formatCheckpoint(topic, partition, offset))
}
