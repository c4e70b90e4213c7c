// log.flush.offset.checkpoint.interval.ms reaches the shards: a broker writes a partition's
// recovery-point-offset-checkpoint within that interval after the recovery point moves (here an append
// with flush.messages=1, which fsyncs at once), not at the 60 s default.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { RawClient, startTestBroker, simpleBatch, type TestBroker } from '../harness/index.js'

const brokers: TestBroker[] = []
afterEach(async () => {
  for (const b of brokers.splice(0)) await b.stop()
})

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return null
  }
}

async function waitForFile(path: string, content: string, timeoutMs: number): Promise<number> {
  const start = Date.now()
  while (Date.now() - start < timeoutMs) {
    if (readOrNull(path) === content) return Date.now() - start
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`${path} did not read ${JSON.stringify(content)} within ${timeoutMs} ms (it reads ${JSON.stringify(readOrNull(path))})`)
}

describe('log.flush.offset.checkpoint.interval.ms', () => {
  for (const ioThreads of [0, 1]) {
    it(`a broker writes the recovery-point checkpoint within the interval after an append (io.threads=${ioThreads})`, async () => {
      const tb = await startTestBroker([`io.threads=${ioThreads}`, 'log.flush.offset.checkpoint.interval.ms=250'])
      brokers.push(tb)
      const c = await RawClient.connect(tb.host, tb.port)
      try {
        expect((await c.createTopic('cp', 1, { 'flush.messages': '1' })).errorCode).toBe(0)
        const checkpoint = join(tb.dataDir, 'cp-0', 'recovery-point-offset-checkpoint')
        // A new partition writes no checkpoint while its recovery point is 0 (checkpoint.ts).
        expect(readOrNull(checkpoint)).toBeNull()
        expect((await c.produce('cp', 0, simpleBatch('r', 3))).errorCode).toBe(0)
        // Kafka's OffsetCheckpointFile: version, entry count, "<topic> <partition> <offset>". The default
        // interval would take 60 s; allow several 250 ms intervals for a loaded machine.
        await waitForFile(checkpoint, '0\n1\ncp 0 3\n', 5_000)
      } finally {
        c.close()
      }
    })
  }
})
