#!/usr/bin/env node
// `npm start`: runs one broker until SIGINT/SIGTERM. Kafka's start script conventions: a config file
// (config/server.properties) and `--override key=value` items applied on top of it.
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { tuneMallocForBroker } from './addon/malloc-tuning.js'
import { loadBrokerConfig } from './config/broker-config.js'
import { Broker } from './server/broker.js'
import { createLogger } from './observability/logger.js'

const HELP = `Usage: skein broker [--config FILE] [--override key=value ...]

Runs a Skein broker (Kafka protocol) until SIGINT or SIGTERM.

Options:
  --config FILE           Java .properties file with Kafka's broker config names
                          (default when run by npm start: config/server.properties)
  --override key=value    Set one config on top of the file (repeatable)
  -h, --help              Show this help

Defaults without a config file: listeners=PLAINTEXT://127.0.0.1:9092, log.dirs=./data.
The config reference is in README.md.`

export interface BrokerArgs {
  configFile?: string
  overrides: string[]
  help: boolean
}

export function parseBrokerArgs(argv: readonly string[]): BrokerArgs {
  const out: BrokerArgs = { overrides: [], help: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const next = (): string => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${arg} needs a value`)
      return v
    }
    if (arg === '-h' || arg === '--help') out.help = true
    else if (arg === '--config') out.configFile = next()
    else if (arg.startsWith('--config=')) out.configFile = arg.slice('--config='.length)
    else if (arg === '--override') out.overrides.push(next())
    else if (arg.startsWith('--override=')) out.overrides.push(arg.slice('--override='.length))
    else if (!arg.startsWith('-') && out.configFile === undefined) out.configFile = arg // kafka-server-start.sh style
    else throw new Error(`unknown argument '${arg}' (see --help)`)
  }
  return out
}

export async function runBroker(argv: readonly string[]): Promise<number> {
  let args: BrokerArgs
  try {
    args = parseBrokerArgs(argv)
  } catch (err) {
    process.stderr.write(`skein: ${(err as Error).message}\n`)
    return 1
  }
  if (args.help) {
    process.stdout.write(HELP + '\n')
    return 0
  }
  const log = createLogger()
  // A broker process receives every request into fresh socket-read buffers; keeping freed memory at the
  // heap top (up to 256 MiB) instead of trimming it saves re-faulting those pages on every read: 0.72x the
  // broker CPU per produced record in a side-by-side kcat run (src/addon/malloc-tuning.ts). Only the
  // server entry does this: a library user's process keeps its own malloc settings.
  tuneMallocForBroker()
  let broker: Broker
  try {
    const config = loadBrokerConfig({ file: args.configFile, overrides: args.overrides })
    broker = await Broker.start(config, { logger: log })
  } catch (err) {
    process.stderr.write(`skein: cannot start the broker: ${(err as Error).message}\n`)
    return 1
  }
  return new Promise<number>((resolve) => {
    let signalled = false
    const stop = (signal: string): void => {
      if (signalled) {
        log.warn({ signal }, 'second signal: exiting at once')
        process.exit(1)
      }
      signalled = true
      log.info({ signal }, 'stopping')
      broker.stop().then(
        () => resolve(0),
        (err: unknown) => {
          log.error({ err: (err as Error).message }, 'unclean shutdown')
          resolve(1)
        },
      )
    }
    process.on('SIGINT', () => stop('SIGINT'))
    process.on('SIGTERM', () => stop('SIGTERM'))
  })
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href
if (isMain) {
  runBroker(process.argv.slice(2)).then((code) => {
    process.exitCode = code
  })
}
