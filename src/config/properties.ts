// Java .properties format (java.util.Properties.load), the format of Kafka's server.properties and
// meta.properties:
// - a natural line ends at \n, \r or \r\n; a line whose first non-blank char is `#` or `!` is a comment
//   (a trailing backslash does not continue a comment);
// - a logical line continues onto the next natural line when it ends in an odd number of backslashes;
//   the continuation's leading blanks are dropped;
// - the key ends at the first unescaped `=`, `:` or blank; blanks, then at most one `=`/`:`, then blanks
//   separate it from the value;
// - escapes: \t \n \r \f \uXXXX, and `\` before any other char is that char; a later duplicate key wins.

export class PropertiesSyntaxError extends Error {
  readonly line: number

  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`)
    this.name = 'PropertiesSyntaxError'
    this.line = line
  }
}

const BLANK = new Set([' ', '\t', '\f'])
const UNESCAPES: Record<string, string> = { t: '\t', n: '\n', r: '\r', f: '\f' }
const ESCAPES: Record<string, string> = {
  '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\f': '\\f', '=': '\\=', ':': '\\:', '#': '\\#', '!': '\\!',
}

/** Splits text into logical lines, with the 1-based natural line each starts on. */
function logicalLines(text: string): { text: string; line: number }[] {
  const natural = text.split(/\r\n|\r|\n/)
  const out: { text: string; line: number }[] = []
  let i = 0
  while (i < natural.length) {
    const startLine = i + 1
    let current = stripLeadingBlanks(natural[i]!)
    i++
    if (current === '' || current[0] === '#' || current[0] === '!') continue
    while (endsWithOddBackslashes(current)) {
      current = current.slice(0, -1)
      if (i >= natural.length) break
      current += stripLeadingBlanks(natural[i]!)
      i++
    }
    out.push({ text: current, line: startLine })
  }
  return out
}

function stripLeadingBlanks(s: string): string {
  let i = 0
  while (i < s.length && BLANK.has(s[i]!)) i++
  return s.slice(i)
}

function endsWithOddBackslashes(s: string): boolean {
  let n = 0
  for (let i = s.length - 1; i >= 0 && s[i] === '\\'; i--) n++
  return n % 2 === 1
}

function unescape(s: string, line: number): string {
  let out = ''
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    if (c !== '\\') {
      out += c
      continue
    }
    i++
    if (i >= s.length) break
    const e = s[i]!
    if (e === 'u') {
      const hex = s.slice(i + 1, i + 5)
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new PropertiesSyntaxError(line, `malformed \\uxxxx encoding: \\u${hex}`)
      out += String.fromCharCode(parseInt(hex, 16))
      i += 4
    } else {
      out += UNESCAPES[e] ?? e
    }
  }
  return out
}

/**
 * Parses .properties text into an ordered map (insertion order of first appearance; a repeated key
 * takes its last value). Throws PropertiesSyntaxError on a malformed \u escape.
 */
export function parseProperties(text: string): Map<string, string> {
  const props = new Map<string, string>()
  for (const { text: l, line } of logicalLines(text)) {
    let k = 0
    let escaped = false
    let hasSeparator = false
    // Find the end of the key: the first unescaped '=', ':' or blank.
    for (; k < l.length; k++) {
      const c = l[k]!
      if (escaped) {
        escaped = false
        continue
      }
      if (c === '\\') {
        escaped = true
        continue
      }
      if (c === '=' || c === ':') {
        hasSeparator = true
        break
      }
      if (BLANK.has(c)) break
    }
    const rawKey = l.slice(0, k)
    let v = hasSeparator ? k + 1 : k
    while (v < l.length && BLANK.has(l[v]!)) v++
    if (!hasSeparator && v < l.length && (l[v] === '=' || l[v] === ':')) {
      v++
      while (v < l.length && BLANK.has(l[v]!)) v++
    }
    props.set(unescape(rawKey, line), unescape(l.slice(v), line))
  }
  return props
}

function escapeKeyOrValue(s: string, isKey: boolean): string {
  let out = ''
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    const code = c.charCodeAt(0)
    if (ESCAPES[c] !== undefined) out += ESCAPES[c]
    else if (c === ' ') out += isKey || i === 0 ? '\\ ' : ' '
    else out += code < 0x20 || code > 0x7e ? '\\u' + code.toString(16).padStart(4, '0') : c
  }
  return out
}

/** Writes properties in the form parseProperties reads back, with optional `#` comment lines first. */
export function formatProperties(props: Iterable<[string, string]>, comments: string[] = []): string {
  let out = ''
  for (const c of comments) out += `#${c}\n`
  for (const [k, v] of props) out += `${escapeKeyOrValue(k, true)}=${escapeKeyOrValue(v, false)}\n`
  return out
}
