// A task's .checkpoint file: the changelog offsets its local stores reflect, in Kafka's OffsetCheckpoint
// text format, so that a restart restores only what comes after them:
//
//   0                       <- version
//   2                       <- number of entries
//   app-counts-changelog 3 1500
//   app-other-changelog 3 42
//
// Each line is "<topic> <partition> <offset>": the next changelog offset to restore from. The file is
// written to .checkpoint.tmp, fsynced and renamed over .checkpoint, so a crash leaves the old file or
// the new one, never a torn one; a file that does not parse is treated as absent (the stores are then
// rebuilt from the changelog's start). Under exactly_once_v2 the file is deleted when a task starts
// processing and written again only at a clean close, so after a crash no checkpoint claims offsets
// that uncommitted writes may have passed.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'

export const CHECKPOINT_FILE = '.checkpoint'
const VERSION = 0

export class OffsetCheckpoint {
  readonly path: string

  constructor(dir: string) {
    this.path = join(dir, CHECKPOINT_FILE)
  }

  /** 'topic\0partition' -> offset; empty when there is no (readable) file. */
  read(): Map<string, number> {
    const out = new Map<string, number>()
    if (!existsSync(this.path)) return out
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch {
      return out
    }
    const lines = text.split('\n').filter((l) => l.trim() !== '')
    if (lines.length < 2 || Number(lines[0]) !== VERSION) return out
    const n = Number(lines[1])
    if (!Number.isInteger(n) || n !== lines.length - 2) return new Map()
    for (const line of lines.slice(2)) {
      const m = /^(\S+) (\d+) (-?\d+)$/.exec(line.trim())
      if (m === null) return new Map()
      out.set(`${m[1]}\u0000${m[2]}`, Number(m[3]))
    }
    return out
  }

  write(offsets: ReadonlyMap<string, number>): void {
    const lines = [String(VERSION), String(offsets.size)]
    for (const [tp, offset] of offsets) {
      const [topic, partition] = tp.split('\u0000')
      lines.push(`${topic} ${partition} ${offset}`)
    }
    const tmp = `${this.path}.tmp`
    const fd = openSync(tmp, 'w')
    try {
      writeSync(fd, lines.join('\n') + '\n')
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, this.path)
  }

  delete(): void {
    rmSync(this.path, { force: true })
  }
}
