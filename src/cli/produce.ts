// `skein produce`: kafka-console-producer. One record per line of stdin (or of --file files), with
// Kafka's LineMessageReader properties: parse.key / key.separator, parse.headers / headers.delimiter /
// headers.separator / headers.key.separator, null.marker, ignore.error. Prints what was written on exit.
// With a transactional.id the whole input is one transaction: committed at its end, aborted on an error
// or Ctrl-C.
import { createReadStream, statSync } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { Producer, type ProducerOptions } from '../client/producer.js'
import type { Header } from '../client/record-batches.js'
import { parseCompression } from '../client/record-batches.js'
import { parseKeyValues, UsageError, type CommandSpec } from './args.js'
import { applyProducerProps, parseAcks } from '../client/client-config.js'
import { BOOTSTRAP_OPTION, clientOptions, describeError, readPropertiesFile, runCommand, warnUnknown } from './common.js'
import { PRODUCE_SCHEMA_OPTIONS, takeSchemaProperties, valueEncoder } from './schema-values.js'

const SPEC: CommandSpec = {
  command: 'skein produce',
  usage: 'skein produce --topic TOPIC [--bootstrap-server HOST:PORT] [options] [< lines]',
  summary: 'Console producer (kafka-console-producer): one record per input line.',
  options: [
    BOOTSTRAP_OPTION,
    { name: 'topic', value: 'TOPIC', desc: 'Topic to write to (required)' },
    { name: 'partition', value: 'P', desc: 'Write every record to this partition (default: key hash, or sticky for keyless records)' },
    { name: 'file', value: 'FILE', repeat: true, desc: 'Read lines from FILE instead of stdin' },
    { name: 'property', value: 'KEY=VALUE', repeat: true, desc: 'Line reader property: parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator, null.marker, ignore.error' },
    { name: 'compression-type', value: 'CODEC', aliases: ['compression-codec'], desc: 'none, gzip, snappy, lz4 or zstd (default none)' },
    { name: 'acks', value: 'ACKS', aliases: ['request-required-acks'], desc: '0, 1 or -1/all (default -1)' },
    { name: 'batch-size', value: 'BYTES', desc: 'batch.size (default 16384)' },
    { name: 'linger-ms', value: 'MS', aliases: ['timeout'], desc: 'linger.ms (default 5)' },
    { name: 'sync', desc: 'Wait for each record to be acknowledged before the next' },
    { name: 'producer-property', value: 'KEY=VALUE', repeat: true, aliases: ['command-property'], desc: 'A Kafka producer config (acks, linger.ms, compression.type, enable.idempotence, transactional.id, request.timeout.ms, ...); over --producer.config' },
    { name: 'producer.config', value: 'FILE', aliases: ['command-config'], desc: 'A properties file of producer configs' },
    ...PRODUCE_SCHEMA_OPTIONS,
  ],
  notes: `Line format: [headers<headers.delimiter>][key<key.separator>]value

The producer is idempotent by default (enable.idempotence, as in Kafka: with acks=all, retries are never
written twice). With --producer-property transactional.id=ID the whole input is one transaction,
committed at the end of the input and aborted on an error or Ctrl-C (keep it shorter than
transaction.timeout.ms, default 60000, or the broker aborts it).

With --schema-registry-url each value is JSON (Avro's JSON encoding for Avro schemas), written in the
Schema Registry wire format; the schema is registered under <topic>-value unless --value-schema-id names
one (Confluent's kafka-avro-console-producer; its --property schema.registry.url, value.schema,
value.schema.file and value.schema.id are accepted too). A value that does not fit the schema stops the
input with an error; records before it are written.

Examples:
  printf 'k1:hello\\nk2:world\\n' | skein produce --topic demo --property parse.key=true --property key.separator=:
  echo '{"amount":3}' | skein produce --topic orders --schema-registry-url http://127.0.0.1:8081 \\
    --value-schema '{"type":"record","name":"Order","fields":[{"name":"amount","type":"int"}]}'`,
}

interface LineReader {
  parseKey: boolean
  keySeparator: string
  parseHeaders: boolean
  headersDelimiter: string
  headersSeparator: string
  headersKeySeparator: string
  nullMarker: string | null
  ignoreError: boolean
}

const READER_PROPS = new Set(['parse.key', 'key.separator', 'parse.headers', 'headers.delimiter', 'headers.separator', 'headers.key.separator', 'null.marker', 'ignore.error'])

function lineReader(props: ReadonlyMap<string, string>): LineReader {
  for (const k of props.keys()) if (!READER_PROPS.has(k)) throw new UsageError(`unknown --property '${k}' (known: ${[...READER_PROPS].join(', ')})`)
  const flag = (k: string): boolean => {
    const v = props.get(k)
    if (v === undefined) return false
    if (v.toLowerCase() !== 'true' && v.toLowerCase() !== 'false') throw new UsageError(`--property ${k}=${v}: expected true or false`)
    return v.toLowerCase() === 'true'
  }
  const r: LineReader = {
    parseKey: flag('parse.key'),
    keySeparator: props.get('key.separator') ?? '\t',
    parseHeaders: flag('parse.headers'),
    headersDelimiter: props.get('headers.delimiter') ?? '\t',
    headersSeparator: props.get('headers.separator') ?? ',',
    headersKeySeparator: props.get('headers.key.separator') ?? ':',
    nullMarker: props.get('null.marker') ?? null,
    ignoreError: flag('ignore.error'),
  }
  for (const [k, v] of [['key.separator', r.keySeparator], ['headers.delimiter', r.headersDelimiter], ['headers.separator', r.headersSeparator], ['headers.key.separator', r.headersKeySeparator]] as const) {
    if (v === '') throw new UsageError(`--property ${k} must not be empty`)
  }
  return r
}

export interface ParsedLine {
  key: Buffer | null
  value: Buffer | null
  headers: Header[] | undefined
}

/** One input line as a record (Kafka's LineMessageReader rules). Throws UsageError on a malformed line. */
export function parseLine(line: string, r: LineReader, lineNumber: number): ParsedLine {
  const bytesOrNull = (s: string): Buffer | null => (r.nullMarker !== null && s === r.nullMarker ? null : Buffer.from(s))
  let rest = line
  let headers: Header[] | undefined
  if (r.parseHeaders) {
    const at = rest.indexOf(r.headersDelimiter)
    if (at < 0) {
      if (!r.ignoreError) throw new UsageError(`no headers delimiter found on line ${lineNumber}: '${line}'`)
    } else {
      const text = rest.slice(0, at)
      rest = rest.slice(at + r.headersDelimiter.length)
      headers = text === '' ? [] : text.split(r.headersSeparator).map((h) => {
        const k = h.indexOf(r.headersKeySeparator)
        if (k < 0) return { key: h, value: null }
        return { key: h.slice(0, k), value: bytesOrNull(h.slice(k + r.headersKeySeparator.length)) }
      })
    }
  }
  let key: Buffer | null = null
  if (r.parseKey) {
    const at = rest.indexOf(r.keySeparator)
    if (at < 0) {
      if (!r.ignoreError) throw new UsageError(`no key separator found on line ${lineNumber}: '${line}'`)
    } else {
      key = bytesOrNull(rest.slice(0, at))
      rest = rest.slice(at + r.keySeparator.length)
    }
  }
  return { key, value: bytesOrNull(rest), headers }
}

export function runProduce(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const topic = args.require('topic')
    const lineProps = parseKeyValues(args.all('property'), '--property')
    const encode = valueEncoder(args, takeSchemaProperties(lineProps))
    const reader = lineReader(lineProps)
    const opts: ProducerOptions = { ...clientOptions(args, 'skein-console-producer'), maxBlockMs: 10000 }
    const props = new Map<string, string>()
    const configFile = args.get('producer.config')
    if (configFile !== undefined) for (const [k, v] of readPropertiesFile(configFile)) props.set(k, v)
    for (const [k, v] of parseKeyValues(args.all('producer-property'), '--producer-property')) props.set(k, v)
    warnUnknown('skein produce', applyProducerProps(opts, props))
    if (args.has('compression-type')) opts.compression = parseCompression(args.get('compression-type')!)
    if (args.has('acks')) opts.acks = parseAcks(args.get('acks')!)
    if (args.has('batch-size')) opts.batchSize = args.int('batch-size', { min: 1 })
    if (args.has('linger-ms')) opts.lingerMs = args.int('linger-ms', { min: 0 })
    const partition = args.int('partition', { min: 0 })
    const sync = args.has('sync')

    const producer = new Producer(opts)
    const perPartition = new Map<number, number>()
    let written = 0
    let failed = 0
    let firstError: Error | null = null
    let stopping = false
    const onSignal = (): void => {
      stopping = true
    }
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    const transactional = opts.transactionalId != null
    let committed = false
    try {
      const info = await producer.topicInfo(topic)
      if (partition !== undefined && partition >= info.partitions.length) throw new UsageError(`--partition ${partition}: topic '${topic}' has ${info.partitions.length} partitions`)
      if (transactional) {
        await producer.initTransactions()
        producer.beginTransaction()
      }
      const onAck = (err: Error | null, meta: { partition: number } | null): void => {
        if (err !== null) {
          failed++
          firstError ??= err
          return
        }
        written++
        perPartition.set(meta!.partition, (perPartition.get(meta!.partition) ?? 0) + 1)
      }
      const sources: (() => Readable)[] = args.all('file').length > 0 ? args.all('file').map((f) => () => openFile(f)) : [() => process.stdin]
      let lineNumber = 0
      for (const open of sources) {
        const rl = createInterface({ input: open(), crlfDelay: Infinity })
        for await (const line of rl) {
          if (stopping) break
          lineNumber++
          const rec = parseLine(line, reader, lineNumber)
          if (encode !== null && rec.value !== null) {
            try {
              rec.value = await encode(topic, rec.value)
            } catch (err) {
              throw new Error(`line ${lineNumber}: ${describeError(err)}`)
            }
          }
          if (sync) {
            await new Promise<void>((resolve) => {
              producer.append(topic, partition, rec.key, rec.value, rec.headers, (err, meta) => {
                onAck(err, meta)
                resolve()
              })
            })
          } else {
            producer.append(topic, partition, rec.key, rec.value, rec.headers, onAck)
            if (!producer.hasCapacity) await producer.waitForCapacity()
          }
        }
        rl.close()
        if (stopping) break
      }
      await producer.flush()
      if (transactional && !stopping && failed === 0) {
        await producer.commitTransaction()
        committed = true
      }
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      // An uncommitted transaction is aborted by close().
      await producer.close().catch(() => {})
    }
    const parts = [...perPartition].sort((a, b) => a[0] - b[0]).map(([p, n]) => `partition ${p}: ${n}`)
    if (!transactional || committed) process.stderr.write(`Produced ${written} record${written === 1 ? '' : 's'} to topic ${topic}${parts.length > 0 ? ` (${parts.join(', ')})` : ''}${committed ? ' in one transaction' : ''}.\n`)
    if (failed > 0) process.stderr.write(`skein produce: ${failed} record${failed === 1 ? '' : 's'} could not be written: ${describeError(firstError)}\n`)
    if (transactional && !committed) {
      process.stderr.write(`skein produce: the transaction was aborted${stopping ? ' (interrupted)' : ''}: none of its ${written + failed} record${written + failed === 1 ? '' : 's'} will be visible to read_committed consumers.\n`)
      return 1
    }
    return failed > 0 ? 1 : 0
  })
}

function openFile(path: string): Readable {
  try {
    if (!statSync(path).isFile()) throw new UsageError(`--file ${path} is not a file`)
  } catch (err) {
    if (err instanceof UsageError) throw err
    throw new UsageError(`cannot read --file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  const s = createReadStream(path)
  s.on('error', () => {})
  return s
}
