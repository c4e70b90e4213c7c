// `skein produce` and `skein perf produce` with enable.idempotence and transactional.id, run as
// subprocesses against a real broker: idempotent by default (batches carry a producer id), not with
// enable.idempotence=false; the console producer's input as one committed transaction; the perf tool
// committing every --transaction-duration-ms; conflicting settings refused with one line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/index.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'
import { consumeAll, headersOf } from '../client/eos-helpers.js'
import { oneLine, skein } from './helpers.js'

let tb: TestBroker
let b: string[]
let raw: RawClient
let admin: Admin
beforeAll(async () => {
  tb = await startTestBroker(['transaction.state.log.num.partitions=2', 'num.partitions=2'])
  b = ['--bootstrap-server', tb.bootstrap]
  raw = await RawClient.connect(tb.host, tb.port)
  admin = new Admin({ bootstrapServers: tb.bootstrap })
})
afterAll(async () => {
  await admin?.close()
  raw?.close()
  await tb?.stop()
})

describe('skein produce', () => {
  it('is idempotent by default and not with enable.idempotence=false', async () => {
    await admin.createTopics([{ name: 'cli-idem', numPartitions: 1, replicationFactor: 1 }])
    expect((await skein(['produce', ...b, '--topic', 'cli-idem', '--partition', '0'], { input: 'a\nb\n' })).code).toBe(0)
    expect((await skein(['produce', ...b, '--topic', 'cli-idem', '--partition', '0', '--producer-property', 'enable.idempotence=false'], { input: 'c\n' })).code).toBe(0)
    const hs = await headersOf(raw, 'cli-idem', 0)
    expect(hs).toHaveLength(2)
    expect(hs[0]!.producerId).toBeGreaterThanOrEqual(0)
    expect(hs[0]!.baseSequence).toBe(0)
    expect(hs[1]!.producerId).toBe(-1)
  })

  it('writes its whole input as one transaction with transactional.id', async () => {
    await admin.createTopics([{ name: 'cli-txn', numPartitions: 2, replicationFactor: 1 }])
    const r = await skein(['produce', ...b, '--topic', 'cli-txn', '--producer-property', 'transactional.id=cli-producer', '--property', 'parse.key=true', '--property', 'key.separator=:'], { input: 'k1:one\nk2:two\nk3:three\n' })
    expect(r.code).toBe(0)
    expect(r.stderr).toMatch(/^Produced 3 records to topic cli-txn \(.*\) in one transaction\.\n$/)
    const records = await consumeAll(tb.bootstrap, 'cli-txn', [0, 1], 3, 'read_committed')
    expect(records.map((x) => x.value!.toString()).sort()).toEqual(['one', 'three', 'two'])
    const batches = [...(await headersOf(raw, 'cli-txn', 0)), ...(await headersOf(raw, 'cli-txn', 1))]
    expect(batches.filter((h) => !h.control).every((h) => h.transactional)).toBe(true)
  })

  it('refuses enable.idempotence=true with acks=1 in one line', async () => {
    const r = await skein(['produce', ...b, '--topic', 'cli-idem', '--acks', '1', '--producer-property', 'enable.idempotence=true'], { input: 'x\n' })
    expect(r.code).toBe(1)
    expect(oneLine(r.stderr)).toBe('skein produce: the idempotent producer (enable.idempotence=true) needs: acks must be all (-1), not 1 (INVALID_CONFIG)')
  })
})

describe('skein perf produce', () => {
  it('commits a transaction every --transaction-duration-ms with transactional.id', async () => {
    await admin.createTopics([{ name: 'perf-txn', numPartitions: 2, replicationFactor: 1 }])
    const r = await skein(['perf', 'produce', ...b, '--topic', 'perf-txn', '--num-records', '3000', '--record-size', '40', '--throughput', '2000', '--transaction-duration-ms', '100', '--producer-props', 'transactional.id=perf-txn-id', '--json'])
    expect(r.code, r.stderr).toBe(0)
    const out = JSON.parse(r.out) as { records: number; failed: number; transactionsCommitted: number }
    expect(out.records).toBe(3000)
    expect(out.failed).toBe(0)
    // About 1.5 s of sending in transactions of 100 ms: several, even when a loaded machine makes each
    // commit take far longer than 100 ms.
    expect(out.transactionsCommitted).toBeGreaterThanOrEqual(2)
    const records = await consumeAll(tb.bootstrap, 'perf-txn', [0, 1], 3000, 'read_committed')
    expect(records).toHaveLength(3000)
    // Each committed transaction left a commit marker in the partitions it wrote to.
    const markers = (await headersOf(raw, 'perf-txn', 0)).filter((h) => h.control).length + (await headersOf(raw, 'perf-txn', 1)).filter((h) => h.control).length
    expect(markers).toBeGreaterThanOrEqual(out.transactionsCommitted)
  })

  it('--transaction-duration-ms alone turns transactions on with a generated transactional id', async () => {
    const r = await skein(['perf', 'produce', ...b, '--topic', 'perf-txn-default', '--num-records', '500', '--record-size', '10', '--throughput', '-1', '--transaction-duration-ms', '1000', '--json'])
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.out)).toMatchObject({ records: 500, failed: 0, transactionsCommitted: 1 })
    expect(await consumeAll(tb.bootstrap, 'perf-txn-default', [0, 1], 500, 'read_committed')).toHaveLength(500)
  })
})
