import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'

let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'skein-fsync-'))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

function fsync(fd: number, dataOnly: boolean): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => native.fsync(fd, dataOnly, resolve))
}

describe('fsync', () => {
  it('fsyncs and fdatasyncs a file on the thread pool', async () => {
    const path = join(dir, 'f.log')
    const fd = openSync(path, 'w')
    try {
      writeSync(fd, 'hello')
      let returned = false
      const full = fsync(fd, false).then((err) => {
        expect(returned).toBe(true) // the callback is asynchronous
        return err
      })
      returned = true
      expect(await full).toBeNull()
      writeSync(fd, ' world')
      expect(await fsync(fd, true)).toBeNull()
      expect(readFileSync(path, 'utf8')).toBe('hello world')
    } finally {
      closeSync(fd)
    }
  })

  it('calls back with EBADF for a closed or invalid fd', async () => {
    const fd = openSync(join(dir, 'closed.log'), 'w')
    closeSync(fd)
    const closed = await fsync(fd, false)
    expect(closed).toBeInstanceOf(Error)
    expect(closed!.code).toBe('EBADF')
    expect(closed!.syscall).toBe('fsync')
    const invalid = await fsync(999_999, true)
    expect(invalid!.code).toBe('EBADF')
    expect(invalid!.syscall).toBe('fdatasync')
  })

  it('rejects bad arguments synchronously', () => {
    expect(() => native.fsync(-1, false, () => {})).toThrow(RangeError)
    expect(() => native.fsync(3, 'yes' as unknown as boolean, () => {})).toThrow(TypeError)
    expect(() => native.fsync(3, false, null as unknown as () => void)).toThrow(TypeError)
  })
})
