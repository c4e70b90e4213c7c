// Generates src/protocol/messages/*.gen.ts and src/protocol/api-keys.gen.ts from Kafka's JSON
// specs. Usage: node dist/scripts/gen-protocol/main.js [--out <dir>] (default: <repo>/src/protocol).
// Runs offline; the spec folder is $SKEIN_PROTOCOL_SPECS or <repo>/../shared/kafka-protocol.

import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { emitAll } from './emit.js'
import { defaultSpecDir, loadModel } from './model.js'

/** The repo root, found from this file's location (works from scripts/ and dist/scripts/). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'scripts', 'gen-protocol'))) return dir
    const up = dirname(dir)
    if (up === dir) throw new Error('gen-protocol: cannot find the repo root')
    dir = up
  }
}

/** Writes every generated file under `outDir` (a src/protocol-shaped folder); returns their paths. */
export function generate(specDir: string, outDir: string): string[] {
  const files = emitAll(loadModel(specDir))
  mkdirSync(join(outDir, 'messages'), { recursive: true })
  // Drop stale generated modules (an API removed from the specs).
  const keep = new Set(files.map((f) => f.path))
  for (const name of readdirSync(join(outDir, 'messages'))) {
    if (name.endsWith('.gen.ts') && !keep.has(`messages/${name}`)) rmSync(join(outDir, 'messages', name))
  }
  for (const f of files) writeFileSync(join(outDir, f.path), f.text)
  return files.map((f) => f.path)
}

function main(): void {
  const root = repoRoot()
  const args = process.argv.slice(2)
  const outIdx = args.indexOf('--out')
  const outDir = outIdx >= 0 && args[outIdx + 1] ? resolve(args[outIdx + 1]!) : join(root, 'src', 'protocol')
  const specDir = defaultSpecDir(root)
  if (!existsSync(specDir)) {
    console.error(`gen-protocol: no spec folder at ${specDir}`)
    process.exit(1)
  }
  const written = generate(specDir, outDir)
  console.log(`gen-protocol: wrote ${written.length} files to ${outDir} from ${specDir}`)
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
