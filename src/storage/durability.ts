// fsync off the JS thread (the native addon runs it on the libuv pool) and atomic small-file writes.

import { closeSync, fstatSync, openSync, readSync, renameSync, writeSync, constants } from 'node:fs'
import { dirname } from 'node:path'
import { native } from '../addon/index.js'

/** fsync (dataOnly=false) or fdatasync (dataOnly=true) of fd without blocking the event loop. */
export function fsyncFd(fd: number, dataOnly: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    native.fsync(fd, dataOnly, (err) => (err ? reject(err) : resolve()))
  })
}

/** fsync of a directory, which makes creates, renames and unlinks inside it durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY)
  try {
    await fsyncFd(fd, false)
  } finally {
    closeSync(fd)
  }
}

/**
 * Replaces path with data atomically: write `<path>.tmp`, fsync it, rename over path, fsync the
 * directory. A crash leaves either the old or the new file (plus maybe a stale .tmp, which readers ignore
 * and the next write replaces).
 */
export async function writeFileAtomic(path: string, data: string | Buffer): Promise<void> {
  const tmp = `${path}.tmp`
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o644)
  try {
    const buf = typeof data === 'string' ? Buffer.from(data) : data
    let off = 0
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off)
    await fsyncFd(fd, false)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, path)
  await fsyncDir(dirname(path))
}

/**
 * The whole content of a small state file (producer snapshot, .txnindex), or null when it is missing,
 * larger than maxBytes or shorter than its stated size; callers treat null as "rebuild from the log".
 */
export function readWholeFile(path: string, maxBytes: number): Buffer | null {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return null
  }
  try {
    const size = fstatSync(fd).size
    if (size > maxBytes) return null
    const buf = Buffer.allocUnsafe(size)
    let done = 0
    while (done < size) {
      const n = readSync(fd, buf, done, size - done, done)
      if (n === 0) return null
      done += n
    }
    return buf
  } finally {
    closeSync(fd)
  }
}
