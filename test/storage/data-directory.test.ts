// The owner of a data directory: its `.lock` and the clean-shutdown marker (data-directory.ts).
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CLEAN_SHUTDOWN_MARKER, DATA_DIR_LOCK, DataDirectory } from '../../src/storage/index.js'
import { tempDir } from './helpers.js'

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const c of cleanups.splice(0)) c()
})

function dir(): string {
  const d = tempDir('skein-datadir-')
  cleanups.push(d.cleanup)
  return join(d.path, 'nested', 'logs')
}

describe('DataDirectory', () => {
  it('creates and locks the directory; a second owner is refused until the first closes', () => {
    const path = dir()
    const first = DataDirectory.open(path)
    expect(existsSync(join(path, DATA_DIR_LOCK))).toBe(true)
    expect(first.cleanShutdown).toBe(false)
    expect(() => DataDirectory.open(path)).toThrow(/in use by another broker or log/)
    first.close(false)
    expect(first.isOpen).toBe(false)
    const second = DataDirectory.open(path)
    second.close(false)
  })

  it('a clean close leaves the marker; the next open reports it and removes it', () => {
    const path = dir()
    DataDirectory.open(path).close(true)
    expect(existsSync(join(path, CLEAN_SHUTDOWN_MARKER))).toBe(true)
    const reopened = DataDirectory.open(path)
    expect(reopened.cleanShutdown).toBe(true)
    // Cleared at open: a crash of this owner must not look clean to the next one.
    expect(existsSync(join(path, CLEAN_SHUTDOWN_MARKER))).toBe(false)
    reopened.close(false)
    expect(existsSync(join(path, CLEAN_SHUTDOWN_MARKER))).toBe(false)
    const third = DataDirectory.open(path)
    expect(third.cleanShutdown).toBe(false)
    third.close(false)
  })

  it('close is idempotent: only the first call decides about the marker', () => {
    const path = dir()
    const d = DataDirectory.open(path)
    d.close(false)
    d.close(true)
    expect(existsSync(join(path, CLEAN_SHUTDOWN_MARKER))).toBe(false)
  })
})
