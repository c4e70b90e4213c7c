// Consume at the batch level: one connection (the Skein client's BrokerConnection, in a child process of
// its own, with the skein tools' malloc settings) reads a topic from the start with Fetch requests for all
// its partitions, one request at a time as a follower replica does, checks each record batch's CRC and
// counts its records from the header (recordCount) without decoding the records, as a follower replica or
// a batch-forwarding mirror reads. It measures what the broker's zero-copy fetch path serves to a consumer
// whose per-record work is taken out, so that the consume figures can be split into broker cost and the
// cost of decoding records in JavaScript.
//
// As a script: node dist/bench/broker/raw-consume.js PORT TOPIC PARTITIONS RECORDS -> one JSON line.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { tuneMallocForClient } from '../../src/addon/malloc-tuning.js'
import { native } from '../../src/addon/index.js'
import { BrokerConnection } from '../../src/client/connection.js'
import { ApiKey } from '../../src/protocol/api-keys.gen.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import {
  ATTRIBUTES_OFFSET, BATCH_LENGTH_OFFSET, CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RECORD_COUNT_OFFSET,
} from '../../src/protocol/records/batch.js'

export interface RawConsumeResult {
  records: number
  bytes: number
  fetches: number
  recordsPerSec: number
  mbPerSec: number
  /** The consuming process's CPU (user + system) over the timed part, in microseconds per record. */
  clientCpuUsPerRecord: number
}

/** Per partition per fetch: Kafka's max.partition.fetch.bytes default. */
const PARTITION_MAX_BYTES = 1024 * 1024

/** Runs the loop in a fresh child process; rejects if it fails or the log holds fewer records. */
export function rawConsume(port: number, topic: string, partitions: number, records: number, timeoutMs = 300000): Promise<RawConsumeResult> {
  const script = fileURLToPath(import.meta.url)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, String(port), topic, String(partitions), String(records)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.once('exit', (code) => {
      clearTimeout(timer)
      if (code !== 0) return reject(new Error(`raw-consume exited ${code}: ${err.trim().slice(0, 500)}`))
      try {
        resolve(JSON.parse(out.trim().split('\n').pop()!) as RawConsumeResult)
      } catch {
        reject(new Error(`raw-consume printed no result: ${out.slice(0, 200)} ${err.slice(0, 300)}`))
      }
    })
  })
}

async function consumeBatches(port: number, topic: string, partitions: number, records: number): Promise<RawConsumeResult> {
  const conn = await BrokerConnection.connect({ host: '127.0.0.1', port, clientId: 'skein-bench-raw-consume', requestTimeoutMs: 30000 })
  try {
    const next = new Array<number>(partitions).fill(0)
    let counted = 0
    let bytes = 0
    let fetches = 0
    let idleFetches = 0
    const t0 = performance.now()
    const cpu0 = process.cpuUsage()
    while (counted < records) {
      const req = Fetch.createFetchRequest({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 50 * 1024 * 1024,
        sessionEpoch: -1,
        topics: [Fetch.createFetchTopic({
          topic,
          partitions: next.map((offset, partition) => Fetch.createFetchPartition({ partition, fetchOffset: BigInt(offset), partitionMaxBytes: PARTITION_MAX_BYTES })),
        })],
      })
      fetches++
      const res = await conn.send(ApiKey.Fetch, (w, v) => Fetch.encodeFetchRequest(w, req, v), Fetch.decodeFetchResponse)
      let progressed = false
      for (const p of res.responses[0]!.partitions) {
        if (p.errorCode !== 0) throw new Error(`Fetch ${topic}-${p.partitionIndex}: error ${p.errorCode}`)
        const buf = p.records
        if (!Buffer.isBuffer(buf)) continue
        bytes += buf.length
        let pos = 0
        // Whole batches only: the last one may be cut at the partition's max bytes.
        while (pos + RECORD_BATCH_OVERHEAD <= buf.length) {
          const batchEnd = pos + LOG_OVERHEAD + buf.readInt32BE(pos + BATCH_LENGTH_OFFSET)
          if (batchEnd > buf.length) break
          if (native.crc32c(buf.subarray(pos + ATTRIBUTES_OFFSET, batchEnd)) !== buf.readUInt32BE(pos + CRC_OFFSET)) throw new Error(`${topic}-${p.partitionIndex}: the batch at byte ${pos} fails its CRC check`)
          const base = Number(buf.readBigInt64BE(pos))
          const last = base + buf.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET)
          if (last >= next[p.partitionIndex]!) {
            counted += buf.readInt32BE(pos + RECORD_COUNT_OFFSET)
            next[p.partitionIndex] = last + 1
            progressed = true
          }
          pos = batchEnd
        }
      }
      if (!progressed && ++idleFetches > 50) throw new Error(`${topic} holds fewer than ${records} records (read ${counted})`)
    }
    const seconds = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    return { records: counted, bytes, fetches, recordsPerSec: counted / seconds, mbPerSec: bytes / 2 ** 20 / seconds, clientCpuUsPerRecord: (cpu.user + cpu.system) / counted }
  } finally {
    conn.close()
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [port, topic, partitions, records] = process.argv.slice(2)
  tuneMallocForClient()
  consumeBatches(Number(port), topic!, Number(partitions), Number(records)).then(
    (r) => {
      process.stdout.write(JSON.stringify(r) + '\n')
      process.exit(0)
    },
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
      process.exit(1)
    },
  )
}
