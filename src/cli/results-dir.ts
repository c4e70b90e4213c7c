// Where skein commands put the files they write unasked (a chart, a report): a results/ folder under the
// current directory, so that nothing lands beside the user's own files (in this repository the root stays
// clean: /results/ is git-ignored). A path the user gives explicitly is used as given.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

export const RESULTS_DIR = 'results'

/** results/NAME, relative to the current directory. */
export function defaultResultPath(name: string): string {
  return join(RESULTS_DIR, name)
}

/** Writes a result file, creating its folder first (results/ on a first run, or the folder of a given path). */
export function writeResultFile(path: string, data: string | Buffer): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, data)
}
