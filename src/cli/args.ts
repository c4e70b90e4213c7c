// Command-line parsing with Kafka's tool conventions: long options (`--topic T` or `--topic=T`),
// repeatable options (`--property k=v --property k2=v2`), boolean flags, and a generated --help text.
// Unknown options and missing values are usage errors (one line, exit 1).

export interface OptionSpec {
  name: string
  /** Placeholder for the value; absent for a boolean flag. */
  value?: string
  /** The value may be left out (kafka-consumer-groups' `--state [STATES]`): the next argument is taken only if it is not an option. */
  optionalValue?: boolean
  repeat?: boolean
  desc: string
  /** Other spellings (Kafka's older names). */
  aliases?: string[]
}

export interface CommandSpec {
  /** 'skein topics' */
  command: string
  usage: string
  summary: string
  options: OptionSpec[]
  /** Extra text after the option table (examples). */
  notes?: string
}

/** A mistake in the command line: printed as one line, exit code 1. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

export class ParsedArgs {
  constructor(
    private readonly values: Map<string, string[]>,
    private readonly flags: Set<string>,
    readonly positionals: string[],
  ) {}

  has(name: string): boolean {
    return this.flags.has(name) || this.values.has(name)
  }

  /** The last value given for an option. */
  get(name: string): string | undefined {
    const v = this.values.get(name)
    return v === undefined ? undefined : v[v.length - 1]
  }

  all(name: string): string[] {
    return this.values.get(name) ?? []
  }

  require(name: string, why = ''): string {
    const v = this.get(name)
    if (v === undefined) throw new UsageError(`--${name} is required${why === '' ? '' : ` ${why}`}`)
    return v
  }

  int(name: string, opts: { min?: number; max?: number } = {}): number | undefined {
    const v = this.get(name)
    if (v === undefined) return undefined
    return parseIntArg(name, v, opts)
  }

  /** The options given, by name, for "exactly one of" checks. */
  given(names: readonly string[]): string[] {
    return names.filter((n) => this.has(n))
  }
}

export function parseIntArg(name: string, v: string, opts: { min?: number; max?: number } = {}): number {
  if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`--${name} needs an integer, not '${v}'`)
  const n = Number(v)
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} ${v} is out of range`)
  if (opts.min !== undefined && n < opts.min) throw new UsageError(`--${name} must be at least ${opts.min}, not ${n}`)
  if (opts.max !== undefined && n > opts.max) throw new UsageError(`--${name} must be at most ${opts.max}, not ${n}`)
  return n
}

export function parseArgs(spec: CommandSpec, argv: readonly string[]): ParsedArgs {
  const byName = new Map<string, OptionSpec>()
  for (const o of spec.options) {
    byName.set(o.name, o)
    for (const a of o.aliases ?? []) byName.set(a, o)
  }
  const values = new Map<string, string[]>()
  const flags = new Set<string>()
  const positionals: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '-h' || arg === '--help') {
      flags.add('help')
      continue
    }
    if (!arg.startsWith('--') || arg === '--') {
      if (arg === '--') {
        positionals.push(...argv.slice(i + 1))
        break
      }
      if (arg.startsWith('-') && arg.length > 1) throw new UsageError(`unknown option '${arg}' (see ${spec.command} --help)`)
      positionals.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = arg.slice(2, eq < 0 ? undefined : eq)
    const o = byName.get(name)
    if (o === undefined) throw new UsageError(`unknown option '--${name}' (see ${spec.command} --help)`)
    if (o.value === undefined) {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`)
      flags.add(o.name)
      continue
    }
    let v: string
    if (eq >= 0) v = arg.slice(eq + 1)
    else if (o.optionalValue === true && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('-'))) {
      flags.add(o.name)
      continue
    } else {
      const next = argv[i + 1]
      if (next === undefined) throw new UsageError(`--${name} needs a value (${o.value})`)
      v = next
      i++
    }
    const list = values.get(o.name)
    if (list === undefined) values.set(o.name, [v])
    else if (o.repeat === true) list.push(v)
    else throw new UsageError(`--${name} was given twice`)
  }
  return new ParsedArgs(values, flags, positionals)
}

export function helpText(spec: CommandSpec): string {
  const rows = spec.options.map((o) => {
    const names = [o.name, ...(o.aliases ?? [])].map((n) => `--${n}`).join(', ')
    return [`  ${names}${o.value === undefined ? '' : o.optionalValue === true ? ` [${o.value}]` : ` ${o.value}`}`, o.desc + (o.repeat === true ? ' (repeatable)' : '')]
  })
  rows.push(['  -h, --help', 'Show this help'])
  const width = Math.min(Math.max(...rows.map((r) => r[0]!.length)) + 2, 44)
  const lines = rows.map(([left, right]) => (left!.length + 2 > width ? `${left}\n${' '.repeat(width)}${right}` : left!.padEnd(width) + right))
  return `Usage: ${spec.usage}\n\n${spec.summary}\n\nOptions:\n${lines.join('\n')}${spec.notes === undefined ? '' : `\n\n${spec.notes}`}\n`
}

/** k=v items (a list of `k=v` strings, each possibly comma-separated, Kafka's [a,b] for list values). */
export function parseKeyValues(items: readonly string[], what: string, splitCommas = false): Map<string, string> {
  const out = new Map<string, string>()
  for (const item of items) {
    for (const part of splitCommas ? splitTopLevel(item) : [item]) {
      if (part.trim() === '') continue
      const eq = part.indexOf('=')
      if (eq <= 0) throw new UsageError(`${what} '${part}' is not key=value`)
      let value = part.slice(eq + 1)
      if (splitCommas && value.startsWith('[') && value.endsWith(']')) value = value.slice(1, -1)
      out.set(part.slice(0, eq).trim(), value)
    }
  }
  return out
}

/** Splits on commas outside [brackets] (kafka-configs: --add-config 'a=1,b=[x,y]'). */
function splitTopLevel(s: string): string[] {
  const out: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '[') depth++
    else if (s[i] === ']') depth = Math.max(0, depth - 1)
    else if (s[i] === ',' && depth === 0) {
      out.push(s.slice(start, i))
      start = i + 1
    }
  }
  out.push(s.slice(start))
  return out
}
