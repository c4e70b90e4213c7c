// Issue 30 end to end: a real broker gets hand-built Produce requests carrying each of the five batches
// that used to poison a topic (a gzip bomb of 1 GiB of zeros, gzipped text, a gzip flag on non-gzip
// bytes, a 1-record batch declaring 1,000,000 records, trailing bytes after the last record). Each is
// answered CORRUPT_MESSAGE or INVALID_RECORD with an error message, nothing of it is stored (no offset
// used up), and a real client (kcat, else the raw fetch) still reads exactly the topic's good records.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { decodeAllRecords, hasKcat, INSTALL_HINT, RawClient, recordsBuffer, runOk, startTestBroker, type TestBroker } from '../harness/index.js'
import { goodBatch, hostileBatches } from '../records/hostile-batches.js'

const KCAT = hasKcat()
if (!KCAT) console.warn(`kcat is not installed: the topic is read back with the raw fetch only (${INSTALL_HINT})`)

const TOPIC = 'poison'
let tb: TestBroker
let client: RawClient

beforeAll(async () => {
  tb = await startTestBroker()
  client = await RawClient.connect(tb.host, tb.port, 30_000)
  const created = await client.createTopic(TOPIC, 1)
  expect(created.errorCode).toBe(0)
})

afterAll(async () => {
  client?.close()
  await tb?.stop()
})

describe('hostile produce requests', () => {
  it('refuses each of the five poisoning batches and keeps the topic readable', async () => {
    const first = await client.produce(TOPIC, 0, goodBatch('good-1'), 1, 9)
    expect(first.errorCode).toBe(0)
    for (const [name, batch] of Object.entries(hostileBatches())) {
      const res = await client.produce(TOPIC, 0, batch, 1, 9)
      expect([ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD], name).toContain(res.errorCode)
      expect(res.errorMessage, name).toBeTruthy()
    }
    const last = await client.produce(TOPIC, 0, goodBatch('good-2'), 1, 9)
    expect(last.errorCode).toBe(0)
    // No offset was used by a refused batch.
    expect(Number(last.baseOffset)).toBe(1)

    const fetched = await client.fetch(TOPIC, 0, 0)
    expect(fetched.errorCode).toBe(0)
    expect(decodeAllRecords(recordsBuffer(fetched)).map((r) => r.value?.toString())).toEqual(['good-1', 'good-2'])
    if (KCAT) {
      const out = await runOk('kcat', ['-C', '-b', tb.bootstrap, '-t', TOPIC, '-p', '0', '-o', 'beginning', '-e', '-q', '-f', '%o:%s\\n'], { timeoutMs: 30_000 })
      expect(out.stdout.toString().trim().split('\n')).toEqual(['0:good-1', '1:good-2'])
    }
  }, 120_000)
})
