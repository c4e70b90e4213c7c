// Bench-only broker entry for bench/validation.bench.ts: a broker process through the library API
// (startBroker, with the broker entry's malloc settings), with or without the record walk of produced
// batches. `--skip-record-walk` calls benchOnlySkipRecordWalk(true) before the broker starts, so the
// "unvalidated" broker is the same build with validation's walk switched off here, not by any setting of
// src/ (a broker started any other way always validates). The rest of the arguments are `--override
// key=value` items as for main.ts. Runs until SIGTERM/SIGINT, then stops the broker gracefully.
//
//   node dist/bench/lib/validation-broker.js [--skip-record-walk] --override listeners=... --override log.dirs=...
import { benchOnlySkipRecordWalk } from '../../src/protocol/records/validate.js'
import { createLogger, startBroker, tuneMallocForBroker } from '../../src/index.js'

function parseArgs(argv: readonly string[]): { skipRecordWalk: boolean; overrides: string[] } {
  let skipRecordWalk = false
  const overrides: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--skip-record-walk') skipRecordWalk = true
    else if (arg === '--override' && argv[i + 1] !== undefined) overrides.push(argv[++i]!)
    else throw new Error(`validation-broker: unknown argument '${arg}'`)
  }
  return { skipRecordWalk, overrides }
}

const { skipRecordWalk, overrides } = parseArgs(process.argv.slice(2))
// The same module instance the broker's produce path uses (dist/src/protocol/records/validate.js), so the
// switch reaches it; with io.threads=0 the partitions run on this thread. The bench checks the switch took
// effect with a batch only the record walk refuses.
benchOnlySkipRecordWalk(skipRecordWalk)
// As main.ts does for a broker process, so both variants run with the real broker's allocator settings.
tuneMallocForBroker()
const broker = await startBroker({ overrides, logger: createLogger() })
let stopping = false
const stop = (): void => {
  if (stopping) return
  stopping = true
  broker.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`validation-broker: unclean stop: ${(err as Error).message}\n`)
      process.exit(1)
    },
  )
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
