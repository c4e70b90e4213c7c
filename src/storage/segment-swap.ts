// Replacing segments with a cleaned one, so that a crash at any point leaves a valid log (Kafka's
// LogCleaner swap and LogLoader recovery of `.cleaned` / `.swap` files).
//
// Files, in the partition directory, for a group of old segments [b0, b1, ...] cleaned into one:
//   <b0>.log.cleaned, <b0>.index.cleaned, <b0>.timeindex.cleaned  being written (fsynced when complete)
//   <b0>.index.swap, <b0>.timeindex.swap, then <b0>.log.swap        renamed from .cleaned: the .log.swap is
//                                                                  the commit point of the swap
//   old segments' files unlinked, then the .swap files renamed to <b0>.log/.index/.timeindex.
//
// Recovery on open (recoverInterruptedSwaps, before segments are listed):
//   - every `*.cleaned` file is deleted: the swap had not committed, the old segments are intact;
//   - a `<b>.log.swap` completes the swap: the regular segments whose base offset lies in [b, next offset
//     of the swap segment) are the ones it replaces and are deleted, then it is renamed to `<b>.log`. An
//     old segment of the group whose every record was cleaned away lies past that range and survives;
//     its records are all obsolete (superseded by later offsets), so the log stays right and the next
//     pass removes them again, as Kafka does;
//   - index `.swap` files are deleted with the regular indexes of that base, which are then rebuilt from
//     the .log (a crash between the renames of a .log and of its indexes must not pair a new .log with
//     an old index).

import { closeSync, constants, existsSync, fstatSync, fsyncSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { native } from '../addon/index.js'
import { scanFileBatches } from '../protocol/records/file-scan.js'
import { INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, parseSegmentFileName, segmentFileName } from './segment.js'

export const CLEANED_SUFFIX = '.cleaned'
export const SWAP_SUFFIX = '.swap'
const SEGMENT_SUFFIXES = [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] as const

/** Steps of a swap, reported to a test hook (crash tests kill the process at each). */
export type SwapStep = 'cleaned-written' | 'renamed-to-swap' | 'old-deleted' | 'swapped'

/** What recovery found. */
export interface SwapRecovery {
  cleanedFilesDeleted: number
  swapsCompleted: number
  segmentsReplaced: number
  indexSwapsDropped: number
}

/**
 * fsync of the directory, blocking: a swap runs start to end within one turn of the owner thread so
 * that no append, read or retention of the same log interleaves with it (a directory fsync is short).
 */
function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function segmentBaseOf(name: string, suffix: string): number | null {
  for (const sfx of SEGMENT_SUFFIXES) {
    const b = parseSegmentFileName(name.slice(0, name.length - suffix.length), sfx)
    if (name.endsWith(sfx + suffix) && b !== null) return b
  }
  return null
}

function removeSegmentFiles(dir: string, base: number, suffix = ''): void {
  for (const sfx of SEGMENT_SUFFIXES) rmSync(join(dir, segmentFileName(base, sfx) + suffix), { force: true })
}

/** Next offset after the last whole, CRC-valid batch of a .log file (its base offset when none). */
function nextOffsetOf(path: string, base: number): number {
  const fd = openSync(path, constants.O_RDONLY)
  try {
    let next = base
    scanFileBatches(fd, 0, fstatSync(fd).size, native.crc32c, (b) => {
      if (b.baseOffset < next) return 'reject'
      next = b.lastOffset + 1
    })
    return next
  } finally {
    closeSync(fd)
  }
}

/**
 * Deletes `.cleaned` files and completes `.swap` files left by a cleaning pass (see the header). listing:
 * the directory's names when the caller has just read them.
 */
export function recoverInterruptedSwaps(dir: string, listing?: readonly string[]): SwapRecovery {
  const report: SwapRecovery = { cleanedFilesDeleted: 0, swapsCompleted: 0, segmentsReplaced: 0, indexSwapsDropped: 0 }
  let names = listing ?? readdirSync(dir)
  for (const name of names) {
    if (name.endsWith(CLEANED_SUFFIX) && segmentBaseOf(name, CLEANED_SUFFIX) !== null) {
      rmSync(join(dir, name), { force: true })
      report.cleanedFilesDeleted++
    }
  }
  const logSwaps = names.map((n) => (n.endsWith(LOG_SUFFIX + SWAP_SUFFIX) ? parseSegmentFileName(n.slice(0, -SWAP_SUFFIX.length), LOG_SUFFIX) : null))
    .filter((b): b is number => b !== null)
    .sort((a, b) => a - b)
  if (logSwaps.length === 0 && !names.some((n) => n.endsWith(SWAP_SUFFIX))) return report
  for (const base of logSwaps) {
    const swapPath = join(dir, segmentFileName(base, LOG_SUFFIX) + SWAP_SUFFIX)
    const next = nextOffsetOf(swapPath, base)
    const regular = readdirSync(dir).map((n) => parseSegmentFileName(n, LOG_SUFFIX)).filter((b): b is number => b !== null)
    for (const b of regular) {
      // The segment named like the swap is replaced even when the swap holds no batch at all.
      if (b === base || (b > base && b < next)) {
        removeSegmentFiles(dir, b)
        report.segmentsReplaced++
      }
    }
    renameSync(swapPath, join(dir, segmentFileName(base, LOG_SUFFIX)))
    // Its indexes (swapped or not) are rebuilt from the .log by the segment's recovery.
    for (const sfx of [INDEX_SUFFIX, TIME_INDEX_SUFFIX]) {
      rmSync(join(dir, segmentFileName(base, sfx) + SWAP_SUFFIX), { force: true })
      rmSync(join(dir, segmentFileName(base, sfx)), { force: true })
    }
    report.swapsCompleted++
  }
  names = readdirSync(dir)
  for (const name of names) {
    if (!name.endsWith(SWAP_SUFFIX)) continue
    const base = segmentBaseOf(name, SWAP_SUFFIX)
    if (base === null) continue
    rmSync(join(dir, name), { force: true })
    rmSync(join(dir, segmentFileName(base, INDEX_SUFFIX)), { force: true })
    rmSync(join(dir, segmentFileName(base, TIME_INDEX_SUFFIX)), { force: true })
    report.indexSwapsDropped++
  }
  if (report.swapsCompleted > 0 || report.indexSwapsDropped > 0) fsyncDirSync(dir)
  return report
}

/**
 * Swaps the cleaned files of base into place after the old segments' files are removed by
 * deleteOld. The cleaned files must be complete and fsynced. onStep (tests) is called after each step.
 */
export function swapCleanedIntoPlace(dir: string, base: number, deleteOld: () => void, onStep?: (step: SwapStep) => void): void {
  onStep?.('cleaned-written')
  const p = (sfx: string, suffix: string): string => join(dir, segmentFileName(base, sfx) + suffix)
  renameSync(p(INDEX_SUFFIX, CLEANED_SUFFIX), p(INDEX_SUFFIX, SWAP_SUFFIX))
  renameSync(p(TIME_INDEX_SUFFIX, CLEANED_SUFFIX), p(TIME_INDEX_SUFFIX, SWAP_SUFFIX))
  renameSync(p(LOG_SUFFIX, CLEANED_SUFFIX), p(LOG_SUFFIX, SWAP_SUFFIX))
  fsyncDirSync(dir)
  onStep?.('renamed-to-swap')
  deleteOld()
  onStep?.('old-deleted')
  renameSync(p(LOG_SUFFIX, SWAP_SUFFIX), p(LOG_SUFFIX, ''))
  renameSync(p(INDEX_SUFFIX, SWAP_SUFFIX), p(INDEX_SUFFIX, ''))
  renameSync(p(TIME_INDEX_SUFFIX, SWAP_SUFFIX), p(TIME_INDEX_SUFFIX, ''))
  fsyncDirSync(dir)
  onStep?.('swapped')
}

/** Removes the cleaned files of base (an abandoned pass). Missing files and directories are fine. */
export function deleteCleanedFiles(dir: string, base: number): void {
  if (!existsSync(dir)) return
  removeSegmentFiles(dir, base, CLEANED_SUFFIX)
}
