// Fails (exit 1) when committed generated files differ from what the generator makes of the current
// definitions: regenerates into a temp dir and compares byte for byte. Two sets are checked:
// - the coordinator record codecs (src/coordinator/*/generated/), from the definitions kept in the
//   repo (scripts/coordinator-records/): always;
// - the protocol codecs (src/protocol/), from shared/kafka-protocol and scripts/kafka-protocol-extra:
//   skipped when the shared folder is missing, e.g. in a source tarball without shared/.

import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RECORD_SETS, generate, generateRecordSets, repoRoot } from './gen-protocol/main.js'
import { defaultSpecDir, defaultSpecFolders } from './gen-protocol/model.js'

/** The *.gen.ts files of a folder, as `<prefix><name>`. */
function genFiles(dir: string, prefix: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => f.endsWith('.gen.ts'))
    .map((f) => `${prefix}${f}`)
}

/** Differences between the freshly generated files (under freshRoot) and the committed ones (under committedRoot). */
function compare(fresh: string[], freshRoot: string, committed: string[], committedRoot: string, label: string): string[] {
  const differ: string[] = []
  for (const f of fresh) {
    const path = join(committedRoot, f)
    if (!existsSync(path)) differ.push(`${label}${f} (missing)`)
    else if (!readFileSync(path).equals(readFileSync(join(freshRoot, f)))) differ.push(`${label}${f} (differs)`)
  }
  const freshSet = new Set(fresh)
  for (const f of committed) if (!freshSet.has(f)) differ.push(`${label}${f} (not generated any more)`)
  return differ
}

function main(): number {
  const root = repoRoot()
  const tmp = mkdtempSync(join(tmpdir(), 'skein-check-generated-'))
  try {
    const differ: string[] = []
    const checked: string[] = []

    const records = generateRecordSets(root, tmp)
    const committedRecords = RECORD_SETS.flatMap((loc) => genFiles(join(root, loc.outDir), `${loc.outDir}/`))
    differ.push(...compare(records, tmp, committedRecords, root, ''))
    checked.push(`${records.length} coordinator record files match ${RECORD_SETS.map((l) => l.specDir).join(', ')}`)

    const specDir = defaultSpecDir(root)
    if (!existsSync(specDir)) {
      console.log(`check-generated: protocol files skipped (no spec folder at ${specDir})`)
    } else {
      const protocolTmp = join(tmp, 'protocol')
      const fresh = generate(defaultSpecFolders(root), protocolTmp)
      const committed = join(root, 'src', 'protocol')
      const existing = [...genFiles(committed, ''), ...genFiles(join(committed, 'messages'), 'messages/')].sort()
      differ.push(...compare(fresh, protocolTmp, existing, committed, 'src/protocol/'))
      checked.push(`${fresh.length} generated protocol files match ${defaultSpecFolders(root).map((f) => f.dir).join(' and ')}`)
    }

    if (differ.length > 0) {
      console.error(`check-generated: ${differ.length} generated files are out of date; run npm run gen:protocol`)
      for (const d of differ) console.error(`  ${d}`)
      return 1
    }
    for (const c of checked) console.log(`check-generated: ${c}`)
    return 0
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

process.exitCode = main()
