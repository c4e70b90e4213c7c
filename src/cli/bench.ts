// `skein bench`: measurements of this machine for Kafka workloads, without a broker: `disk` (the data
// directory's bandwidth and fsync rate) and `compression` (each codec and level on your own data).
import { runBenchCompression } from './bench-compression.js'
import { runBenchDisk } from './bench-disk.js'

const HELP = `Usage: skein bench disk|compression [options]

  disk          Sequential write/read bandwidth and fsync rate of a data directory
  compression   Ratio and MB/s per core of each codec and level on a file, in Kafka record batches

Run 'skein bench <benchmark> --help' for its options.
`

export function runBench(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv
  if (sub === 'disk') return runBenchDisk(rest)
  if (sub === 'compression') return runBenchCompression(rest)
  if (sub === undefined || sub === '--help' || sub === '-h') {
    process.stdout.write(HELP)
    return Promise.resolve(sub === undefined ? 1 : 0)
  }
  process.stderr.write(`skein bench: unknown benchmark '${sub}' (disk or compression)\n`)
  return Promise.resolve(1)
}
