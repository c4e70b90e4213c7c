// Fails (exit 1) when the committed generated protocol files differ from what the generator makes
// of the current specs: regenerates into a temp dir and compares byte for byte. Skips (exit 0)
// when the spec folder is missing, e.g. in a source tarball without shared/.

import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generate, repoRoot } from './gen-protocol/main.js'
import { defaultSpecDir } from './gen-protocol/model.js'

function generatedFiles(protocolDir: string): string[] {
  const out: string[] = []
  if (existsSync(join(protocolDir, 'api-keys.gen.ts'))) out.push('api-keys.gen.ts')
  const messages = join(protocolDir, 'messages')
  if (existsSync(messages)) {
    for (const f of readdirSync(messages)) if (f.endsWith('.gen.ts')) out.push(`messages/${f}`)
  }
  return out.sort()
}

function main(): number {
  const root = repoRoot()
  const specDir = defaultSpecDir(root)
  if (!existsSync(specDir)) {
    console.log(`check-generated: skipped (no spec folder at ${specDir})`)
    return 0
  }
  const committed = join(root, 'src', 'protocol')
  const tmp = mkdtempSync(join(tmpdir(), 'skein-check-generated-'))
  try {
    const fresh = generate(specDir, tmp)
    const existing = generatedFiles(committed)
    const differ: string[] = []
    for (const f of fresh) {
      const path = join(committed, f)
      if (!existsSync(path)) differ.push(`${f} (missing)`)
      else if (!readFileSync(path).equals(readFileSync(join(tmp, f)))) differ.push(`${f} (differs)`)
    }
    const freshSet = new Set(fresh)
    for (const f of existing) if (!freshSet.has(f)) differ.push(`${f} (not generated any more)`)
    if (differ.length > 0) {
      console.error(`check-generated: ${differ.length} generated protocol files are out of date; run npm run gen:protocol`)
      for (const d of differ) console.error(`  src/protocol/${d}`)
      return 1
    }
    console.log(`check-generated: ${fresh.length} generated protocol files match ${specDir}`)
    return 0
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

process.exitCode = main()
