import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadOrCreateMetaProperties, readMetaProperties } from '../../src/storage/meta-properties.js'

const dirs: string[] = []
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'skein-meta-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('meta.properties', () => {
  it('creates a cluster id once and keeps it', () => {
    const d = join(tmp(), 'data')
    const first = loadOrCreateMetaProperties(d, { nodeId: 1 })
    expect(first.clusterId).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/)
    expect(loadOrCreateMetaProperties(d, { nodeId: 1 })).toEqual(first)
    expect(readMetaProperties(d)).toEqual(first)
    expect(() => loadOrCreateMetaProperties(d, { nodeId: 2 })).toThrow(/node.id 1 does not match/)
    expect(() => loadOrCreateMetaProperties(d, { nodeId: 1, clusterId: 'other' })).toThrow(/cluster.id .* does not match/)
  })

  it('uses a configured cluster id', () => {
    const d = tmp()
    expect(loadOrCreateMetaProperties(d, { nodeId: 0, clusterId: 'my-cluster' }).clusterId).toBe('my-cluster')
    expect(readMetaProperties(d)!.clusterId).toBe('my-cluster')
  })
})
