// What every client command shares: the --bootstrap-server option, client options from --command-config
// style k=v lists, printing tables the way Kafka's tools do, and turning any failure into one line on
// stderr with exit code 1 (no stack traces: a tool's errors are messages for its user).
//
// Timeouts are Kafka's client defaults: request.timeout.ms 30 s for one answer, default.api.timeout.ms
// 60 s for one operation with its retries, both settable with the tools' property options.
import { readFileSync } from 'node:fs'
import { errorName } from '../domain/errors.js'
import { ConnectionError, KafkaError, NotKafkaBrokerError, TimeoutError } from '../client/errors.js'
import { DEFAULT_API_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, type ClientOptions } from '../client/cluster-connections.js'
import { helpText, parseArgs, parseKeyValues, UsageError, type CommandSpec, type OptionSpec, type ParsedArgs } from './args.js'
import { applyAdminProps } from '../client/client-config.js'
import { parseProperties } from '../config/properties.js'

export const DEFAULT_BOOTSTRAP = '127.0.0.1:9092'

export const BOOTSTRAP_OPTION: OptionSpec = { name: 'bootstrap-server', value: 'HOST:PORT', desc: `Broker(s) to connect to, comma-separated (default ${DEFAULT_BOOTSTRAP})` }

/** kafka-topics, kafka-configs, kafka-consumer-groups: admin client configs from a file. */
export const COMMAND_CONFIG_OPTION: OptionSpec = { name: 'command-config', value: 'FILE', desc: 'A properties file of admin client configs (request.timeout.ms, default.api.timeout.ms, client.id, ...)' }
/** KIP-1147's spelling for one config on the command line. */
export const COMMAND_PROPERTY_OPTION: OptionSpec = { name: 'command-property', value: 'KEY=VALUE', repeat: true, desc: 'An admin client config; over --command-config' }

/**
 * Client options for a command: bootstrap servers, Kafka's timeouts, and few retries so that a broker that
 * is down fails fast.
 */
export function clientOptions(args: ParsedArgs, clientId: string): ClientOptions {
  return {
    bootstrapServers: args.get('bootstrap-server') ?? DEFAULT_BOOTSTRAP,
    clientId,
    connectTimeoutMs: 5000,
    requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
    apiTimeoutMs: DEFAULT_API_TIMEOUT_MS,
    retries: 3,
    retryBackoffMs: 100,
  }
}

/** Admin client options: clientOptions, then --command-config FILE, then --command-property k=v. */
export function adminOptions(args: ParsedArgs, command: string, clientId: string): ClientOptions {
  const opts = clientOptions(args, clientId)
  const props = new Map<string, string>()
  const file = args.get('command-config')
  if (file !== undefined) for (const [k, v] of readPropertiesFile(file)) props.set(k, v)
  for (const [k, v] of parseKeyValues(args.all('command-property'), '--command-property')) props.set(k, v)
  warnUnknown(command, applyAdminProps(opts, props))
  // --bootstrap-server wins over a bootstrap.servers in the file, as in Kafka's tools.
  if (args.has('bootstrap-server')) opts.bootstrapServers = args.get('bootstrap-server')!
  return opts
}

/** Reads a .properties file (--producer.config, --consumer.config). */
export function readPropertiesFile(path: string): Map<string, string> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  return parseProperties(text)
}

/** One line describing any error, for stderr. */
export function describeError(err: unknown): string {
  if (err instanceof KafkaError) {
    const name = errorName(err.code)
    const detail = err.message.startsWith(`${name}: `) ? err.message.slice(name.length + 2) : err.message === name ? '' : err.message
    return detail === '' ? name : `${detail} (${name})`
  }
  if (err instanceof ConnectionError || err instanceof TimeoutError || err instanceof NotKafkaBrokerError || err instanceof UsageError) return err.message
  if (err instanceof Error) return err.message.split('\n')[0]!
  return String(err)
}

/**
 * Runs a command: parses argv with spec, prints --help, and maps failures to `skein <cmd>: <message>`
 * on stderr and exit code 1.
 */
export async function runCommand(spec: CommandSpec, argv: readonly string[], body: (args: ParsedArgs) => Promise<number>): Promise<number> {
  let args: ParsedArgs
  try {
    args = parseArgs(spec, argv)
  } catch (err) {
    process.stderr.write(`${spec.command}: ${describeError(err)}\n`)
    return 1
  }
  if (args.has('help')) {
    process.stdout.write(helpText(spec))
    return 0
  }
  try {
    return await body(args)
  } catch (err) {
    process.stderr.write(`${spec.command}: ${describeError(err)}\n`)
    return 1
  }
}

/** Exactly one of the given actions (`--create`, `--list`, ...). */
export function oneAction(args: ParsedArgs, actions: readonly string[]): string {
  const given = args.given(actions)
  if (given.length !== 1) throw new UsageError(`give exactly one of ${actions.map((a) => `--${a}`).join(', ')}`)
  return given[0]!
}

/** Columns padded like Kafka's tools (each column as wide as its widest cell, plus a space). */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]! + 1))).join('').trimEnd()
  return [line(header), ...rows.map(line)].join('\n') + '\n'
}

export type { CommandSpec, ParsedArgs }

/** Kafka's warning for client configs a tool was given and does not know (client-config.ts returns their names). */
export function warnUnknown(command: string, names: readonly string[]): void {
  for (const n of names) process.stderr.write(`${command}: warning: the configuration '${n}' was supplied but isn't a known config\n`)
}
