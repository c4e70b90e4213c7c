// Connect's ConfigDef (org.apache.kafka.common.config.ConfigDef as plugins use it): typed keys with
// defaults, validators, importance, documentation, groups and display hints; parse() turns a string map
// into typed values, validate() produces per-key results, and the REST API renders both as Kafka's
// ConfigKeyInfo / ConfigValueInfo bodies. Value parsing of the shared types is config/config-def.ts's
// (one parser for every Kafka-style setting); CLASS is Connect's own (a plugin name).
import { parseValue as parseTyped, type ConfigDef as TypedDef, type ConfigType as TypedType, type ConfigValue } from '../../config/config-def.js'

export type ConfigKeyType = 'BOOLEAN' | 'STRING' | 'INT' | 'SHORT' | 'LONG' | 'DOUBLE' | 'LIST' | 'CLASS' | 'PASSWORD'
export type Importance = 'HIGH' | 'MEDIUM' | 'LOW'
export type Width = 'NONE' | 'SHORT' | 'MEDIUM' | 'LONG'

/** Kafka's ConfigDef.NO_DEFAULT_VALUE: the key is required. */
export const NO_DEFAULT = Symbol('NO_DEFAULT')

export type Value = ConfigValue
/** Returns why value is not acceptable (the message Kafka's validator would put in a ConfigException), or undefined. */
export type Validator = ((name: string, value: Value) => string | undefined) & { describe?: string }

export interface Recommender {
  validValues(name: string, parsed: Readonly<Record<string, Value>>): Value[]
  visible(name: string, parsed: Readonly<Record<string, Value>>): boolean
}

export interface ConfigKey {
  name: string
  type: ConfigKeyType
  /** Typed default, NO_DEFAULT when required. null is a valid default (no value). */
  defaultValue: Value | typeof NO_DEFAULT
  validator?: Validator
  importance: Importance
  documentation: string
  group?: string | null
  orderInGroup?: number
  width?: Width
  displayName?: string
  dependents?: string[]
  recommender?: Recommender
  internal?: boolean
}

export class ConfigException extends Error {
  constructor(readonly key: string | null, message: string) {
    super(message)
    this.name = 'ConfigException'
  }
}

/** One key's outcome in validate(): its parsed value, problems and recommendations (Kafka's ConfigValue). */
export interface ConfigValueResult {
  name: string
  value: Value
  recommendedValues: Value[]
  errorMessages: string[]
  visible: boolean
}

const TYPED: Record<Exclude<ConfigKeyType, 'CLASS'>, TypedType> = {
  BOOLEAN: 'boolean',
  STRING: 'string',
  INT: 'int',
  SHORT: 'short',
  LONG: 'long',
  DOUBLE: 'double',
  LIST: 'list',
  PASSWORD: 'password',
}

export class ConfigDef {
  private readonly keys = new Map<string, ConfigKey>()
  private readonly groupOrder: string[] = []

  /** define(key) or define(name, type, default, importance, doc, extras). */
  define(key: ConfigKey): this
  define(name: string, type: ConfigKeyType, defaultValue: Value | typeof NO_DEFAULT, importance: Importance, documentation: string, extra?: Partial<ConfigKey>): this
  define(nameOrKey: string | ConfigKey, type?: ConfigKeyType, defaultValue?: Value | typeof NO_DEFAULT, importance?: Importance, documentation?: string, extra: Partial<ConfigKey> = {}): this {
    const key: ConfigKey = typeof nameOrKey === 'string' ? { name: nameOrKey, type: type!, defaultValue: defaultValue!, importance: importance!, documentation: documentation!, ...extra } : nameOrKey
    if (this.keys.has(key.name)) throw new ConfigException(key.name, `Configuration ${key.name} is defined twice.`)
    if (key.defaultValue !== NO_DEFAULT && key.defaultValue !== null && key.validator !== undefined) {
      const problem = key.validator(key.name, key.defaultValue)
      if (problem !== undefined) throw new ConfigException(key.name, `Invalid default for ${key.name}: ${problem}`)
    }
    if (key.group != null && !this.groupOrder.includes(key.group)) this.groupOrder.push(key.group)
    this.keys.set(key.name, key)
    return this
  }

  /** Every key of other added to this one (Kafka's ConfigDef(base) / embed without prefix). */
  include(other: ConfigDef): this {
    for (const k of other.configKeys()) if (!this.keys.has(k.name)) this.define(k)
    return this
  }

  /** other's keys under a prefix and group (Kafka's ConfigDef.embed, used for transforms and predicates). */
  embed(prefix: string, group: string, startingOrder: number, other: ConfigDef): this {
    let order = startingOrder
    for (const k of other.configKeys()) {
      this.define({ ...k, name: prefix + k.name, group, orderInGroup: order++, dependents: k.dependents?.map((d) => prefix + d) })
    }
    return this
  }

  configKeys(): ConfigKey[] {
    return [...this.keys.values()]
  }

  key(name: string): ConfigKey | undefined {
    return this.keys.get(name)
  }

  names(): string[] {
    return [...this.keys.keys()]
  }

  groups(): string[] {
    return [...this.groupOrder]
  }

  /**
   * Parses and validates every key: typed values (defaults filled in). Throws a ConfigException for the
   * first missing required key, unparsable value or validator failure, as Kafka's ConfigDef.parse.
   */
  parse(props: Readonly<Record<string, string | null | undefined>>): Record<string, Value> {
    const out: Record<string, Value> = {}
    for (const k of this.keys.values()) {
      const raw = props[k.name]
      out[k.name] = parseKey(k, raw)
    }
    return out
  }

  /** Kafka's ConfigDef.validate: per key its value and error messages; never throws for bad values. */
  validate(props: Readonly<Record<string, string | null | undefined>>): ConfigValueResult[] {
    const parsed: Record<string, Value> = {}
    const results = new Map<string, ConfigValueResult>()
    for (const k of this.keys.values()) {
      const r: ConfigValueResult = { name: k.name, value: null, recommendedValues: [], errorMessages: [], visible: true }
      try {
        const raw = props[k.name]
        if ((raw === undefined || raw === null) && k.defaultValue === NO_DEFAULT) {
          r.errorMessages.push(`Missing required configuration "${k.name}" which has no default value.`)
        } else {
          r.value = parseKey(k, raw)
          parsed[k.name] = r.value
        }
      } catch (err) {
        r.errorMessages.push((err as Error).message)
      }
      results.set(k.name, r)
    }
    for (const k of this.keys.values()) {
      if (k.recommender === undefined) continue
      const r = results.get(k.name)!
      try {
        r.recommendedValues = k.recommender.validValues(k.name, parsed)
        r.visible = k.recommender.visible(k.name, parsed)
      } catch (err) {
        r.errorMessages.push((err as Error).message)
      }
    }
    return [...results.values()]
  }
}

function parseKey(k: ConfigKey, raw: string | null | undefined): Value {
  let value: Value
  if (raw === undefined || raw === null) {
    if (k.defaultValue === NO_DEFAULT) throw new ConfigException(k.name, `Missing required configuration "${k.name}" which has no default value.`)
    value = k.defaultValue
  } else if (k.type === 'CLASS') {
    value = raw.trim()
  } else {
    const def: TypedDef = { name: k.name, type: TYPED[k.type], default: null, doc: '' }
    try {
      value = parseTyped(def, raw)
    } catch (err) {
      throw new ConfigException(k.name, (err as Error).message)
    }
  }
  if (k.validator !== undefined && !(value === null && raw == null)) {
    const problem = k.validator(k.name, value)
    if (problem !== undefined) throw new ConfigException(k.name, `Invalid value ${renderValue(k.type, value)} for configuration ${k.name}: ${problem}`)
  }
  return value
}

/** A value as Kafka renders it in ConfigKeyInfo.default_value and error messages. */
export function renderValue(type: ConfigKeyType, value: Value | typeof NO_DEFAULT): string | null {
  if (value === NO_DEFAULT || value === null) return null
  if (type === 'PASSWORD') return '[hidden]'
  if (Array.isArray(value)) return value.join(',')
  return String(value)
}

// Validators with Kafka's messages.
export const Validators = {
  atLeast(min: number): Validator {
    const v: Validator = (_n, value) => (typeof value === 'number' && value < min ? `Value must be at least ${min}` : undefined)
    v.describe = `[${min},...]`
    return v
  },
  between(min: number, max: number): Validator {
    const v: Validator = (_n, value) => (typeof value === 'number' && (value < min || value > max) ? (value < min ? `Value must be at least ${min}` : `Value must be no more than ${max}`) : undefined)
    v.describe = `[${min},...,${max}]`
    return v
  },
  in(...allowed: string[]): Validator {
    const v: Validator = (_n, value) => (typeof value === 'string' && !allowed.includes(value) ? `String must be one of: ${allowed.join(', ')}` : undefined)
    v.describe = `[${allowed.join(', ')}]`
    return v
  },
  inIgnoreCase(...allowed: string[]): Validator {
    const lower = allowed.map((a) => a.toLowerCase())
    const v: Validator = (_n, value) => (typeof value === 'string' && !lower.includes(value.toLowerCase()) ? `String must be one of (case insensitive): ${allowed.join(', ')}` : undefined)
    v.describe = `(case insensitive) [${allowed.join(', ')}]`
    return v
  },
  nonEmptyString(): Validator {
    const v: Validator = (_n, value) => (typeof value === 'string' && value.trim() === '' ? 'String may not be empty' : undefined)
    v.describe = 'non-empty string'
    return v
  },
  nonEmptyList(): Validator {
    const v: Validator = (_n, value) => (Array.isArray(value) && value.length === 0 ? 'Empty list' : undefined)
    v.describe = 'non-empty list'
    return v
  },
  regex(): Validator {
    const v: Validator = (_n, value) => {
      if (typeof value !== 'string') return undefined
      try {
        new RegExp(value)
        return undefined
      } catch (err) {
        return `Invalid regex: ${(err as Error).message}`
      }
    }
    v.describe = 'valid regex'
    return v
  },
  /** Each list item through item (the CompositeValidator / ValidList). */
  listOf(item: Validator): Validator {
    const v: Validator = (n, value) => {
      if (!Array.isArray(value)) return undefined
      for (const x of value) {
        const p = item(n, x)
        if (p !== undefined) return p
      }
      return undefined
    }
    v.describe = item.describe
    return v
  },
  all(...vs: Validator[]): Validator {
    const v: Validator = (n, value) => {
      for (const x of vs) {
        const p = x(n, value)
        if (p !== undefined) return p
      }
      return undefined
    }
    v.describe = vs.map((x) => x.describe).filter(Boolean).join(', ')
    return v
  },
}

/** Kafka's ConfigKeyInfo body (GET /connector-plugins/{p}/config and the validate answer's definitions). */
export function configKeyInfo(k: ConfigKey): Record<string, unknown> {
  return {
    name: k.name,
    type: k.type,
    required: k.defaultValue === NO_DEFAULT,
    default_value: renderValue(k.type, k.defaultValue),
    importance: k.importance,
    documentation: k.documentation,
    group: k.group ?? null,
    order_in_group: k.orderInGroup ?? -1,
    width: k.width ?? 'NONE',
    display_name: k.displayName ?? k.name,
    dependents: k.dependents ?? [],
  }
}

export function configValueInfo(k: ConfigKey | undefined, r: ConfigValueResult): Record<string, unknown> {
  const type = k?.type ?? 'STRING'
  return {
    name: r.name,
    value: r.value === null ? null : renderValue(type, r.value),
    recommended_values: r.recommendedValues.map((v) => renderValue(type, v)),
    errors: r.errorMessages,
    visible: r.visible,
  }
}
