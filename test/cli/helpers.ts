// Runs the compiled `skein` command as a subprocess (node dist/src/skein.js), as a user would.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT, run, type RunResult } from '../harness/index.js'

export const SKEIN_JS = join(REPO_ROOT, 'dist', 'src', 'skein.js')

export interface SkeinResult extends RunResult {
  out: string
}

/** `cwd` matters to commands that write files (results/ under it by default). */
export async function skein(args: string[], opts: { input?: string | Buffer; timeoutMs?: number; cwd?: string } = {}): Promise<SkeinResult> {
  if (!existsSync(SKEIN_JS)) throw new Error(`${SKEIN_JS} is missing: run npx tsc -p tsconfig.json first`)
  const r = await run(process.execPath, [SKEIN_JS, ...args], { input: opts.input, timeoutMs: opts.timeoutMs ?? 30000, cwd: opts.cwd })
  return { ...r, out: r.stdout.toString() }
}

/** stderr must be exactly one line (no stack trace). */
export function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l !== '')
  if (lines.length !== 1) throw new Error(`expected one line on stderr, got ${lines.length}:\n${stderr}`)
  return lines[0]!
}
