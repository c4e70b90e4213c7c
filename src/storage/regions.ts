// Reading file regions into memory, for the places that need bytes rather than sendfile: coordinator
// replay, tools, the library API. Regions stay readable while their read lease is held.
import { readSync } from 'node:fs'
import type { FileRegion } from '../domain/file-region.js'

/** Copies the bytes of file regions (as returned by reads) into one Buffer. */
export function readRegions(regions: readonly FileRegion[]): Buffer {
  const total = regions.reduce((n, r) => n + r.length, 0)
  const out = Buffer.allocUnsafe(total)
  let at = 0
  for (const r of regions) {
    let done = 0
    while (done < r.length) {
      const n = readSync(r.fd, out, at + done, r.length - done, r.position + done)
      if (n === 0) throw new Error(`file region ends early (fd ${r.fd}, position ${r.position + done})`)
      done += n
    }
    at += r.length
  }
  return out
}
