// ARCHITECTURE.md is the map of src/, and the import checker (scripts/check-boundaries.ts) is what holds the
// code to it: this test keeps the two saying the same thing. The page's tables of floors and rules are
// generated from the checker (scripts/architecture-rules.ts; the docs test fails when they are stale); the
// hand-written parts (the diagram and the table of who owns what) are checked here against the checker and
// the folders on disk.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { FLOORS, RULES } from '../../scripts/check-boundaries.js'
import { sourceFolders } from '../../scripts/architecture-rules.js'
import { REPO_ROOT } from '../harness/index.js'

const page = readFileSync(join(REPO_ROOT, 'ARCHITECTURE.md'), 'utf8')
/** The page without its generated sections: what people wrote. */
const written = page.replace(/<!-- ([a-z-]+):start[\s\S]*?<!-- \1:end -->/g, '')
const diagram = /^```\n([\s\S]*?)^```$/m.exec(written)?.[1] ?? ''
const ownership = /^## Who owns what[\s\S]*?(?=^## )/m.exec(written)?.[0] ?? ''

/** The two checks the checker makes on its module graph beside dependency-cruiser's rules. */
const GRAPH_CHECKS = ['no-folder-cycles', 'every-folder-has-a-floor']
const ruleNames: string[] = [...RULES.map((r) => r.name ?? ''), ...GRAPH_CHECKS]

/** Backquoted names of rules in the written text: kebab-case words naming an import rule or a graph check. */
function namedRules(text: string): string[] {
  const names = [...text.matchAll(/`([a-z<>]+(?:-[a-z<>]+){2,})`/g)].map((m) => m[1]!)
  return [...new Set(names.filter((n) => /import|^no-|^only-|^every-/.test(n)))]
}

/** A rule name written with a placeholder (`<product>-imports-only-lower-products`) as a pattern. */
const asPattern = (name: string): RegExp => new RegExp(`^${name.replace(/<[a-z]+>/g, '[a-z-]+')}$`)

describe('ARCHITECTURE.md and the import checker agree', () => {
  it('has generated sections for the floors and the rules', () => {
    expect(page).toContain('<!-- floors:start')
    expect(page).toContain('<!-- import-rules:start')
  })

  it('names only rules the checker has', () => {
    const named = namedRules(written)
    expect(named.length).toBeGreaterThan(10)
    const unknown = named.filter((n) => !ruleNames.some((r) => asPattern(n).test(r)))
    expect(unknown, 'rule names in ARCHITECTURE.md that scripts/check-boundaries.ts does not have').toEqual([])
  })

  it('explains every rule the checker has in its written text', () => {
    const named = namedRules(written).map(asPattern)
    const unexplained = ruleNames.filter((r) => !named.some((p) => p.test(r)))
    expect(unexplained, 'rules of scripts/check-boundaries.ts that the table of who owns what does not name').toEqual([])
  })

  it('gives every floor a place in the diagram and in the table of who owns what', () => {
    for (const folder of Object.keys(FLOORS)) {
      expect(diagram, `the diagram lacks ${folder}/`).toMatch(new RegExp(`(^|[\\s(])${folder}/`, 'm'))
      expect(ownership, `the table of who owns what lacks \`${folder}/\``).toContain(`\`${folder}/\``)
    }
  })

  it('draws only folders that exist', () => {
    const folders = new Set(sourceFolders(REPO_ROOT).flatMap((f) => f.split('/')))
    const drawn = [...diagram.matchAll(/(?:^|[\s(])([a-z]+)\/(?=[\s)]|$)/gm)].map((m) => m[1]!)
    expect(drawn.length).toBeGreaterThan(10)
    expect(drawn.filter((f) => !folders.has(f)), 'folders the diagram draws that src/ does not have').toEqual([])
    expect(Object.keys(FLOORS).filter((f) => !existsSync(join(REPO_ROOT, 'src', f))), 'FLOORS entries with no folder').toEqual([])
  })
})
