// The JSON nesting bound every HTTP product checks before parsing (src/http/json-depth.ts).
import { describe, expect, it } from 'vitest'
import { jsonNestedDeeperThan, MAX_JSON_DEPTH } from '../../src/http/index.js'

describe('jsonNestedDeeperThan', () => {
  it('counts arrays and objects, not brackets inside strings or escaped quotes', () => {
    expect(jsonNestedDeeperThan('[[{"a":[1]}]]', 4)).toBe(false)
    expect(jsonNestedDeeperThan('[[{"a":[[1]]}]]', 4)).toBe(true)
    expect(jsonNestedDeeperThan('{"s":"[[[[[[[[[["}', 1)).toBe(false)
    expect(jsonNestedDeeperThan('{"s":"\\"[[[[[[[[[["}', 1)).toBe(false)
    expect(jsonNestedDeeperThan('[1],[2],[3]', 1)).toBe(false)
  })

  it('reads bytes and text alike, within a range, at the default of 1000', () => {
    const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1)
    const ok = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH)
    expect(jsonNestedDeeperThan(deep)).toBe(true)
    expect(jsonNestedDeeperThan(Buffer.from(deep))).toBe(true)
    expect(jsonNestedDeeperThan(ok)).toBe(false)
    expect(jsonNestedDeeperThan(Buffer.from(ok))).toBe(false)
    const b = Buffer.from(`xx${deep}xx`)
    expect(jsonNestedDeeperThan(b, MAX_JSON_DEPTH, 2, b.length - 2)).toBe(true)
    expect(jsonNestedDeeperThan(b, MAX_JSON_DEPTH, 0, 500)).toBe(false)
  })
})
