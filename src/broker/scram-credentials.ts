// SCRAM credentials in the cluster metadata (DescribeUserScramCredentials, AlterUserScramCredentials),
// with Kafka's rules and error codes: one result per user; a user altered twice in one request gets
// DUPLICATE_RESOURCE, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, iterations outside
// [4096, 16384] or an empty name UNACCEPTABLE_CREDENTIAL, deleting or describing a credential that does
// not exist RESOURCE_NOT_FOUND. Credentials live in the user's config entity under the mechanism's name
// (Kafka's ZooKeeper layout /config/users/<sanitized user>), next to the user's quotas.
import { desanitizeEntityName, sanitizeEntityName } from '../auth/sanitize.js'
import {
  credentialFromSaltedPassword,
  formatScramCredential,
  parseScramCredential,
  SCRAM_MAX_ITERATIONS,
  SCRAM_MECHANISM_IDS,
  SCRAM_MECHANISMS,
  SCRAM_MIN_ITERATIONS,
  scramMechanismById,
} from '../auth/sasl/scram.js'
import type { MetadataStore } from '../cluster/metadata-store.js'
import { ErrorCode } from '../domain/errors.js'
import type { AlterUserScramCredentialsRequest, AlterUserScramCredentialsResult } from '../protocol/messages/51-alter-user-scram-credentials.gen.js'
import type { DescribeUserScramCredentialsResult } from '../protocol/messages/50-describe-user-scram-credentials.gen.js'

interface UserError {
  errorCode: number
  errorMessage: string
}

export class ScramCredentialService {
  /** Alterations are read-modify-write of a user's entity: one at a time. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(private readonly store: MetadataStore) {}

  async describe(users: readonly string[] | null): Promise<DescribeUserScramCredentialsResult[]> {
    const all = users === null || users.length === 0
    const names = all ? (await this.store.getEntityNames('users')).map(desanitizeEntityName) : [...users]
    const seen = new Map<string, number>()
    for (const n of names) seen.set(n, (seen.get(n) ?? 0) + 1)
    const results: DescribeUserScramCredentialsResult[] = []
    for (const user of new Set(names)) {
      if (seen.get(user)! > 1) {
        results.push({ user, errorCode: ErrorCode.DUPLICATE_RESOURCE, errorMessage: 'Cannot describe SCRAM credentials for the same user twice in a single request', credentialInfos: [] })
        continue
      }
      const config = await this.store.getEntityConfig('users', sanitizeEntityName(user))
      const credentialInfos = SCRAM_MECHANISMS.flatMap((m) => {
        const c = config[m] === undefined ? undefined : parseScramCredential(config[m])
        return c === undefined ? [] : [{ mechanism: SCRAM_MECHANISM_IDS[m], iterations: c.iterations }]
      })
      if (credentialInfos.length === 0) {
        // Describing everyone lists only users that have credentials.
        if (!all) results.push({ user, errorCode: ErrorCode.RESOURCE_NOT_FOUND, errorMessage: 'Attempt to describe a user credential that does not exist', credentialInfos: [] })
        continue
      }
      results.push({ user, errorCode: ErrorCode.NONE, errorMessage: null, credentialInfos })
    }
    return results
  }

  alter(req: AlterUserScramCredentialsRequest): Promise<AlterUserScramCredentialsResult[]> {
    const run = this.queue.then(() => this.doAlter(req))
    this.queue = run.catch(() => {})
    return run
  }

  private async doAlter(req: AlterUserScramCredentialsRequest): Promise<AlterUserScramCredentialsResult[]> {
    const order: string[] = []
    const errors = new Map<string, UserError>()
    const fail = (user: string, errorCode: number, errorMessage: string): void => {
      if (!errors.has(user)) errors.set(user, { errorCode, errorMessage })
    }
    const touched = new Map<string, Set<number>>()
    const all = [...req.deletions.map((d) => ({ ...d, upsert: undefined })), ...req.upsertions.map((u) => ({ name: u.name, mechanism: u.mechanism, upsert: u }))]
    for (const a of all) {
      if (!order.includes(a.name)) order.push(a.name)
      const mechanisms = touched.get(a.name) ?? new Set<number>()
      if (mechanisms.has(a.mechanism)) fail(a.name, ErrorCode.DUPLICATE_RESOURCE, 'A user credential cannot be altered twice in the same request')
      mechanisms.add(a.mechanism)
      touched.set(a.name, mechanisms)
      if (a.name === '') fail(a.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Username must not be empty')
      if (scramMechanismById(a.mechanism) === undefined) fail(a.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, 'Unknown SCRAM mechanism')
      if (a.upsert !== undefined) {
        if (a.upsert.iterations < SCRAM_MIN_ITERATIONS) fail(a.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Too few iterations')
        else if (a.upsert.iterations > SCRAM_MAX_ITERATIONS) fail(a.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Too many iterations')
        if (a.upsert.salt.length === 0 || a.upsert.saltedPassword.length === 0) fail(a.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Salt and salted password must not be empty')
      }
    }
    for (const user of order) {
      if (errors.has(user)) continue
      const entity = sanitizeEntityName(user)
      const config = { ...(await this.store.getEntityConfig('users', entity)) }
      let missing = false
      for (const d of req.deletions.filter((x) => x.name === user)) {
        const m = scramMechanismById(d.mechanism)!
        if (config[m] === undefined) missing = true
        delete config[m]
      }
      if (missing) {
        fail(user, ErrorCode.RESOURCE_NOT_FOUND, 'Attempt to delete a user credential that does not exist')
        continue
      }
      for (const u of req.upsertions.filter((x) => x.name === user)) {
        const m = scramMechanismById(u.mechanism)!
        config[m] = formatScramCredential(credentialFromSaltedPassword(m, u.salt, u.saltedPassword, u.iterations))
      }
      await this.store.setEntityConfig('users', entity, config)
    }
    return order.map((user) => {
      const e = errors.get(user)
      return { user, errorCode: e?.errorCode ?? ErrorCode.NONE, errorMessage: e?.errorMessage ?? null }
    })
  }
}
