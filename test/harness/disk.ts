// Small filesystems for disk-full tests: a tmpfs of a given size mounted on a fresh temp dir (root only),
// and a file that fills a filesystem to its last block.
import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmdirSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Mounts a tmpfs of `size` (mount's notation: 1m, 8m) on a new temp dir; unmount() takes it away again. */
export function mountTmpfs(prefix: string, size: string): { dir: string; unmount: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir])
  return {
    dir,
    unmount: () => {
      try {
        execFileSync('umount', [dir])
      } catch {
        execFileSync('umount', ['-l', dir]) // a file still open in a child process: detach it
      }
      rmdirSync(dir)
    },
  }
}

/**
 * Writes `path` chunk by chunk until the filesystem answers ENOSPC (any other error is thrown); answers
 * the bytes written. A 4 KiB chunk leaves no more than a page free.
 */
export function fillFilesystem(path: string, chunkBytes = 4096): number {
  const fd = openSync(path, 'w')
  const chunk = Buffer.alloc(chunkBytes, 1)
  let written = 0
  try {
    for (;;) written += writeSync(fd, chunk)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
  } finally {
    closeSync(fd)
  }
  return written
}
