import { describe, expect, it } from 'vitest'
import { formatProperties, parseProperties, PropertiesSyntaxError } from '../../src/config/properties.js'

describe('parseProperties', () => {
  it('reads the three separators, comments and blank lines', () => {
    const p = parseProperties('# comment\n! also comment\n\n a=1\nb: 2\nc 3\n  d\t=\t4  \ne=\n')
    expect([...p]).toEqual([['a', '1'], ['b', '2'], ['c', '3'], ['d', '4  '], ['e', '']])
  })

  it('treats a key with no value as empty and keeps later duplicates', () => {
    const p = parseProperties('lonely\nk=1\nk=2\n')
    expect(p.get('lonely')).toBe('')
    expect(p.get('k')).toBe('2')
  })

  it('joins continuation lines and drops their leading blanks', () => {
    const p = parseProperties('listeners=PLAINTEXT://a:1,\\\n    SSL://b:2\nnext=x\n')
    expect(p.get('listeners')).toBe('PLAINTEXT://a:1,SSL://b:2')
    expect(p.get('next')).toBe('x')
  })

  it('does not continue on an even number of backslashes, and not from a comment', () => {
    const p = parseProperties('path=C:\\\\\nother=1\n# comment \\\nthird=3\n')
    expect(p.get('path')).toBe('C:\\')
    expect(p.get('other')).toBe('1')
    expect(p.get('third')).toBe('3')
  })

  it('handles \\r\\n and lone \\r line ends', () => {
    expect([...parseProperties('a=1\r\nb=2\rc=3')]).toEqual([['a', '1'], ['b', '2'], ['c', '3']])
  })

  it('decodes escapes in keys and values', () => {
    const p = parseProperties('my\\ key\\=x = tab\\there\\u0041\\n\\z\nk\\:2=v\n')
    expect(p.get('my key=x')).toBe('tab\there' + 'A\nz')
    expect(p.get('k:2')).toBe('v')
  })

  it('keeps a second separator as part of the value', () => {
    expect(parseProperties('a==b').get('a')).toBe('=b')
    expect(parseProperties('a = = b').get('a')).toBe('= b')
  })

  it('rejects a malformed \\u escape with the line number', () => {
    expect(() => parseProperties('ok=1\nbad=\\u12G4\n')).toThrow(PropertiesSyntaxError)
    try {
      parseProperties('ok=1\nbad=\\u12\n')
    } catch (err) {
      expect((err as PropertiesSyntaxError).line).toBe(2)
    }
  })

  it('round-trips through formatProperties', () => {
    const input: [string, string][] = [['a key', ' lead'], ['x=y', 'a:b#c!d'], ['unicode', 'é\t\n'], ['back', 'sl\\ash']]
    expect([...parseProperties(formatProperties(input, ['header']))]).toEqual(input)
  })
})
