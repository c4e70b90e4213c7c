// The v3 produce body splitter: concatenated JSON objects found across chunk boundaries, strings with
// braces and escapes, and the bounds (a record over the limit, a value that is not an object).
import { describe, expect, it } from 'vitest'
import { JsonSplitter } from '../../src/rest/index.js'

/** The objects found, written back as JSON text for comparison. */
function split(chunks: string[], max = 1024): string[] {
  const s = new JsonSplitter(max)
  const out: unknown[] = []
  for (const c of chunks) s.push(Buffer.from(c), out)
  s.end()
  return out.map((v) => JSON.stringify(v))
}

describe('JsonSplitter', () => {
  it('finds objects one per line, back to back, and split anywhere', () => {
    expect(split(['{"a":1}\n{"b":2}\r\n', '{"c":3}{"d":4}'])).toEqual(['{"a":1}', '{"b":2}', '{"c":3}', '{"d":4}'])
    const text = '{"v":{"x":[1,{"y":"}{"}]},"s":"a\\"}b"}  {"z":"\\\\"}'
    for (let cut = 1; cut < text.length; cut++) expect(split([text.slice(0, cut), text.slice(cut)])).toEqual(['{"v":{"x":[1,{"y":"}{"}]},"s":"a\\"}b"}', '{"z":"\\\\"}'])
    expect(split(['{"k":"é€"}'])).toEqual(['{"k":"é€"}'])
    // Pretty-printed over several lines, and an object over lines followed by one on the same line.
    expect(split(['{\n  "a": 1,\n  "b": [2]\n}\n', '{"c":\n3} {"d":4}\n'])).toEqual(['{"a":1,"b":[2]}', '{"c":3}', '{"d":4}'])
    // Malformed JSON inside braces is refused (the stream ends there).
    expect(() => split(['{"a":1}\n{"b": nope}\n'])).toThrow(/Error processing JSON/)
  })

  it('parses many whole lines at once and gives what one line at a time gives, errors included', () => {
    const lines = Array.from({ length: 50 }, (_, i) => `{"value":{"type":"STRING","data":"r${i} {\\n}"}}`)
    const want = lines.map((l) => JSON.stringify(JSON.parse(l)))
    const text = lines.join('\n') + '\n'
    for (const cut of [0, 7, 100, text.length - 3]) expect(split([text.slice(0, cut), text.slice(cut)])).toEqual(want)
    // Blank lines, CRLF and a line of two objects among whole lines.
    expect(split(['{"a":1}\r\n\n{"b":2}\n{"c":3}{"d":4}\n{"e":5}\n'])).toEqual(['{"a":1}', '{"b":2}', '{"c":3}', '{"d":4}', '{"e":5}'])
    // A raw line break inside a string is malformed, also where joining the lines would make valid JSON.
    expect(() => split(['{"x":"}\n{"},{"y":1}\n'])).toThrow(/Error processing JSON/)
    // The records before a malformed line are found; the error ends the stream at that line.
    const s = new JsonSplitter(1024)
    const out: unknown[] = []
    expect(() => s.push(Buffer.from('{"a":1}\n{"b":2}\n{"c": nope}\n{"d":4}\n'), out)).toThrow(/Error processing JSON/)
    expect(out).toEqual([{ a: 1 }, { b: 2 }])
    // A line over the limit among whole lines is refused.
    expect(() => split([`{"a":1}\n{"v":"${'x'.repeat(100)}"}\n{"b":2}\n`], 50)).toThrow(/larger than the maximum/)
  })

  it('refuses a record over the limit and values that are not objects', () => {
    expect(() => split([`{"v":"${'x'.repeat(100)}"}`], 50)).toThrow(/larger than the maximum/)
    // Over the limit while still open: refused before the rest arrives.
    const s = new JsonSplitter(50)
    expect(() => s.push(Buffer.from(`{"v":"${'x'.repeat(100)}`), [])).toThrow(/larger than the maximum/)
    expect(() => split(['[1]'])).toThrow(/expected a JSON object/)
    expect(() => split(['{"a":1'])).toThrow(/unexpected end of input/)
  })
})
