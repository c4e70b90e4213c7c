// The README is part of the product: its generated sections must match the code, and its library
// example must run as written.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readmePath, updateReadme } from '../../scripts/readme-sections.js'

const readme = readFileSync(readmePath(), 'utf8')

describe('README', () => {
  it('has current generated sections (run npm run docs after changing configs or handlers)', () => {
    expect(updateReadme(readme)).toBe(readme)
  })

  it('documents both commands', () => {
    expect(readme).toContain('npm install && npm start')
    expect(readme).toContain('npm install && npm test')
  })

  it('runs the library example as written', () => {
    const section = readme.slice(readme.indexOf('## Library API'))
    const code = /```js\n([\s\S]*?)```/.exec(section)![1]!
    const dataDir = mkdtempSync(join(tmpdir(), 'skein-readme-'))
    // The example lives in the package, so `import ... from 'skein'` resolves to this package itself.
    const script = join(readmePath(), '..', 'dist', `readme-example-${process.pid}.mjs`)
    writeFileSync(script, code.replace('/tmp/skein-demo', dataDir))
    try {
      const out = execFileSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 })
      expect(out.trim()).toBe('0 hello')
    } finally {
      rmSync(script, { force: true })
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
