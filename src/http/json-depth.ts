// The nesting bound on JSON that HTTP callers send (issue 31): JSON.parse itself takes any depth, but the
// code that walks the parsed value afterwards (schema conversion, serializers, JSON.stringify) recurses,
// and a body nested 100,000 deep overflowed the stack there and answered 500. Bodies deeper than the
// bound are refused with 400 before parsing, as Jackson's StreamReadConstraints (maxNestingDepth, 1000
// by default) refuses them in Confluent's REST Proxy and Schema Registry.

/** Deepest nesting of arrays and objects accepted in a request body (Jackson's default). */
export const MAX_JSON_DEPTH = 1000

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d

/**
 * Whether the JSON text in [start, end) nests arrays and objects deeper than maxDepth. One pass over the
 * bytes (or UTF-16 units: the structural characters are ASCII in both), skipping strings; the text need
 * not be valid JSON (the parser says what else is wrong with it).
 */
export function jsonNestedDeeperThan(text: Uint8Array | string, maxDepth = MAX_JSON_DEPTH, start = 0, end = text.length): boolean {
  let depth = 0
  let inString = false
  if (typeof text === 'string') {
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i)
      if (inString) {
        if (c === BACKSLASH) i++
        else if (c === QUOTE) inString = false
      } else if (c === QUOTE) inString = true
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (++depth > maxDepth) return true
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
    }
    return false
  }
  for (let i = start; i < end; i++) {
    const c = text[i]!
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return true
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
  }
  return false
}

/** The message every product answers with (its own 400 body around it). */
export function tooDeepMessage(maxDepth = MAX_JSON_DEPTH): string {
  return `JSON nested deeper than ${maxDepth} levels is not accepted`
}
