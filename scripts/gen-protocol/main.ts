// Generates, from Kafka's JSON definitions:
// - src/protocol/messages/*.gen.ts and src/protocol/api-keys.gen.ts from the protocol specs: the shared
//   folder ($SKEIN_PROTOCOL_SPECS or <repo>/../shared/kafka-protocol) and the repo's own
//   scripts/kafka-protocol-extra/ (APIs the shared folder lacks; a message may be in only one of them);
// - the coordinators' record codecs (src/coordinator/*/generated/*.gen.ts) from the record
//   definitions kept in the repo under scripts/coordinator-records/ (RECORD_SETS).
// Usage: node dist/scripts/gen-protocol/main.js [--out <dir>] (protocol output folder, default
// <repo>/src/protocol; the record codecs always go to their folders in the repo). Runs offline.

import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, posix, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { emitAll, emitRecordSet, type ModuleLayout } from './emit.js'
import { defaultSpecDir, defaultSpecFolders, loadModel, loadRecordSet, type SpecFolder } from './model.js'

/** A folder of coordinator record definitions and the folder its codecs are generated into (repo-relative). */
export interface RecordSetLocation {
  specDir: string
  outDir: string
}

export const RECORD_SETS: readonly RecordSetLocation[] = [
  { specDir: 'scripts/coordinator-records/group-coordinator', outDir: 'src/coordinator/group/generated' },
  { specDir: 'scripts/coordinator-records/transaction-coordinator', outDir: 'src/coordinator/transaction/generated' },
  { specDir: 'scripts/coordinator-records/share-coordinator', outDir: 'src/coordinator/share/generated' },
]

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
export function generate(specs: string | readonly SpecFolder[], outDir: string): string[] {
  const files = emitAll(loadModel(specs))
  mkdirSync(join(outDir, 'messages'), { recursive: true })
  // Drop stale generated modules (an API removed from the specs).
  dropStale(join(outDir, 'messages'), new Set(files.filter((f) => f.path.startsWith('messages/')).map((f) => f.path.slice('messages/'.length))))
  for (const f of files) writeFileSync(join(outDir, f.path), f.text)
  return files.map((f) => f.path)
}

/** Removes the *.gen.ts files of `dir` that are not in `keep` (a definition removed since). */
function dropStale(dir: string, keep: Set<string>): void {
  for (const name of readdirSync(dir)) if (name.endsWith('.gen.ts') && !keep.has(name)) rmSync(join(dir, name))
}

/** The record codecs of every RECORD_SETS entry, as repo-relative paths and texts. */
export function emitRecordSets(root: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = []
  for (const loc of RECORD_SETS) {
    const layout: ModuleLayout = {
      specPath: loc.specDir,
      primitives: posix.relative(loc.outDir, 'src/protocol/primitives'),
    }
    const set = loadRecordSet(join(root, loc.specDir), basename(loc.specDir))
    for (const f of emitRecordSet(set, layout)) out.push({ path: `${loc.outDir}/${f.path}`, text: f.text })
  }
  return out
}

/** Writes the record codecs under `outRoot` (a repo-shaped folder, default the repo); returns their repo-relative paths. */
export function generateRecordSets(root: string, outRoot = root): string[] {
  const files = emitRecordSets(root)
  for (const loc of RECORD_SETS) {
    const dir = join(outRoot, loc.outDir)
    mkdirSync(dir, { recursive: true })
    dropStale(dir, new Set(files.filter((f) => dirname(f.path) === loc.outDir).map((f) => basename(f.path))))
  }
  for (const f of files) writeFileSync(join(outRoot, f.path), f.text)
  return files.map((f) => f.path)
}

function main(): void {
  const root = repoRoot()
  const args = process.argv.slice(2)
  const outIdx = args.indexOf('--out')
  const outDir = outIdx >= 0 && args[outIdx + 1] ? resolve(args[outIdx + 1]!) : join(root, 'src', 'protocol')
  const records = generateRecordSets(root)
  console.log(`gen-protocol: wrote ${records.length} coordinator record files from ${RECORD_SETS.map((l) => l.specDir).join(', ')}`)
  const specDir = defaultSpecDir(root)
  if (!existsSync(specDir)) {
    console.error(`gen-protocol: no spec folder at ${specDir}`)
    process.exit(1)
  }
  const folders = defaultSpecFolders(root)
  const written = generate(folders, outDir)
  console.log(`gen-protocol: wrote ${written.length} files to ${outDir} from ${folders.map((f) => f.dir).join(' and ')}`)
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
