// Shared parts of the single message transforms: the $Key / $Value split (Kafka's transforms come in
// two classes, one working on the key and one on the value), record access, a per-schema cache of
// derived schemas, and the SimpleDateFormat patterns TimestampConverter and TimestampRouter take.
import { ConfigException } from '../api/config-def.js'
import { DataException, isSchemalessMap, type Schema, Struct } from '../api/data.js'
import { type ConnectRecord, newRecord } from '../api/plugin.js'

export type Side = 'key' | 'value'

export function operatingSchema(r: ConnectRecord, side: Side): Schema | null {
  return side === 'key' ? r.keySchema : r.valueSchema
}

export function operatingValue(r: ConnectRecord, side: Side): unknown {
  return side === 'key' ? r.key : r.value
}

export function withSide<R extends ConnectRecord>(r: R, side: Side, schema: Schema | null, value: unknown): R {
  return side === 'key' ? newRecord(r, { keySchema: schema, key: value }) : newRecord(r, { valueSchema: schema, value })
}

export function requireMap(value: unknown, purpose: string): Record<string, unknown> {
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), v]))
  if (!isSchemalessMap(value)) throw new DataException(`Only Map objects supported in absence of schema for [${purpose}], found: ${value === null ? 'null' : typeof value}`)
  return value as Record<string, unknown>
}

export function requireStruct(value: unknown, purpose: string): Struct {
  if (!(value instanceof Struct)) throw new DataException(`Only Struct objects supported for [${purpose}], found: ${value === null ? 'null' : typeof value}`)
  return value
}

/** Derived schemas per input schema (Kafka keeps an LRU SynchronizedCache of 16). */
export class SchemaCache {
  private readonly map = new WeakMap<Schema, Schema>()
  get(schema: Schema, make: (s: Schema) => Schema): Schema {
    let s = this.map.get(schema)
    if (s === undefined) {
      s = make(schema)
      this.map.set(schema, s)
    }
    return s
  }
}

/** Props as a string map (a config value may come as a number from JSON): everything String()-ed. */
export function stringProps(props: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(props).filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => [k, String(v)]))
}

// ---- java.text.SimpleDateFormat patterns, in UTC (Kafka's transforms format in UTC) ----

type Token = { kind: 'field'; letter: string; width: number } | { kind: 'literal'; text: string }

export function compileDatePattern(pattern: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < pattern.length) {
    const c = pattern[i]!
    if (c === "'") {
      let j = i + 1
      let text = ''
      for (; j < pattern.length; j++) {
        if (pattern[j] === "'") {
          if (pattern[j + 1] === "'") {
            text += "'"
            j++
            continue
          }
          break
        }
        text += pattern[j]
      }
      if (j >= pattern.length) throw new ConfigException(null, `Unterminated quote in date pattern ${pattern}`)
      tokens.push({ kind: 'literal', text: text === '' ? "'" : text })
      i = j + 1
    } else if (/[A-Za-z]/.test(c)) {
      if (!'GyYMLdHhmsSEaZXkKuDFwW'.includes(c)) throw new ConfigException(null, `Illegal pattern character '${c}'`)
      let j = i
      while (pattern[j] === c) j++
      tokens.push({ kind: 'field', letter: c, width: j - i })
      i = j
    } else {
      tokens.push({ kind: 'literal', text: c })
      i++
    }
  }
  return tokens
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']

export function formatDate(tokens: Token[], d: Date): string {
  const pad = (n: number, w: number): string => String(n).padStart(w, '0')
  let out = ''
  for (const t of tokens) {
    if (t.kind === 'literal') {
      out += t.text
      continue
    }
    const w = t.width
    switch (t.letter) {
      case 'y':
      case 'Y':
      case 'u':
        out += w === 2 ? pad(d.getUTCFullYear() % 100, 2) : pad(d.getUTCFullYear(), w)
        break
      case 'M':
      case 'L':
        out += w >= 4 ? MONTHS[d.getUTCMonth()] : w === 3 ? MONTHS[d.getUTCMonth()]!.slice(0, 3) : pad(d.getUTCMonth() + 1, w)
        break
      case 'd':
        out += pad(d.getUTCDate(), w)
        break
      case 'H':
        out += pad(d.getUTCHours(), w)
        break
      case 'k':
        out += pad(d.getUTCHours() === 0 ? 24 : d.getUTCHours(), w)
        break
      case 'h':
        out += pad(d.getUTCHours() % 12 === 0 ? 12 : d.getUTCHours() % 12, w)
        break
      case 'K':
        out += pad(d.getUTCHours() % 12, w)
        break
      case 'm':
        out += pad(d.getUTCMinutes(), w)
        break
      case 's':
        out += pad(d.getUTCSeconds(), w)
        break
      case 'S':
        out += pad(d.getUTCMilliseconds(), w)
        break
      case 'E':
        out += w >= 4 ? DAYS[d.getUTCDay()] : DAYS[d.getUTCDay()]!.slice(0, 3)
        break
      case 'a':
        out += d.getUTCHours() < 12 ? 'AM' : 'PM'
        break
      case 'D': {
        const start = Date.UTC(d.getUTCFullYear(), 0, 1)
        out += pad(Math.floor((d.getTime() - start) / 86400000) + 1, w)
        break
      }
      case 'Z':
        out += '+0000'
        break
      case 'X':
        out += 'Z'
        break
      case 'G':
        out += 'AD'
        break
      default:
        out += pad(0, w)
    }
  }
  return out
}

export function parseDate(tokens: Token[], text: string, pattern: string): Date {
  let pos = 0
  let year = 1970, month = 0, day = 1, hour = 0, minute = 0, second = 0, ms = 0, pm: boolean | null = null, offsetMin = 0
  const fail = (): never => {
    throw new DataException(`Could not parse timestamp: value (${text}) does not match pattern (${pattern})`)
  }
  const num = (maxWidth: number, next: Token | undefined): number => {
    // Adjacent numeric fields are fixed width; otherwise read all digits.
    const fixed = next !== undefined && next.kind === 'field'
    const m = (fixed ? new RegExp(`^[+-]?\\d{1,${maxWidth}}`) : /^[+-]?\d+/).exec(text.slice(pos))
    if (m === null) fail()
    pos += m![0].length
    return Number(m![0])
  }
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!
    const next = tokens[i + 1]
    if (t.kind === 'literal') {
      if (!text.startsWith(t.text, pos)) fail()
      pos += t.text.length
      continue
    }
    switch (t.letter) {
      case 'y':
      case 'Y':
      case 'u':
        year = num(t.width === 2 ? 2 : 4, next)
        if (t.width === 2) year += 2000
        break
      case 'M':
      case 'L':
        if (t.width >= 3) {
          const idx = MONTHS.findIndex((m) => text.startsWith(t.width >= 4 ? m : m.slice(0, 3), pos))
          if (idx < 0) fail()
          pos += t.width >= 4 ? MONTHS[idx]!.length : 3
          month = idx
        } else month = num(2, next) - 1
        break
      case 'd':
        day = num(2, next)
        break
      case 'H':
      case 'k':
        hour = num(2, next) % 24
        break
      case 'h':
      case 'K':
        hour = num(2, next) % 12
        break
      case 'm':
        minute = num(2, next)
        break
      case 's':
        second = num(2, next)
        break
      case 'S':
        ms = num(3, next)
        break
      case 'a':
        if (text.startsWith('AM', pos)) pm = false
        else if (text.startsWith('PM', pos)) pm = true
        else fail()
        pos += 2
        break
      case 'E': {
        const idx = DAYS.findIndex((dn) => text.startsWith(t.width >= 4 ? dn : dn.slice(0, 3), pos))
        if (idx < 0) fail()
        pos += t.width >= 4 ? DAYS[idx]!.length : 3
        break
      }
      case 'Z':
      case 'X': {
        if (text[pos] === 'Z') {
          pos++
          break
        }
        const m = /^([+-])(\d{2}):?(\d{2})?/.exec(text.slice(pos))
        if (m === null) fail()
        pos += m![0].length
        offsetMin = (m![1] === '-' ? -1 : 1) * (Number(m![2]) * 60 + Number(m![3] ?? 0))
        break
      }
      default:
        num(t.width, next)
    }
  }
  if (pos !== text.length) fail()
  if (pm === true) hour += 12
  return new Date(Date.UTC(year, month, day, hour, minute, second, ms) - offsetMin * 60000)
}
