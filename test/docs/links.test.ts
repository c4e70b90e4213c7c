// Every relative link of README.md and docs/ must reach a file of the repository, and a link to a
// heading of a page (#anchor) a heading that page has: the manuals moved out of the README point at
// each other, and a renamed page or heading must not leave a dead link behind.
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { repoRoot } from '../../scripts/docs-sections.js'
import { pagesOnDisk } from './pages.js'

/** The page's prose: fenced code blocks and inline code spans blanked, as GitHub does not link inside them. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```$/gm, (block) => block.replace(/[^\n]/g, ' ')).replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length))
}

/** The link targets of a page's prose: [text](target), without a title. */
function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!)
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-')
}

function anchors(markdown: string): Set<string> {
  return new Set([...prose(markdown).matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)))
}

describe('relative links of README.md and docs/', () => {
  const root = repoRoot()
  for (const page of pagesOnDisk()) {
    it(`${page}: every relative link points to an existing file (and heading)`, () => {
      const text = readFileSync(join(root, page), 'utf8')
      for (const target of linkTargets(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto: are not files of the repository
        const [file, anchor] = target.split('#') as [string, string | undefined]
        const path = file === '' ? join(root, page) : join(root, dirname(page), decodeURIComponent(file))
        expect(relative(root, path).startsWith('..'), `${page}: ${target} leaves the repository`).toBe(false)
        expect(existsSync(path), `${page}: ${target} does not exist`).toBe(true)
        if (anchor !== undefined && path.endsWith('.md')) {
          expect(anchors(readFileSync(path, 'utf8')).has(anchor), `${page}: ${target} names no heading of ${relative(root, path)}`).toBe(true)
        }
      }
    })
  }

  it('finds the links it checks', () => {
    expect(linkTargets(readFileSync(join(root, 'README.md'), 'utf8'))).toContain('docs/broker.md')
    expect(anchorOf('HTTP: REST Proxy, web console')).toBe('http-rest-proxy-web-console')
  })
})
