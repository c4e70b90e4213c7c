// fsync off the JS thread (the native addon runs it on the libuv pool) and atomic small-file writes.

import { closeSync, openSync, renameSync, writeSync, constants } from 'node:fs'
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
