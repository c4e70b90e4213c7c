// Transactions benchmark (npm run bench:transactions): produce throughput through an in-process broker
// with kafkajs, side by side in one run, the same 100-record sends (100-byte values, acks=all) in each:
//   plain         - a plain producer
//   idempotent    - idempotence on (InitProducerId, sequence checks)
//   txn x100      - a transactional producer, 100 records per transaction (1 send + EndTxn)
//   txn x1000     - a transactional producer, 1000 records per transaction (10 sends + EndTxn)
// A transaction costs AddPartitionsToTxn and EndTxn round trips plus the PrepareCommit/CompleteCommit
// records in __transaction_state and a marker per partition. Modes alternate for BENCH_ROUNDS rounds and
// the median is reported. Env: BENCH_RECORDS (records per measurement, default 20000), BENCH_ROUNDS (3).
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadBrokerConfig } from '../src/config/broker-config.js'
import { silentLogger } from '../src/observability/logger.js'
import { Broker } from '../src/broker/broker.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const RECORDS = Number(process.env.BENCH_RECORDS ?? 20_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SEND = 100
const VALUE = Buffer.alloc(100, 'x')

type Mode = 'plain' | 'idempotent' | 'txn x100' | 'txn x1000'
const MODES: Mode[] = ['plain', 'idempotent', 'txn x100', 'txn x1000']

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b)
  return s[s.length >> 1]!
}

async function run(kafka: any, mode: Mode, topic: string, round: number): Promise<{ recordsPerSec: number; txnPerSec: number }> {
  const perTxn = mode === 'txn x100' ? 100 : mode === 'txn x1000' ? 1000 : 0
  const opts = perTxn > 0 ? { transactionalId: `bench-${mode}-${round}`, idempotent: true, maxInFlightRequests: 1 } : { idempotent: mode === 'idempotent', maxInFlightRequests: mode === 'idempotent' ? 1 : undefined }
  const producer = kafka.producer(opts)
  await producer.connect()
  const messages = Array.from({ length: SEND }, (_, i) => ({ key: `k${i % 16}`, value: VALUE }))
  const sends = Math.ceil(RECORDS / SEND)
  let txns = 0
  const t0 = performance.now()
  if (perTxn === 0) {
    for (let i = 0; i < sends; i++) await producer.send({ topic, acks: -1, messages })
  } else {
    const perTxnSends = perTxn / SEND
    for (let i = 0; i < sends; i += perTxnSends) {
      const txn = await producer.transaction()
      for (let j = 0; j < perTxnSends; j++) await txn.send({ topic, acks: -1, messages })
      await txn.commit()
      txns++
    }
  }
  const seconds = (performance.now() - t0) / 1000
  await producer.disconnect()
  return { recordsPerSec: (sends * SEND) / seconds, txnPerSec: txns / seconds }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'skein-bench-txn-'))
  const config = loadBrokerConfig({
    overrides: ['listeners=PLAINTEXT://127.0.0.1:0', `log.dirs=${dataDir}`, 'io.threads=1', 'transaction.state.log.num.partitions=5', 'offsets.topic.num.partitions=5'],
  })
  const broker = await Broker.start(config, { logger: silentLogger(), shutdownGraceMs: 2000 })
  const endpoint = broker.endpointFor()
  const kafka = new Kafka({ clientId: 'bench', brokers: [`${endpoint.host}:${endpoint.port}`], logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  try {
    await admin.connect()
    const results = new Map<Mode, { recordsPerSec: number[]; txnPerSec: number[] }>(MODES.map((m) => [m, { recordsPerSec: [], txnPerSec: [] }]))
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        const topic = `bench-${mode.replace(/\W+/g, '-')}-${round}`
        await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] })
        const r = await run(kafka, mode, topic, round)
        results.get(mode)!.recordsPerSec.push(r.recordsPerSec)
        results.get(mode)!.txnPerSec.push(r.txnPerSec)
      }
    }
    console.log(`transactions benchmark: kafkajs -> in-process broker, ${RECORDS} records of ${VALUE.length} B per run, sends of ${SEND}, acks=all, 3 partitions, ${ROUNDS} rounds (median), ${cpus().length} cores`)
    const plain = median(results.get('plain')!.recordsPerSec)
    for (const mode of MODES) {
      const r = results.get(mode)!
      const rps = median(r.recordsPerSec)
      const txn = mode.startsWith('txn') ? `, ${median(r.txnPerSec).toFixed(1)} txn/s` : ''
      console.log(`  ${mode.padEnd(11)} ${Math.round(rps).toString().padStart(8)} records/s  ${((rps * VALUE.length) / 1e6).toFixed(2).padStart(6)} MB/s values  ${((rps / plain) * 100).toFixed(0).padStart(4)}% of plain${txn}`)
    }
  } finally {
    await admin.disconnect().catch(() => {})
    await broker.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
