import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { loadNativeBinding, native, nativeCandidates } from '../../src/addon/index.js'

describe('native addon loader', () => {
  it('loads the built addon from build/Release', () => {
    const candidates = nativeCandidates()
    expect(candidates.some((p) => p.endsWith('build/Release/skein_native.node'))).toBe(true)
    expect(candidates.some((p) => p.endsWith('build/Debug/skein_native.node'))).toBe(true)
    expect(candidates.some((p) => existsSync(p))).toBe(true)
    expect(native.crc32c(Buffer.from('123456789'))).toBe(0xe3069283)
  })

  it('puts SKEIN_NATIVE_PATH first', () => {
    const saved = process.env.SKEIN_NATIVE_PATH
    try {
      process.env.SKEIN_NATIVE_PATH = '/nowhere/custom.node'
      expect(nativeCandidates()[0]).toBe('/nowhere/custom.node')
    } finally {
      if (saved === undefined) delete process.env.SKEIN_NATIVE_PATH
      else process.env.SKEIN_NATIVE_PATH = saved
    }
  })

  it('explains a missing addon, with the underlying errors, and never falls back', () => {
    let message = ''
    try {
      loadNativeBinding(['/nowhere/skein_native.node', new URL(import.meta.url).pathname])
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toMatch(/native addon .* is missing or failed to load/)
    expect(message).toMatch(/npm install/)
    expect(message).toMatch(/npm run build:native/)
    expect(message).toMatch(/\/nowhere\/skein_native\.node: not found/)
    expect(message).toContain(new URL(import.meta.url).pathname + ':')
  })
})
