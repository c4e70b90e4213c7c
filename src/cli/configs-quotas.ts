// `skein configs --entity-type users|clients`: client quotas, as kafka-configs manages them
// (DescribeClientQuotas / AlterClientQuotas). An entity is a user, a client-id, or both:
//   --entity-type users --entity-name alice [--entity-type clients --entity-name app]
//   --entity-type clients --entity-default            (the default client-id)
//   --user alice --client app, --user-defaults, --client-defaults  (kafka-configs' shorthands)
// The n-th --entity-name / --entity-default goes with the n-th --entity-type, as in kafka-configs.
import { Admin } from '../client/admin.js'
import { parseKeyValues, UsageError, type ParsedArgs } from './args.js'
import { adminOptions } from './common.js'
import { alterScram, describeScram, isScramKey } from './configs-scram.js'

type EntityType = 'user' | 'client-id'

interface Component {
  entityType: EntityType
  /** A name, null for the default entity, undefined when none was given (describe: any). */
  name?: string | null
}

const TYPES: Readonly<Record<string, EntityType>> = { users: 'user', user: 'user', clients: 'client-id', client: 'client-id' }

/** True when the command is about users or clients entities (client quotas and users' SCRAM credentials). */
export function isQuotaCommand(args: ParsedArgs): boolean {
  const types = args.all('entity-type')
  return args.has('user') || args.has('client') || args.has('user-defaults') || args.has('client-defaults') || (types.length > 0 && types.every((t) => TYPES[t] !== undefined))
}

/** The entity's components in command-line order. */
function components(argv: readonly string[]): Component[] {
  const types: EntityType[] = []
  const names: (string | null)[] = []
  const shorthand: Component[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const eq = arg.indexOf('=')
    const flag = eq >= 0 ? arg.slice(0, eq) : arg
    const value = (): string => (eq >= 0 ? arg.slice(eq + 1) : argv[++i] ?? '')
    if (flag === '--entity-type') {
      const raw = value()
      const t = TYPES[raw]
      if (t === undefined) throw new UsageError(`--entity-type '${raw}' cannot be combined with users or clients`)
      types.push(t)
    } else if (flag === '--entity-name') names.push(value())
    else if (flag === '--entity-default') names.push(null)
    else if (flag === '--user') shorthand.push({ entityType: 'user', name: value() })
    else if (flag === '--client') shorthand.push({ entityType: 'client-id', name: value() })
    else if (flag === '--user-defaults') shorthand.push({ entityType: 'user', name: null })
    else if (flag === '--client-defaults') shorthand.push({ entityType: 'client-id', name: null })
  }
  if (names.length > types.length) throw new UsageError('more --entity-name / --entity-default than --entity-type')
  const out: Component[] = types.map((entityType, i) => (i < names.length ? { entityType, name: names[i] } : { entityType }))
  out.push(...shorthand)
  if (new Set(out.map((c) => c.entityType)).size !== out.length) throw new UsageError('an entity names users and clients at most once each')
  // Kafka's order: user before client-id.
  return out.sort((a, b) => (a.entityType === b.entityType ? 0 : a.entityType === 'user' ? -1 : 1))
}

function describeEntity(entity: Record<string, string | null>): string {
  const parts: string[] = []
  for (const [type, label] of [['user', 'user-principal'], ['client-id', 'client-id']] as const) {
    if (!(type in entity)) continue
    const name = entity[type]
    parts.push(name === null ? `the default ${label}` : `${label} '${name}'`)
  }
  return parts.join(', ')
}

function formatValue(v: number): string {
  return Number.isInteger(v) ? `${v}.0` : String(v)
}

export async function runQuotaConfigs(args: ParsedArgs, argv: readonly string[], action: 'describe' | 'alter'): Promise<number> {
  const entity = components(argv)
  if (entity.length === 0) throw new UsageError('--entity-type users|clients is required')
  const admin = new Admin(adminOptions(args, 'skein configs', 'skein-configs'))
  try {
    if (action === 'describe') {
      const entries = await admin.describeClientQuotas(entity.map((c) => ({ entityType: c.entityType, match: c.name })), true)
      let out = ''
      for (const e of entries) {
        const values = Object.entries(e.values).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${formatValue(v)}`)
        out += `Quota configs for ${describeEntity(e.entity)} are ${values.join(', ')}\n`
      }
      // A user entity alone (a name or every user) also has SCRAM credentials, as kafka-configs shows them.
      const only = entity.length === 1 ? entity[0]! : undefined
      if (only?.entityType === 'user' && only.name !== null) out += await describeScram(admin, only.name)
      process.stdout.write(out)
      return 0
    }
    if (entity.some((c) => c.name === undefined)) throw new UsageError('--alter needs --entity-name or --entity-default for each --entity-type')
    const allAdds = parseKeyValues(args.all('add-config'), '--add-config', true)
    const allDeletes = args.all('delete-config').flatMap((d) => d.split(',')).map((d) => d.trim()).filter((d) => d !== '')
    if (allAdds.size === 0 && allDeletes.length === 0) throw new UsageError('--alter needs --add-config and/or --delete-config')
    // SCRAM-SHA-256 / SCRAM-SHA-512 are a user's credentials, not quotas (kafka-configs takes both at once).
    for (const key of [...allAdds.keys(), ...allDeletes]) {
      if (key.toUpperCase().startsWith('SCRAM-') && !isScramKey(key)) throw new UsageError(`'${key}' is not a SCRAM mechanism (SCRAM-SHA-256, SCRAM-SHA-512)`)
    }
    const scramAdds = new Map([...allAdds].filter(([k]) => isScramKey(k)))
    const scramDeletes = allDeletes.filter(isScramKey)
    const adds = new Map([...allAdds].filter(([k]) => !isScramKey(k)))
    const deletes = allDeletes.filter((d) => !isScramKey(d))
    if (scramAdds.size > 0 || scramDeletes.length > 0) {
      const user = entity.length === 1 && entity[0]!.entityType === 'user' ? entity[0]!.name : undefined
      if (typeof user !== 'string') throw new UsageError('SCRAM credentials belong to one user: --entity-type users --entity-name USER alone')
      for (const d of scramDeletes) if (scramAdds.has(d)) throw new UsageError(`config '${d}' is both added and deleted`)
      await alterScram(admin, user, scramAdds, scramDeletes)
      if (adds.size === 0 && deletes.length === 0) {
        process.stdout.write(`Completed updating config for user ${user}.\n`)
        return 0
      }
    }
    const ops: Record<string, number | null> = {}
    for (const [key, raw] of adds) {
      const value = Number(raw)
      if (raw.trim() === '' || !Number.isFinite(value)) throw new UsageError(`--add-config ${key}=${raw}: a quota is a number`)
      ops[key] = value
    }
    for (const d of deletes) {
      if (d in ops) throw new UsageError(`config '${d}' is both added and deleted`)
      ops[d] = null
    }
    const target = Object.fromEntries(entity.map((c) => [c.entityType, c.name ?? null]))
    await admin.alterClientQuotas([{ entity: target, ops }])
    const names = entity.map((c) => `${c.entityType === 'user' ? 'user' : 'client-id'} ${c.name === null ? '<default>' : c.name}`)
    process.stdout.write(`Completed updating config for ${names.join(', ')}.\n`)
    return 0
  } finally {
    await admin.close()
  }
}
