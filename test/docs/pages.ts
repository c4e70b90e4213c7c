// The documentation pages the docs tests read: README.md (the front door) and the manuals in docs/, in
// the order their code blocks run. The order is the one the manuals had as sections of the README, so a
// block that uses what an earlier block made (a topic, a schema) still runs after it.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from '../../scripts/docs-sections.js'

export const DOC_PAGES = [
  'README.md',
  'docs/broker.md',
  'docs/cluster.md',
  'docs/cli.md',
  'docs/http.md',
  'docs/registry.md',
  'docs/connect.md',
  'docs/mirrormaker.md',
  'docs/library.md',
  'docs/share-groups.md',
  'docs/streams.md',
  'docs/security.md',
  'docs/compatibility.md',
  'docs/benchmarks.md',
  'docs/testing.md',
  'docs/configuration.md',
] as const

/** README.md and every docs/*.md on disk, whether DOC_PAGES lists them or not. */
export function pagesOnDisk(): string[] {
  const manuals = readdirSync(join(repoRoot(), 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)
  return ['README.md', ...manuals.sort()]
}

export function readPage(page: string): string {
  return readFileSync(join(repoRoot(), page), 'utf8')
}
