// `skein perf produce` and `skein perf consume`: kafka-producer-perf-test and kafka-consumer-perf-test.
// Produce sends --num-records records of --record-size bytes as fast as allowed (--throughput records/s,
// -1 = unlimited) and measures each record's latency from send to acknowledgement (the send time is a
// clock reading shared by up to SEND_CLOCK_EVERY consecutive appends, see there). Consume reads records
// from the start of the topic and measures throughput and Fetch latency. Both print a line per
// --reporting-interval (a progress bar instead on a terminal) and a summary; --json prints one JSON object.
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { Consumer, type ConsumerOptions } from '../client/consumer.js'
import { Producer, type BatchDelivery, type ProducerOptions } from '../client/producer.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { parseKeyValues, UsageError, type CommandSpec } from './args.js'
import { applyConsumerProps, applyProducerProps } from '../client/client-config.js'
import { BOOTSTRAP_OPTION, clientOptions, describeError, readPropertiesFile, runCommand, warnUnknown } from './common.js'
import { LatencyRecorder, MB, progressBar, round, summarize, type PerfSummary } from './stats.js'

const PRODUCE_SPEC: CommandSpec = {
  command: 'skein perf produce',
  usage: 'skein perf produce --topic TOPIC --num-records N --record-size BYTES --throughput N|-1 [--producer-props k=v ...]',
  summary: 'Producer throughput and latency test (kafka-producer-perf-test).',
  options: [
    BOOTSTRAP_OPTION,
    { name: 'topic', value: 'TOPIC', desc: 'Topic to write to (required; auto-created when the broker allows it)' },
    { name: 'num-records', value: 'N', desc: 'Records to send (required)' },
    { name: 'record-size', value: 'BYTES', desc: 'Value size of each record (required)' },
    { name: 'throughput', value: 'N', desc: 'Records per second at most; -1 = unlimited (required)' },
    { name: 'producer-props', value: 'K=V', repeat: true, aliases: ['command-property'], desc: 'Producer configs (acks, batch.size, linger.ms, compression.type, enable.idempotence, transactional.id, ...); more k=v may follow. Defaults: acks=all, batch.size=65536, linger.ms=5' },
    { name: 'producer.config', value: 'FILE', aliases: ['command-config'], desc: 'A properties file of producer configs' },
    { name: 'transactional-id', value: 'ID', desc: 'Send in transactions with this transactional.id (takes precedence over one in the producer configs)' },
    { name: 'transaction-duration-ms', value: 'MS', desc: 'Commit the transaction once it is MS old and begin the next (default 3000 when a transactional id is given; giving it alone turns transactions on, with the id performance-producer-<random uuid>)' },
    { name: 'reporting-interval', value: 'MS', desc: 'Interval between progress lines (default 5000)' },
    { name: 'json', desc: 'Print one JSON object with the results (nothing else on stdout)' },
  ],
  notes: `Transactions (as kafka-producer-perf-test): with a transactional id (--transactional-id, or
transactional.id in the producer configs) or --transaction-duration-ms, the records are sent in
transactions, each committed once it is --transaction-duration-ms old (checked every 16 records) and at
the end; the commits' time counts in the throughput and the records' latency.

Latency is measured per record from its send to its acknowledgement. To keep the clock off the
per-record path, the send time is one clock reading shared by up to 16 consecutive records (and read
again after every pause), taken before the first of them: a latency is overstated by at most the time
to append 15 records (microseconds), never understated. The records' timestamps (CreateTime) come from
the same shared reading.

Example:
  skein perf produce --topic perf --num-records 1000000 --record-size 100 --throughput -1 --producer-props acks=1 linger.ms=5 batch.size=65536`,
}

const CONSUME_SPEC: CommandSpec = {
  command: 'skein perf consume',
  usage: 'skein perf consume --topic TOPIC --messages N [--group GROUP] [options]',
  summary: 'Consumer throughput test (kafka-consumer-perf-test): reads N records from the start of the topic.',
  options: [
    BOOTSTRAP_OPTION,
    { name: 'topic', value: 'TOPIC', desc: 'Topic to read (required)' },
    { name: 'messages', value: 'N', aliases: ['num-records'], desc: 'Records to read (required)' },
    { name: 'group', value: 'GROUP', desc: 'Read as a member of this group (default: assign every partition, no group)' },
    { name: 'fetch-size', value: 'BYTES', desc: 'max.partition.fetch.bytes (default 1048576)' },
    { name: 'timeout', value: 'MS', desc: 'Give up when no record arrives for MS (default 10000)' },
    { name: 'consumer.config', value: 'FILE', aliases: ['command-config'], desc: 'A properties file of consumer configs' },
    { name: 'consumer-props', value: 'K=V', repeat: true, aliases: ['command-property'], desc: 'Consumer configs (request.timeout.ms, default.api.timeout.ms, fetch.max.bytes, ...); over --consumer.config' },
    { name: 'reporting-interval', value: 'MS', desc: 'Interval between progress lines (default 5000)' },
    { name: 'json', desc: 'Print one JSON object with the results (nothing else on stdout)' },
  ],
}

const HELP = `Usage: skein perf produce|consume [options]

  produce   Producer throughput and latency (kafka-producer-perf-test)
  consume   Consumer throughput (kafka-consumer-perf-test)

Run 'skein perf produce --help' or 'skein perf consume --help' for options.
`

export function runPerf(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv
  if (sub === 'produce') return perfProduce(rest)
  if (sub === 'consume') return perfConsume(rest)
  if (sub === undefined || sub === '--help' || sub === '-h') {
    process.stdout.write(HELP)
    return Promise.resolve(sub === undefined ? 1 : 0)
  }
  process.stderr.write(`skein perf: unknown test '${sub}' (produce or consume)\n`)
  return Promise.resolve(1)
}

function latencyText(s: PerfSummary): string {
  const l = s.latencyMs
  return `${l.avg.toFixed(2)} ms avg latency, ${l.max.toFixed(2)} ms max latency, ${l.p50.toFixed(2)} ms 50th, ${l.p95.toFixed(2)} ms 95th, ${l.p99.toFixed(2)} ms 99th, ${l.p999.toFixed(2)} ms 99.9th`
}

function reportLine(s: PerfSummary, verb: string): string {
  return `${s.records} records ${verb}, ${s.recordsPerSec.toFixed(1)} records/sec (${s.mbPerSec.toFixed(2)} MB/sec), ${latencyText(s)}.`
}

/**
 * Records that share one send-time clock reading (performance.now() for the latency, Date.now() for the
 * record's CreateTime). A clock call per record was 6-10% of the producer's CPU; one reading per 16
 * appends (each well under a microsecond) bounds the error to microseconds against latencies of
 * milliseconds, and only ever overstates latencies (the reading precedes the appends).
 */
const SEND_CLOCK_EVERY = 16

const yieldToIo = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function perfProduce(argv: readonly string[]): Promise<number> {
  return runCommand(PRODUCE_SPEC, argv, async (args) => {
    const topic = args.require('topic')
    const numRecords = args.int('num-records', { min: 1 })
    const recordSize = args.int('record-size', { min: 0, max: 100 * MB })
    const throughput = args.int('throughput', { min: -1 })
    if (numRecords === undefined) throw new UsageError('--num-records is required')
    if (recordSize === undefined) throw new UsageError('--record-size is required')
    if (throughput === undefined) throw new UsageError('--throughput is required (-1 for no limit)')
    if (throughput === 0) throw new UsageError('--throughput must be positive or -1')
    const interval = args.int('reporting-interval', { min: 100 }) ?? 5000
    const json = args.has('json')
    const opts: ProducerOptions = { ...clientOptions(args, 'skein-producer-perf'), lingerMs: 5, batchSize: 65536, maxBlockMs: 10000 }
    const props = new Map<string, string>()
    const configFile = args.get('producer.config')
    if (configFile !== undefined) for (const [k, v] of readPropertiesFile(configFile)) props.set(k, v)
    // Kafka's tool takes `--producer-props a=1 b=2`: the k=v words after it arrive as positionals.
    const extra = args.positionals.filter((p) => p.includes('='))
    if (extra.length !== args.positionals.length) throw new UsageError(`unexpected argument '${args.positionals.find((p) => !p.includes('='))}'`)
    for (const [k, v] of parseKeyValues([...args.all('producer-props'), ...extra], '--producer-props')) props.set(k, v)
    warnUnknown('skein perf produce', applyProducerProps(opts, props))
    if (args.has('transactional-id')) {
      const id = args.get('transactional-id')!.trim()
      if (id === '') throw new UsageError('--transactional-id must not be empty')
      opts.transactionalId = id
    }
    const durationArg = args.int('transaction-duration-ms', { min: 1 })
    if (durationArg !== undefined && opts.transactionalId == null) opts.transactionalId = `performance-producer-${randomUUID()}`
    const transactional = opts.transactionalId != null
    const transactionDurationMs = durationArg ?? 3000

    const producer = new Producer(opts)
    const payload = Buffer.allocUnsafe(recordSize)
    for (let i = 0; i < recordSize; i++) payload[i] = 65 + Math.floor(Math.random() * 26)
    const total = new LatencyRecorder(numRecords)
    // The per-interval window only feeds the non-JSON progress lines.
    const window = json ? null : new LatencyRecorder(numRecords)
    let acked = 0
    let failed = 0
    let transactions = 0
    let firstError: unknown = null
    let windowStart = performance.now()
    let windowAcked = 0
    const tty = process.stdout.isTTY === true && !json
    // One call per acknowledged batch: one clock reading, then a loop over its records' send times (ctx).
    const onBatch = (err: Error | null, d: BatchDelivery): void => {
      const n = d.to - d.from
      if (err !== null) {
        failed += n
        firstError ??= err
        return
      }
      const now = performance.now()
      const sentAt = d.ctxs
      for (let k = d.from; k < d.to; k++) total.record(now - sentAt[k]!)
      if (window !== null) for (let k = d.from; k < d.to; k++) window.record(now - sentAt[k]!)
      acked += n
      windowAcked += n
    }
    let stopping = false
    const onSignal = (): void => {
      stopping = true
    }
    process.once('SIGINT', onSignal)
    let start = 0
    const reporter = setInterval(
      () => {
        const now = performance.now()
        if (tty) {
          const s = summarize(acked, acked * recordSize, now - start, total)
          process.stdout.write(progressBar(acked, numRecords, `${s.recordsPerSec.toFixed(0)} rec/s ${s.mbPerSec.toFixed(2)} MB/s p99 ${s.latencyMs.p99.toFixed(1)} ms`))
        } else if (!json && now - windowStart >= interval) {
          process.stdout.write(reportLine(summarize(windowAcked, windowAcked * recordSize, now - windowStart, window!), 'sent') + '\n')
          window!.reset()
          windowAcked = 0
          windowStart = now
        }
      },
      tty ? 200 : Math.min(interval, 1000),
    )
    try {
      await producer.topicInfo(topic)
      if (transactional) await producer.initTransactions()
      start = performance.now()
      windowStart = start
      let sentAt = start
      let timestamp = Date.now()
      let transactionStart = start
      if (transactional) producer.beginTransaction()
      for (let i = 0; i < numRecords && !stopping; i++) {
        if (i % SEND_CLOCK_EVERY === 0) {
          sentAt = performance.now()
          timestamp = Date.now()
          // Transactions are timed on the shared clock reading: no work per record.
          if (transactional && sentAt - transactionStart >= transactionDurationMs) {
            await producer.commitTransaction()
            transactions++
            producer.beginTransaction()
            transactionStart = sentAt = performance.now()
            timestamp = Date.now()
          }
        }
        producer.appendBatched(topic, undefined, null, payload, undefined, onBatch, sentAt, timestamp)
        let paused = false
        if (throughput > 0) {
          const ahead = ((i + 1) * 1000) / throughput - (performance.now() - start)
          if (ahead > 2) {
            await sleep(ahead)
            paused = true
          }
        }
        if ((i & 1023) === 1023) {
          await yieldToIo()
          paused = true
        }
        if (!producer.hasCapacity) {
          await producer.waitForCapacity()
          paused = true
        }
        // After a pause the shared reading is stale: the next record reads the clocks again.
        if (paused) {
          sentAt = performance.now()
          timestamp = Date.now()
        }
      }
      if (transactional) {
        await producer.commitTransaction()
        transactions++
      }
      await producer.flush()
    } finally {
      clearInterval(reporter)
      process.off('SIGINT', onSignal)
      // A transaction left open by an error is aborted by close().
      await producer.close().catch(() => {})
    }
    const elapsed = performance.now() - start
    const s = summarize(acked, acked * recordSize, elapsed, total)
    if (tty) process.stdout.write(progressBar(acked, numRecords, '') + '\n')
    if (json) process.stdout.write(JSON.stringify({ test: 'produce', topic, recordSize, throughputLimit: throughput, failed, ...(transactional ? { transactionsCommitted: transactions } : {}), ...s }) + '\n')
    else process.stdout.write(reportLine(s, 'sent') + '\n')
    if (failed > 0) {
      process.stderr.write(`skein perf produce: ${failed} records failed: ${describeError(firstError)}\n`)
      return 1
    }
    return 0
  })
}

function perfConsume(argv: readonly string[]): Promise<number> {
  return runCommand(CONSUME_SPEC, argv, async (args) => {
    const topic = args.require('topic')
    const messages = args.int('messages', { min: 1 })
    if (messages === undefined) throw new UsageError('--messages is required')
    const timeout = args.int('timeout', { min: 1 }) ?? 10000
    const interval = args.int('reporting-interval', { min: 100 }) ?? 5000
    const json = args.has('json')
    const opts: ConsumerOptions = { ...clientOptions(args, 'skein-consumer-perf'), autoOffsetReset: 'earliest', fetchMaxWaitMs: 100 }
    const props = new Map<string, string>()
    const configFile = args.get('consumer.config')
    if (configFile !== undefined) for (const [k, v] of readPropertiesFile(configFile)) props.set(k, v)
    for (const [k, v] of parseKeyValues(args.all('consumer-props'), '--consumer-props')) props.set(k, v)
    warnUnknown('skein perf consume', applyConsumerProps(opts, props))
    if (args.has('fetch-size')) opts.maxPartitionFetchBytes = args.int('fetch-size', { min: 1 })
    if (args.has('group')) opts.groupId = args.get('group')

    const consumer = new Consumer(opts)
    const fetchLatency = new LatencyRecorder(100_000, 1)
    let records = 0
    let bytes = 0
    const tty = process.stdout.isTTY === true && !json
    let start = 0
    let windowStart = 0
    let windowRecords = 0
    let windowBytes = 0
    let stopping = false
    const onSignal = (): void => {
      stopping = true
    }
    process.once('SIGINT', onSignal)
    try {
      const info = await consumer.cluster.topic(topic)
      if (opts.groupId !== undefined) consumer.subscribe([topic])
      else {
        consumer.assign(info.partitions.map((p) => ({ topic, partition: p.partition })))
        for (const p of info.partitions) consumer.seek(topic, p.partition, 'earliest')
      }
      start = performance.now()
      windowStart = start
      let lastProgress = start
      let lastDraw = 0
      while (records < messages && !stopping) {
        const t0 = performance.now()
        const batch = await consumer.poll(100)
        const t1 = performance.now()
        if (batch.length > 0) {
          fetchLatency.record(t1 - t0)
          lastProgress = t1
          for (const r of batch) {
            bytes += (r.value?.length ?? 0) + (r.key?.length ?? 0)
            windowBytes += (r.value?.length ?? 0) + (r.key?.length ?? 0)
          }
          records += batch.length
          windowRecords += batch.length
        } else if (t1 - lastProgress > timeout) {
          throw new KafkaError(ErrorCode.REQUEST_TIMED_OUT, `no record for ${timeout} ms after ${records} of ${messages} records (is the topic that full?)`)
        }
        if (tty && t1 - lastDraw > 200) {
          const s = summarize(records, bytes, t1 - start, fetchLatency)
          process.stdout.write(progressBar(Math.min(records, messages), messages, `${s.recordsPerSec.toFixed(0)} rec/s ${s.mbPerSec.toFixed(2)} MB/s`))
          lastDraw = t1
        } else if (!tty && !json && t1 - windowStart >= interval) {
          const w = summarize(windowRecords, windowBytes, t1 - windowStart, fetchLatency)
          process.stdout.write(`${w.records} records consumed, ${w.recordsPerSec.toFixed(1)} records/sec (${w.mbPerSec.toFixed(2)} MB/sec), fetch latency ${w.latencyMs.avg.toFixed(2)} ms avg\n`)
          windowStart = t1
          windowRecords = 0
          windowBytes = 0
        }
      }
    } finally {
      process.off('SIGINT', onSignal)
      await consumer.close().catch(() => {})
    }
    const s = summarize(records, bytes, performance.now() - start, fetchLatency)
    if (tty) process.stdout.write(progressBar(Math.min(records, messages), messages, '') + '\n')
    if (json) process.stdout.write(JSON.stringify({ test: 'consume', topic, ...s, fetchLatencyMs: s.latencyMs, latencyMs: undefined }) + '\n')
    else {
      const l = s.latencyMs
      process.stdout.write(
        `${s.records} records consumed, ${s.recordsPerSec.toFixed(1)} records/sec (${s.mbPerSec.toFixed(2)} MB/sec, ${round(s.bytes / MB).toFixed(2)} MB in ${(s.elapsedMs / 1000).toFixed(2)} s), fetch latency ${l.avg.toFixed(2)} ms avg, ${l.max.toFixed(2)} ms max, ${l.p50.toFixed(2)} ms 50th, ${l.p95.toFixed(2)} ms 95th, ${l.p99.toFixed(2)} ms 99th, ${l.p999.toFixed(2)} ms 99.9th.\n`,
      )
    }
    return 0
  })
}
