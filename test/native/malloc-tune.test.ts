import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'

describe('native.mallocTune', () => {
  it('applies glibc malloc settings on this (glibc) system and reports it', () => {
    // The values the broker uses; applying them again is harmless.
    expect(native.mallocTune(256 * 1024 * 1024, 64 * 1024 * 1024)).toBe(true)
    // Memory still allocates and frees normally afterwards.
    const bufs = Array.from({ length: 64 }, () => Buffer.alloc(64 * 1024, 7))
    expect(bufs.every((b) => b[65535] === 7)).toBe(true)
  })

  it('rejects values mallopt cannot take', () => {
    expect(() => native.mallocTune(-1, 0)).toThrow(RangeError)
    expect(() => native.mallocTune(2 ** 31, 0)).toThrow(RangeError)
    expect(() => native.mallocTune(1.5, 0)).toThrow(RangeError)
    expect(() => (native.mallocTune as unknown as (a: unknown, b: unknown) => boolean)('1', 0)).toThrow(TypeError)
    expect(() => (native.mallocTune as unknown as (a: number) => boolean)(1)).toThrow(TypeError)
  })
})

describe('native.mallocTune with an mmap threshold', () => {
  it('applies the threshold the skein tools use', () => {
    expect(native.mallocTune(256 * 1024 * 1024, 64 * 1024 * 1024, 32 * 1024 * 1024)).toBe(true)
    const big = Buffer.alloc(8 * 1024 * 1024, 3)
    expect(big[big.length - 1]).toBe(3)
    expect(() => native.mallocTune(0, 0, -1)).toThrow(RangeError)
  })
})
