// The shape of one config definition (Kafka's ConfigDef.ConfigKey, reduced to what Skein uses) and the
// value parsing shared by broker and topic configs. Values arrive as strings (server.properties,
// --override, CreateTopics/AlterConfigs requests); they are parsed once, here, into typed values.

import { ErrorCode, KafkaError } from '../domain/errors.js'

/** Kafka's ConfigDef types; `long` values beyond 2^53 are kept as (inexact) doubles, see LONG_MAX. */
export type ConfigType = 'boolean' | 'int' | 'short' | 'long' | 'double' | 'string' | 'list' | 'password'

export type ConfigValue = boolean | number | string | string[] | null

/**
 * Kafka's dynamic update modes for broker configs: `read-only` needs a restart, `per-broker` can be
 * altered for one broker, `cluster-wide` for one broker or as the cluster default.
 */
export type DynamicMode = 'read-only' | 'per-broker' | 'cluster-wide'

/** DescribeConfigs `configSource` (org.apache.kafka.clients.admin.ConfigEntry.ConfigSource ids). */
export const ConfigSource = {
  UNKNOWN: 0,
  DYNAMIC_TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
  DYNAMIC_BROKER_LOGGER_CONFIG: 6,
  CLIENT_METRICS_CONFIG: 7,
  GROUP_CONFIG: 8,
} as const
export type ConfigSource = (typeof ConfigSource)[keyof typeof ConfigSource]

/** DescribeConfigs (v3+) `configType` ids (DescribeConfigsResponse ConfigType). */
export const DescribeConfigType: Record<ConfigType, number> = {
  boolean: 1,
  string: 2,
  int: 3,
  short: 4,
  long: 5,
  double: 6,
  list: 7,
  password: 9,
}

/** Java's Long.MAX_VALUE, as close as a double gets (2^63). Rendered back as 9223372036854775807. */
export const LONG_MAX = 2 ** 63
/** Java's Long.MIN_VALUE (-2^63), exact in a double. */
export const LONG_MIN = -(2 ** 63)
const INT_MAX = 2 ** 31 - 1
const INT_MIN = -(2 ** 31)

/** One layer of broker values (canonical names), in precedence order highest first. */
export interface ConfigLayer {
  source: ConfigSource
  values: ReadonlyMap<string, ConfigValue>
}

/**
 * What the topic-config table needs from the broker's configuration to resolve topic defaults: its
 * value layers and how a value is shown. BrokerConfig implements it; keeping it an interface here lets
 * topic-configs.ts depend on this file instead of on broker-config.ts (which depends on topic-configs.ts).
 */
export interface BrokerValueLayers {
  /** Value layers, highest precedence first (the DEFAULT_CONFIG layer is each definition's default). */
  layers(): readonly ConfigLayer[]
  /** The string form Kafka reports for a value of this broker config. */
  format(name: string, value: ConfigValue): string | null
}

/** Returns why a parsed value is not acceptable, or undefined when it is. */
export type Validator = (value: ConfigValue) => string | undefined

export interface ConfigDef {
  name: string
  type: ConfigType
  /** Parsed default; null means "no default" (Kafka's null default). */
  default: ConfigValue
  doc: string
  validator?: Validator
  /** Human-readable valid values for the reference table, e.g. `[1,...]`. */
  validValues?: string
  sensitive?: boolean
}

/** Kafka's ConfigException: a config key with a bad or unknown value. Maps to INVALID_CONFIG. */
export class ConfigException extends KafkaError {
  readonly key: string

  constructor(key: string, message: string) {
    super(ErrorCode.INVALID_CONFIG, message)
    this.name = 'ConfigException'
    this.key = key
  }
}

const INTEGER_RE = /^[+-]?\d+$/
const DOUBLE_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/

function parseInteger(def: ConfigDef, text: string, min: number, max: number): number {
  if (!INTEGER_RE.test(text)) throw new ConfigException(def.name, `Invalid value ${text} for configuration ${def.name}: Not a number of type ${def.type.toUpperCase()}`)
  const big = BigInt(text)
  if (big < BigInt(min) || big > (max === LONG_MAX ? 2n ** 63n - 1n : BigInt(max))) {
    throw new ConfigException(def.name, `Invalid value ${text} for configuration ${def.name}: Not a number of type ${def.type.toUpperCase()}`)
  }
  return Number(big)
}

/**
 * Parses the string form of a value (as it appears in a .properties file or a Kafka request) and runs
 * the definition's validator. Throws ConfigException naming the key and the expected type.
 */
export function parseValue(def: ConfigDef, raw: string | null): ConfigValue {
  if (raw === null) {
    if (def.default === null) return null
    throw new ConfigException(def.name, `Invalid value null for configuration ${def.name}: a value is required`)
  }
  // Kafka's ConfigDef.parseType trims every string form, passwords included.
  const text = raw.trim()
  let value: ConfigValue
  switch (def.type) {
    case 'boolean': {
      const lower = text.toLowerCase()
      if (lower !== 'true' && lower !== 'false') {
        throw new ConfigException(def.name, `Invalid value ${text} for configuration ${def.name}: Expected value to be either true or false`)
      }
      value = lower === 'true'
      break
    }
    case 'short':
      value = parseInteger(def, text, -32768, 32767)
      break
    case 'int':
      value = parseInteger(def, text, INT_MIN, INT_MAX)
      break
    case 'long':
      value = parseInteger(def, text, LONG_MIN, LONG_MAX)
      break
    case 'double': {
      if (!DOUBLE_RE.test(text)) throw new ConfigException(def.name, `Invalid value ${text} for configuration ${def.name}: Not a number of type DOUBLE`)
      value = Number(text)
      break
    }
    case 'list':
      value = text === '' ? [] : text.split(',').map((s) => s.trim())
      break
    case 'string':
    case 'password':
      value = text
      break
  }
  validate(def, value)
  return value
}

/** Runs the validator on an already typed value; throws ConfigException. */
export function validate(def: ConfigDef, value: ConfigValue): void {
  if (value === null || def.validator === undefined) return
  const reason = def.validator(value)
  if (reason !== undefined) {
    throw new ConfigException(def.name, `Invalid value ${formatValue(def, value)} for configuration ${def.name}: ${reason}`)
  }
}

/** The string form Kafka reports in DescribeConfigs (and that parseValue accepts back). */
export function formatValue(def: Pick<ConfigDef, 'type'>, value: ConfigValue): string | null {
  if (value === null) return null
  if (Array.isArray(value)) return value.join(',')
  if (typeof value === 'number') {
    if (def.type === 'long' && value >= LONG_MAX) return '9223372036854775807'
    if (def.type === 'long' && value <= LONG_MIN) return '-9223372036854775808'
    if (def.type === 'double' && Number.isInteger(value)) return value.toFixed(1)
    return String(value)
  }
  return String(value)
}

// Validators, named after Kafka's ConfigDef.Range / ValidString / ValidList.

const HTTP_LISTENER = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(\[[0-9A-Fa-f:.]*\]|[^:/[\]]*):\d{1,5}\/?$/

/** An HTTP service's listeners: scheme://host:port items (the HTTP adapter checks the scheme and port when it binds). */
export const httpListeners: Validator = (v) => {
  if (!Array.isArray(v)) return undefined
  const bad = v.find((l) => !HTTP_LISTENER.test(l))
  return bad === undefined ? undefined : `'${bad}' is not a listener URL, expected http://host:port or https://host:port`
}

export function atLeast(min: number): Validator {
  return (v) => (typeof v === 'number' && v < min ? `Value must be at least ${min}` : undefined)
}

export function between(min: number, max: number): Validator {
  return (v) => (typeof v === 'number' && (v < min || v > max) ? `Value must be no less than ${min} and no more than ${max}` : undefined)
}

export function oneOf(...allowed: string[]): Validator {
  return (v) => (typeof v === 'string' && !allowed.includes(v) ? `String must be one of: ${allowed.join(', ')}` : undefined)
}

/** Every element must be one of `allowed`; no duplicates; empty allowed only when `allowEmpty`. */
export function listOf(allowed: readonly string[], allowEmpty: boolean): Validator {
  return (v) => {
    if (!Array.isArray(v)) return undefined
    if (v.length === 0) return allowEmpty ? undefined : 'Empty list is not allowed'
    const bad = v.find((s) => !allowed.includes(s))
    if (bad !== undefined) return `Invalid value ${bad}; must be one of: ${allowed.join(', ')}`
    if (new Set(v).size !== v.length) return 'Values must not be duplicated'
    return undefined
  }
}

export function nonEmptyString(): Validator {
  return (v) => (typeof v === 'string' && v.length === 0 ? 'String must be non-empty' : undefined)
}

/** Levenshtein distance, for "did you mean" suggestions on misspelt keys. */
export function editDistance(a: string, b: string): number {
  const prev = new Array<number>(b.length + 1)
  for (let j = 0; j <= b.length; j++) prev[j] = j
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!
    prev[0] = i
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1))
      diag = up
    }
  }
  return prev[b.length]!
}

/** The closest known name to `key`, when it is close enough to be a likely typo. */
export function closestKey(key: string, known: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const name of known) {
    const d = editDistance(key, name)
    if (d < bestDistance) {
      best = name
      bestDistance = d
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(key.length / 4)) ? best : undefined
}
