// `skein configs --entity-type users` with SCRAM credentials, as kafka-configs manages them
// (AlterUserScramCredentials / DescribeUserScramCredentials):
//   --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
//   --alter --delete-config 'SCRAM-SHA-512'
//   --describe   (with the user's quotas: "SCRAM credential configs for user-principal 'alice' are ...")
// The password is salted and hashed here; only the salted form reaches the broker.
import { SCRAM_MECHANISMS, type Admin, type ScramCredentialUpsert, type ScramMechanismName } from '../client/admin.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { UsageError } from './args.js'

export const isScramKey = (key: string): key is ScramMechanismName => key in SCRAM_MECHANISMS

/** Kafka's bounds on SCRAM iterations (ScramMechanism's minimum; the broker refuses more than 16384). */
const MIN_ITERATIONS = 4096
const MAX_ITERATIONS = 16384

/** The upsert for `SCRAM-SHA-256=[iterations=8192,password=...]` (the brackets already taken off). */
export function scramUpsert(user: string, mechanism: ScramMechanismName, spec: string): ScramCredentialUpsert {
  let password: string | undefined
  let iterations: number | undefined
  for (const part of spec.split(',')) {
    const eq = part.indexOf('=')
    const key = eq < 0 ? part.trim() : part.slice(0, eq).trim()
    const value = eq < 0 ? '' : part.slice(eq + 1)
    if (key === 'password') password = value
    else if (key === 'iterations') {
      iterations = Number(value)
      if (!Number.isSafeInteger(iterations) || iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) throw new UsageError(`${mechanism} iterations must be an integer from ${MIN_ITERATIONS} to ${MAX_ITERATIONS}, not '${value}'`)
    } else throw new UsageError(`${mechanism}=[...] takes password= and iterations=, not '${key}'`)
  }
  if (password === undefined || password === '') throw new UsageError(`${mechanism}=[...] needs password=`)
  return { user, mechanism, password, ...(iterations === undefined ? {} : { iterations }) }
}

/** Applies the SCRAM part of an --alter for one user. */
export async function alterScram(admin: Admin, user: string, adds: ReadonlyMap<string, string>, deletes: readonly ScramMechanismName[]): Promise<void> {
  const upserts = [...adds].map(([mechanism, spec]) => scramUpsert(user, mechanism as ScramMechanismName, spec))
  if (upserts.length === 0 && deletes.length === 0) return
  await admin.alterUserScramCredentials(upserts, deletes.map((mechanism) => ({ user, mechanism })))
}

/** kafka-configs' lines for users' SCRAM credentials: one user, or every user that has any. */
export async function describeScram(admin: Admin, user: string | undefined): Promise<string> {
  let described
  try {
    described = await admin.describeUserScramCredentials(user === undefined ? undefined : [user])
  } catch (err) {
    // A named user without credentials is RESOURCE_NOT_FOUND: nothing to print, as kafka-configs.
    if (err instanceof KafkaError && err.code === ErrorCode.RESOURCE_NOT_FOUND) return ''
    throw err
  }
  return described
    .filter((u) => u.credentials.length > 0)
    .map((u) => `SCRAM credential configs for user-principal '${u.user}' are ${u.credentials.map((c) => `${c.mechanism}=iterations=${c.iterations}`).join(', ')}\n`)
    .join('')
}
