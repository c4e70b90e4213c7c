// `skein consume`: kafka-console-consumer. Without --group it reads the topic's partitions directly
// (assign); with --group it joins the group (subscribe) and, as Kafka's console consumer with its
// consumer's auto commit, commits every auto.commit.interval.ms (5 s) the position of every assigned
// partition (so `skein groups --describe` shows a running member's lag, even before it printed anything),
// and once more on exit, including Ctrl-C. A commit never covers a record it did not print. Output follows Kafka's DefaultMessageFormatter (print.timestamp, print.partition, print.offset,
// print.headers, print.key, print.value, key.separator, ...) or one JSON object per record.
import { Consumer, type ConsumerOptions } from '../client/consumer.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, listOffsets, tpKey } from '../client/offsets.js'
import type { ConsumedRecord } from '../client/record-batches.js'
import { isRetriableError } from '../client/errors.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { parseKeyValues, parseIntArg, UsageError, type CommandSpec } from './args.js'
import { applyConsumerProps, parseIsolationLevel } from '../client/client-config.js'
import { BOOTSTRAP_OPTION, clientOptions, describeError, readPropertiesFile, runCommand, warnUnknown } from './common.js'
import { REGISTRY_URL_OPTION, takeSchemaProperties, valueDecoder } from './schema-values.js'

/** Commit failures that mean a rebalance moved the partitions: the next interval commits the new ones. */
const REBALANCE_ERRORS: ReadonlySet<number> = new Set([ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID])

const SPEC: CommandSpec = {
  command: 'skein consume',
  usage: 'skein consume --topic TOPIC [--bootstrap-server HOST:PORT] [options]',
  summary: 'Console consumer (kafka-console-consumer): prints records until --max-messages, --timeout-ms or Ctrl-C.',
  options: [
    BOOTSTRAP_OPTION,
    { name: 'topic', value: 'TOPIC', desc: 'Topic to read (required)' },
    { name: 'group', value: 'GROUP', desc: 'Consumer group to join; positions are committed every auto.commit.interval.ms (5000) and on exit (default: no group)' },
    { name: 'from-beginning', desc: 'Start at the earliest offset when there is no committed offset' },
    { name: 'partition', value: 'P', desc: 'Read only this partition' },
    { name: 'offset', value: 'OFFSET', desc: 'earliest, latest or an offset (needs --partition; default latest). An offset past the log end starts at the end, one before the log start at the start, and says so on stderr' },
    { name: 'max-messages', value: 'N', desc: 'Exit after N records' },
    { name: 'timeout-ms', value: 'MS', desc: 'Exit when no record arrives for MS milliseconds' },
    { name: 'isolation-level', value: 'LEVEL', desc: 'read_uncommitted (default) or read_committed' },
    { name: 'property', value: 'KEY=VALUE', repeat: true, desc: 'Formatter property: print.key, print.offset, print.partition, print.timestamp, print.headers, print.value, key.separator, line.separator, headers.separator, null.literal' },
    { name: 'formatter', value: 'NAME', desc: "'default' (Kafka's DefaultMessageFormatter) or 'json' (one object per line)" },
    { name: 'consumer-property', value: 'KEY=VALUE', repeat: true, aliases: ['command-property'], desc: 'A Kafka consumer config (request.timeout.ms, default.api.timeout.ms, auto.commit.interval.ms, ...); over --consumer.config' },
    { name: 'consumer.config', value: 'FILE', aliases: ['command-config'], desc: 'A properties file of consumer configs' },
    { ...REGISTRY_URL_OPTION, desc: 'Schema Registry: print values in its wire format as JSON, decoded with the schema their id names (Avro in its JSON encoding)' },
  ],
  notes: `Examples:
  skein consume --topic demo --from-beginning --property print.key=true --property print.offset=true
  skein consume --topic demo --group demo-readers --max-messages 10 --formatter json`,
}

interface Formatter {
  (r: ConsumedRecord): string
}

const FORMAT_PROPS = new Set(['print.key', 'print.offset', 'print.partition', 'print.timestamp', 'print.headers', 'print.value', 'key.separator', 'line.separator', 'headers.separator', 'null.literal'])

/** decodedValues: values are JSON text decoded from the registry wire format (the json formatter nests them). */
export function makeFormatter(kind: string, props: ReadonlyMap<string, string>, decodedValues = false): Formatter {
  for (const k of props.keys()) if (!FORMAT_PROPS.has(k)) throw new UsageError(`unknown --property '${k}' (known: ${[...FORMAT_PROPS].join(', ')})`)
  const flag = (k: string, dflt: boolean): boolean => {
    const v = props.get(k)
    if (v === undefined) return dflt
    if (v.toLowerCase() !== 'true' && v.toLowerCase() !== 'false') throw new UsageError(`--property ${k}=${v}: expected true or false`)
    return v.toLowerCase() === 'true'
  }
  const lineSep = unescape(props.get('line.separator') ?? '\n')
  if (kind === 'json' || kind.endsWith('JsonMessageFormatter')) {
    return (r) =>
      JSON.stringify({
        topic: r.topic,
        partition: r.partition,
        offset: r.offset,
        timestamp: r.timestamp,
        timestampType: r.timestampType,
        key: r.key === null ? null : r.key.toString(),
        value: r.value === null ? null : decodedValues ? JSON.parse(r.value.toString()) : r.value.toString(),
        headers: Object.fromEntries(r.headers.map((h) => [h.key, h.value === null ? null : h.value.toString()])),
      }) + lineSep
  }
  if (kind !== 'default' && !kind.endsWith('DefaultMessageFormatter')) throw new UsageError(`unknown --formatter '${kind}' (default or json)`)
  const printKey = flag('print.key', false)
  const printOffset = flag('print.offset', false)
  const printPartition = flag('print.partition', false)
  const printTimestamp = flag('print.timestamp', false)
  const printHeaders = flag('print.headers', false)
  const printValue = flag('print.value', true)
  const sep = unescape(props.get('key.separator') ?? '\t')
  const headersSep = unescape(props.get('headers.separator') ?? ',')
  const nullLiteral = props.get('null.literal') ?? 'null'
  const text = (b: Buffer | null): string => (b === null ? nullLiteral : b.toString())
  return (r) => {
    let s = ''
    if (printTimestamp) s += `${r.timestampType}:${r.timestamp}${sep}`
    if (printPartition) s += `Partition:${r.partition}${sep}`
    if (printOffset) s += `Offset:${r.offset}${sep}`
    if (printHeaders) s += (r.headers.length === 0 ? 'NO_HEADERS' : r.headers.map((h) => `${h.key}:${text(h.value)}`).join(headersSep)) + sep
    if (printKey) s += text(r.key) + (printValue ? sep : '')
    if (printValue) s += text(r.value)
    return s + lineSep
  }
}

/** Shell-style escapes in separators (--property key.separator='\t' arrives as backslash-t). */
function unescape(s: string): string {
  return s.replace(/\\([tnr\\])/g, (_, c: string) => ({ t: '\t', n: '\n', r: '\r', '\\': '\\' })[c]!)
}

export function runConsume(argv: readonly string[]): Promise<number> {
  return runCommand(SPEC, argv, async (args) => {
    const topic = args.require('topic')
    const formatProps = parseKeyValues(args.all('property'), '--property')
    const schemaProps = takeSchemaProperties(formatProps)
    const decode = valueDecoder(args.get('schema-registry-url') ?? schemaProps.get('schema-registry-url'))
    const format = makeFormatter(args.get('formatter') ?? 'default', formatProps, decode !== null)
    const maxMessages = args.int('max-messages', { min: 1 })
    const timeoutMs = args.int('timeout-ms', { min: 0 })
    const partition = args.int('partition', { min: 0 })
    const offsetArg = args.get('offset')
    if (offsetArg !== undefined && partition === undefined) throw new UsageError('--offset needs --partition')
    if (offsetArg !== undefined && args.has('from-beginning')) throw new UsageError('--offset and --from-beginning cannot be used together')
    let startOffset: number | 'earliest' | 'latest' | undefined
    if (offsetArg !== undefined) startOffset = offsetArg === 'earliest' || offsetArg === 'latest' ? offsetArg : parseIntArg('offset', offsetArg, { min: 0 })

    const opts: ConsumerOptions = { ...clientOptions(args, 'skein-console-consumer'), autoOffsetReset: args.has('from-beginning') ? 'earliest' : 'latest' }
    const props = new Map<string, string>()
    const configFile = args.get('consumer.config')
    if (configFile !== undefined) for (const [k, v] of readPropertiesFile(configFile)) props.set(k, v)
    for (const [k, v] of parseKeyValues(args.all('consumer-property'), '--consumer-property')) props.set(k, v)
    warnUnknown('skein consume', applyConsumerProps(opts, props))
    if (args.has('group')) opts.groupId = args.get('group')
    if (args.has('isolation-level')) opts.isolationLevel = parseIsolationLevel(args.get('isolation-level')!)
    // enable.auto.commit and auto.commit.interval.ms as the consumer configs say; the commits themselves
    // are made below, so that one never covers a fetched record that --max-messages left unprinted.
    const autoCommit = opts.groupId !== undefined && (opts.enableAutoCommit ?? true)
    const commitIntervalMs = opts.autoCommitIntervalMs ?? 5000
    opts.enableAutoCommit = false

    const consumer = new Consumer(opts)
    let stopping = false
    const onSignal = (): void => {
      stopping = true
    }
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    let count = 0
    // Partitions whose position moved past records that were fetched but not printed (--max-messages):
    // the first unprinted offset, which is what they commit.
    const unprinted = new Map<string, number>()
    let lastCommit = Date.now()
    /** Commits every assigned partition's position: poll hands out records up to it, all printed. */
    const commitPositions = async (): Promise<void> => {
      lastCommit = Date.now()
      if (!autoCommit || consumer.group === null) return
      const offsets = consumer.assignment().flatMap((tp) => {
        const offset = unprinted.get(tpKey(tp.topic, tp.partition)) ?? consumer.position(tp.topic, tp.partition)
        return offset === null ? [] : [{ ...tp, offset }]
      })
      if (offsets.length > 0) await consumer.commit(offsets)
    }
    /** A periodic commit that fails (a rebalance under way, the coordinator moving) is tried again next interval. */
    const commitNow = (): Promise<void> =>
      commitPositions().catch((err: unknown) => {
        if (!isRetriableError(err) && !(err instanceof KafkaError && REBALANCE_ERRORS.has(err.code))) process.stderr.write(`skein consume: warning: committing offsets failed: ${describeError(err)}\n`)
      })
    try {
      const info = await consumer.cluster.topic(topic)
      if (partition !== undefined) {
        if (partition >= info.partitions.length) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic '${topic}' has no partition ${partition} (it has ${info.partitions.length})`)
        consumer.assign([{ topic, partition }])
        if (typeof startOffset === 'number') consumer.seek(topic, partition, await startWithin(consumer, topic, partition, startOffset))
        else if (startOffset !== undefined) consumer.seek(topic, partition, startOffset)
        else if (opts.groupId === undefined) consumer.seek(topic, partition, args.has('from-beginning') ? 'earliest' : 'latest')
      } else if (opts.groupId !== undefined) {
        consumer.subscribe([topic])
      } else {
        consumer.assign(info.partitions.map((p) => ({ topic, partition: p.partition })))
        for (const p of info.partitions) consumer.seek(topic, p.partition, args.has('from-beginning') ? 'earliest' : 'latest')
      }
      let lastRecordAt = Date.now()
      outer: while (!stopping) {
        const wait = timeoutMs === undefined ? 500 : Math.max(0, Math.min(500, timeoutMs - (Date.now() - lastRecordAt)))
        const records = await consumer.poll(wait)
        if (records.length > 0) lastRecordAt = Date.now()
        let out = ''
        for (let i = 0; i < records.length; i++) {
          let r = records[i]!
          if (decode !== null && r.value !== null) {
            try {
              r = { ...r, value: await decode(r.topic, r.value) }
            } catch (err) {
              await write(out)
              throw new Error(`record ${r.topic}-${r.partition}@${r.offset}: ${describeError(err)}`)
            }
          }
          out += format(r)
          count++
          if (maxMessages !== undefined && count >= maxMessages) {
            for (const rest of records.slice(i + 1)) if (!unprinted.has(tpKey(rest.topic, rest.partition))) unprinted.set(tpKey(rest.topic, rest.partition), rest.offset)
            await write(out)
            break outer
          }
        }
        if (out !== '') await write(out)
        if (timeoutMs !== undefined && Date.now() - lastRecordAt >= timeoutMs) break
        if (Date.now() - lastCommit >= commitIntervalMs) await commitNow()
      }
      await commitPositions()
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      await consumer.close({ commit: false }).catch(() => {})
    }
    process.stderr.write(`Processed a total of ${count} messages\n`)
    return 0
  })
}

/**
 * An --offset outside the partition's log would be reset silently by the consumer (to the end, with
 * auto.offset.reset=latest); instead say where reading starts and why.
 */
async function startWithin(consumer: Consumer, topic: string, partition: number, offset: number): Promise<number> {
  const k = tpKey(topic, partition)
  const [start, end] = await Promise.all([EARLIEST_TIMESTAMP, LATEST_TIMESTAMP].map(async (timestamp) => (await listOffsets(consumer.cluster, [{ topic, partition, timestamp }])).get(k)?.offset))
  if (end !== undefined && offset > end) {
    process.stderr.write(`skein consume: offset ${offset} is past the end of partition ${topic}-${partition} (log end ${end}); starting at ${end}\n`)
    return end
  }
  if (start !== undefined && offset < start) {
    process.stderr.write(`skein consume: offset ${offset} is before the start of partition ${topic}-${partition} (log start ${start}); starting at ${start}\n`)
    return start
  }
  return offset
}

function write(s: string): Promise<void> {
  return new Promise((resolve) => {
    if (process.stdout.write(s)) resolve()
    else process.stdout.once('drain', resolve)
  })
}
