// One owner per data directory (Kafka's `.lock`): a second router or broker on a directory in use is
// refused before it recovers partitions or touches the clean-shutdown marker; the lock goes with its
// owner (close, or process death).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { MAIN_JS, REPO_ROOT, freePort, startBrokerProcess } from '../harness/index.js'
import { removeDir, startRouter, tempDir } from './helpers.js'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d)
})

describe('the data directory lock', () => {
  it('refuses a second router on a directory in use, and frees it on close', async () => {
    const dir = tempDir()
    dirs.push(dir)
    const first = await startRouter(dir, 0)
    await expect(startRouter(dir, 1)).rejects.toThrow(/in use by another broker or log/)
    await first.close()
    expect(existsSync(join(dir, '.kafka_cleanshutdown'))).toBe(true)
    const second = await startRouter(dir, 1)
    await second.close()
  })

  it('stops a second broker process on the same log.dirs with one clear line, leaving the first untouched', async () => {
    const first = await startBrokerProcess()
    dirs.push(first.dataDir)
    try {
      const port = await freePort()
      const r = spawnSync(process.execPath, [MAIN_JS, '--override', `listeners=PLAINTEXT://127.0.0.1:${port}`, '--override', `log.dirs=${first.dataDir}`], {
        cwd: REPO_ROOT, encoding: 'utf8', timeout: 20_000,
      })
      expect(r.status).toBe(1)
      expect(r.stderr).toMatch(/^skein: cannot start the broker: data directory .* is in use by another broker or log/)
      // The running broker's directory got no clean-shutdown marker from the refused one.
      expect(existsSync(join(first.dataDir, '.kafka_cleanshutdown'))).toBe(false)
      expect(first.alive()).toBe(true)
    } finally {
      await first.kill('SIGKILL')
    }
    // A SIGKILLed owner leaves no stale lock behind.
    const again = await startBrokerProcess({ dataDir: first.dataDir })
    await again.kill('SIGTERM')
  })
})

