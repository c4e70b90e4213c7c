// Where the benchmarks write their reports: bench/results/ in the source tree (beside the code that writes
// them, not under dist/, so a rerun replaces the committed report in place).
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** bench/results/ of the repository; this module runs from dist/bench/lib/, three levels below the root. */
export const BENCH_RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bench', 'results')
