// ARCHITECTURE.md's generated sections, rendered from the import checker itself (scripts/check-boundaries.ts),
// so that the map says what the checker enforces: the floors (FLOORS) and, for each rule, the folders of src/
// it binds and why. `npm run docs` rewrites them (scripts/docs-sections.ts); the docs test fails when they are
// stale, and test/boundaries/architecture-map.test.ts checks the hand-written parts of the page against the
// same tables.
import { readdirSync } from 'node:fs'
import { join, relative } from 'node:path'
import type { IRegularForbiddenRuleType } from 'dependency-cruiser'
import { FLOORS, RULES } from './check-boundaries.js'

/** Every folder under src/ (as `a` or `a/b`), sorted. */
export function sourceFolders(root: string): string[] {
  const out: string[] = []
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue
      const path = join(dir, e.name)
      out.push(relative(join(root, 'src'), path))
      walk(path)
    }
  }
  walk(join(root, 'src'))
  return out.sort()
}

const asList = (p: string | string[] | undefined): string[] => (p === undefined ? [] : Array.isArray(p) ? p : [p])

/** Whether a module of `folder` (e.g. `server/handlers`) is one the rule's `from` side names. */
export function ruleBindsFolder(rule: IRegularForbiddenRuleType, folder: string): boolean {
  const module = `src/${folder}/m.ts`
  const from = rule.from as { path?: string | string[]; pathNot?: string | string[] }
  const inPath = asList(from.path).length === 0 || asList(from.path).some((p) => new RegExp(p).test(module))
  const excluded = asList(from.pathNot).some((p) => new RegExp(p).test(module))
  return inPath && !excluded
}

/** The folders of a set, without those whose parent folder is in it too. */
const outermost = (set: ReadonlySet<string>): string[] => [...set].filter((f) => !f.includes('/') || !set.has(f.slice(0, f.lastIndexOf('/'))))

/** The folders a rule binds, without those whose parent folder it binds too. */
export function foldersOfRule(rule: IRegularForbiddenRuleType, folders: readonly string[]): string[] {
  return outermost(new Set(folders.filter((f) => ruleBindsFolder(rule, f))))
}

/** How a table names the folders a rule binds: a list, or for a rule over most of src/, what it leaves out. */
function describeBound(rule: IRegularForbiddenRuleType, folders: readonly string[]): string {
  const bound = new Set(folders.filter((f) => ruleBindsFolder(rule, f)))
  const code = (fs: string[]): string => fs.map((f) => `\`${f}/\``).join(', ')
  if (bound.size === folders.length) return 'all of src/'
  if (bound.size === 0) return '(no folder yet)'
  if (bound.size * 2 <= folders.length) return code(outermost(bound))
  return `all of src/ but ${code(outermost(new Set(folders.filter((f) => !bound.has(f)))))}`
}

export function renderFloors(): string {
  const lines = ['| Folder | Floor |', '| --- | --- |']
  for (const [folder, floor] of Object.entries(FLOORS)) lines.push(`| \`${folder}/\` | ${floor} |`)
  return lines.join('\n') + '\n'
}

export function renderRules(root: string): string {
  const folders = sourceFolders(root)
  const lines = ['| Rule | Binds the modules of | What it keeps |', '| --- | --- | --- |']
  for (const rule of RULES) {
    lines.push(`| \`${rule.name}\` | ${describeBound(rule, folders)} | ${(rule.comment ?? '').replace(/\|/g, '\\|')} |`)
  }
  return lines.join('\n') + '\n'
}
