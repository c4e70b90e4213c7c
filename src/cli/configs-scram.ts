// `skein configs --entity-type users --entity-name alice --alter --add-config 'SCRAM-SHA-512=[password=...]'`:
// SCRAM credentials, as kafka-configs manages them (AlterUserScramCredentials). The password is salted by
// the client (Admin.alterUserScramCredentials), so the broker never receives it.
//   --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
//   --delete-config SCRAM-SHA-512
import { Admin, SCRAM_ITERATIONS, type ScramCredentialAlteration, type ScramMechanismName } from '../client/admin.js'
import { parseKeyValues, UsageError, type ParsedArgs } from './args.js'
import { adminOptions } from './common.js'

const MECHANISMS: readonly ScramMechanismName[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512']

const isScramKey = (key: string): boolean => key.trim().startsWith('SCRAM-')

/** True when --add-config or --delete-config names a SCRAM mechanism (a credential, not a quota). */
export function isScramCommand(args: ParsedArgs): boolean {
  const keys = [...parseKeyValues(args.all('add-config'), '--add-config', true).keys(), ...args.all('delete-config').flatMap((d) => d.split(','))]
  return keys.some(isScramKey)
}

function mechanism(key: string): ScramMechanismName {
  const m = MECHANISMS.find((name) => name === key.trim())
  if (m === undefined) throw new UsageError(`'${key}' is not a SCRAM mechanism (${MECHANISMS.join(', ')})`)
  return m
}

/** The user the command names: --entity-type users --entity-name NAME, or --user NAME. */
function userName(args: ParsedArgs): string {
  const types = args.all('entity-type')
  const names = args.all('entity-name')
  if (args.has('entity-default') || args.has('user-defaults')) throw new UsageError('SCRAM credentials belong to a user: give --entity-name, not a default')
  if (args.has('user')) {
    if (types.length > 0) throw new UsageError('give --user or --entity-type users, not both')
    return args.get('user')!
  }
  if (types.length !== 1 || (types[0] !== 'users' && types[0] !== 'user')) throw new UsageError('SCRAM credentials are configs of --entity-type users (one user)')
  if (names.length !== 1 || names[0]!.trim() === '') throw new UsageError('--entity-type users needs --entity-name USER for SCRAM credentials')
  return names[0]!
}

/** One mechanism's `[iterations=N,password=P]` (the brackets already removed). */
function upsertion(user: string, m: ScramMechanismName, spec: string): ScramCredentialAlteration {
  let password: string | undefined
  let iterations: number = SCRAM_ITERATIONS.min
  for (const part of spec.split(',')) {
    const eq = part.indexOf('=')
    const key = eq > 0 ? part.slice(0, eq).trim() : ''
    const value = part.slice(eq + 1)
    if (key === 'password') password = value
    else if (key === 'iterations') {
      iterations = Number(value)
      if (!Number.isInteger(iterations) || iterations < SCRAM_ITERATIONS.min || iterations > SCRAM_ITERATIONS.max) {
        throw new UsageError(`${m} iterations '${value}': a whole number from ${SCRAM_ITERATIONS.min} to ${SCRAM_ITERATIONS.max}`)
      }
    } else throw new UsageError(`${m}=[${spec}]: expected [password=...] or [iterations=N,password=...]`)
  }
  if (password === undefined || password === '') throw new UsageError(`${m} needs a password: '${m}=[password=...]'`)
  return { op: 'upsert', user, mechanism: m, password, iterations }
}

export async function runScramConfigs(args: ParsedArgs, action: 'describe' | 'alter'): Promise<number> {
  if (action !== 'alter') throw new UsageError('SCRAM credentials are altered with --alter')
  const user = userName(args)
  const adds = parseKeyValues(args.all('add-config'), '--add-config', true)
  const deletes = args.all('delete-config').flatMap((d) => d.split(',')).map((d) => d.trim()).filter((d) => d !== '')
  const other = [...adds.keys(), ...deletes].filter((k) => !isScramKey(k))
  if (other.length > 0) throw new UsageError(`alter SCRAM credentials and quotas (${other.join(', ')}) in separate commands`)
  const alterations: ScramCredentialAlteration[] = []
  for (const [key, spec] of adds) alterations.push(upsertion(user, mechanism(key), spec))
  for (const key of deletes) {
    const m = mechanism(key)
    if (adds.has(m)) throw new UsageError(`config '${m}' is both added and deleted`)
    alterations.push({ op: 'delete', user, mechanism: m })
  }
  const admin = new Admin(adminOptions(args, 'skein configs', 'skein-configs'))
  try {
    await admin.alterUserScramCredentials(alterations)
    process.stdout.write(`Completed updating config for user ${user}.\n`)
    return 0
  } finally {
    await admin.close()
  }
}
