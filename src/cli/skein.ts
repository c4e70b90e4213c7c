#!/usr/bin/env node
// The `skein` command. Subcommands follow Kafka's tools; each has --help.
import { runBroker } from '../main.js'

const HELP = `Usage: skein <command> [options]

Commands:
  broker     Run a broker (what npm start runs); skein broker --help for its options

Run 'skein <command> --help' for a command's options.`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '-h' || command === '--help') {
    process.stdout.write(HELP + '\n')
    return command === undefined ? 1 : 0
  }
  if (command === 'broker') return runBroker(rest)
  process.stderr.write(`skein: unknown command '${command}' (see skein --help)\n`)
  return 1
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code
})
