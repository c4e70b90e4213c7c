// Whole-file replacement that a crash cannot tear: write `<path>.tmp`, fsync it, rename it over path,
// fsync the directory. A crash leaves the old file or the new one; a stale `.tmp` is overwritten next
// time. Synchronous, for the main thread's rare metadata writes (meta.properties, cluster-metadata.json);
// the partition hot path uses the asynchronous writeFileAtomic of ./durability.ts.
import { closeSync, constants, fsyncSync, openSync, renameSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

export function writeFileAtomicSync(path: string, data: string | Buffer): void {
  const tmp = `${path}.tmp`
  const buf = typeof data === 'string' ? Buffer.from(data) : data
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o644)
  try {
    let off = 0
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  const dirFd = openSync(dirname(path), constants.O_RDONLY)
  try {
    fsyncSync(dirFd)
  } finally {
    closeSync(dirFd)
  }
}
