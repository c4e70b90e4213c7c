// BASIC authentication of Connect's REST API with Kafka's names: the worker setting
//   rest.extension.classes=org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension
// turns it on, and the users come from the JAAS file's KafkaConnect section, as in Kafka:
//   KafkaConnect { org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required file="/path/connect.password"; };
// Kafka finds that file through the JVM flag -Djava.security.auth.login.config=...; Skein has no JVM, so it
// takes the same path from the worker setting java.security.auth.login.config, or else from that flag in
// the environment's KAFKA_OPTS (what Kafka's start scripts pass), so a Kafka deployment's files work as
// they are. The password file is Java properties, user=password.
//
// Worker-to-worker requests: a follower forwards a caller's write to the leader with the caller's own
// Authorization header (as Kafka's RestClient does). The one request no caller stands behind, a
// follower's POST /connectors/{c}/tasks with the task configs it computed, is let through without
// credentials only when it carries X-Connect-Authorization, and the route then checks that header: an
// HMAC-SHA256 of method, path and body. Kafka signs these with a session key the leader writes to the
// config topic (KIP-507); Skein has no session key yet, so the key is derived from the password file's
// users and passwords, which every worker of the group must share anyway to accept the same callers.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { BasicAuthenticator, parsePasswordProperties, type HttpUser, type RequestHead } from '../../http/index.js'

export const BASIC_AUTH_EXTENSION = 'org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension'
export const PROPERTY_FILE_LOGIN_MODULE = 'org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule'
/** The JAAS section Kafka's extension reads. Also the realm of the 401 challenge. */
export const JAAS_SECTION = 'KafkaConnect'
export const SIGNATURE_HEADER = 'X-Connect-Authorization'
export const SIGNATURE_ALGORITHM_HEADER = 'X-Connect-Request-Signature-Algorithm'
const SIGNATURE_ALGORITHM = 'HmacSHA256'

/** The internal request that is signed instead of authenticated: a follower's task configs for the leader. */
const INTERNAL_TASKS_PATH = /^\/connectors\/[^/]+\/tasks\/?$/

/** Signs and checks worker-to-worker requests. */
export class InternalRequestSigner {
  constructor(private readonly key: Buffer) {}

  /** Derives the key from the users of the password file (the same on every worker that shares the file). */
  static fromUsers(users: ReadonlyMap<string, HttpUser>): InternalRequestSigner {
    const h = createHash('sha256').update('skein-connect-internal-request-key\0')
    for (const name of [...users.keys()].sort()) h.update(`${name}\0${users.get(name)!.password}\0`)
    return new InternalRequestSigner(h.digest())
  }

  /** The headers that sign this request. */
  sign(method: string, path: string, body: Buffer | string): Record<string, string> {
    return { [SIGNATURE_HEADER]: this.mac(method, path, body).toString('base64'), [SIGNATURE_ALGORITHM_HEADER]: SIGNATURE_ALGORITHM }
  }

  /** Whether signature (the X-Connect-Authorization value) signs this request. */
  verify(method: string, path: string, body: Buffer, signature: string): boolean {
    const sent = Buffer.from(signature, 'base64')
    const expected = this.mac(method, path, body)
    return sent.length === expected.length && timingSafeEqual(sent, expected)
  }

  private mac(method: string, path: string, body: Buffer | string): Buffer {
    return createHmac('sha256', this.key).update(`${method.toUpperCase()}\0${path}\0`).update(body).digest()
  }
}

export interface ConnectRestAuth {
  authenticator: BasicAuthenticator
  signer: InternalRequestSigner
}

/** Whether a request is the internal one that may come signed instead of authenticated. */
export function isSignedInternalRequest(head: RequestHead): boolean {
  return head.method === 'POST' && INTERNAL_TASKS_PATH.test(head.path) && head.header(SIGNATURE_HEADER.toLowerCase()) !== ''
}

/**
 * The REST authentication rest.extension.classes asks for, or null when it names none. Throws, naming
 * it, on an unknown extension class, and on a missing or malformed JAAS file or password file.
 */
export function connectRestAuth(extensionClasses: readonly string[], loginConfigSetting: string | null, env: NodeJS.ProcessEnv = process.env): ConnectRestAuth | null {
  for (const c of extensionClasses) {
    if (c !== BASIC_AUTH_EXTENSION) throw new Error(`rest.extension.classes: unknown REST extension class ${c} (Skein provides ${BASIC_AUTH_EXTENSION})`)
  }
  if (!extensionClasses.includes(BASIC_AUTH_EXTENSION)) return null
  const jaasPath = loginConfigSetting !== null && loginConfigSetting !== '' ? loginConfigSetting : loginConfigFromKafkaOpts(env['KAFKA_OPTS'] ?? '')
  if (jaasPath === null) {
    throw new Error(`${BASIC_AUTH_EXTENSION} needs a JAAS file with a ${JAAS_SECTION} section: set java.security.auth.login.config in the worker config (or -Djava.security.auth.login.config=... in KAFKA_OPTS)`)
  }
  const passwordFile = passwordFileFromJaas(readText(jaasPath, 'java.security.auth.login.config'), jaasPath)
  const users = parsePasswordProperties(readText(passwordFile, `the ${JAAS_SECTION} password file`), passwordFile)
  return {
    authenticator: new BasicAuthenticator({ realm: JAAS_SECTION, users, exempt: isSignedInternalRequest }),
    signer: InternalRequestSigner.fromUsers(users),
  }
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    throw new Error(`${what} ${path}: ${(err as Error).message}`)
  }
}

/** -Djava.security.auth.login.config=PATH in KAFKA_OPTS (optionally quoted), or null. */
export function loginConfigFromKafkaOpts(opts: string): string | null {
  const m = /(?:^|\s)-Djava\.security\.auth\.login\.config=(?:"([^"]*)"|'([^']*)'|(\S+))/.exec(opts)
  return m === null ? null : (m[1] ?? m[2] ?? m[3]!)
}

/**
 * The file option of the KafkaConnect section's PropertyFileLoginModule in a JAAS file:
 *   KafkaConnect { <module> <flag> key="value" ...; };   with // and /* *\/ comments.
 */
export function passwordFileFromJaas(text: string, source: string): string {
  const stripped = text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ')
  const section = new RegExp(`(?:^|[\\s;}])${JAAS_SECTION}\\s*\\{([\\s\\S]*?)\\}\\s*;`).exec(stripped)
  if (section === null) throw new Error(`${source}: no ${JAAS_SECTION} { ... }; section`)
  const entries = section[1]!.split(';').map((e) => e.trim()).filter((e) => e !== '')
  if (entries.length !== 1) throw new Error(`${source}: the ${JAAS_SECTION} section must have exactly one login module entry, it has ${entries.length}`)
  const m = /^(\S+)\s+(required|requisite|sufficient|optional)\b([\s\S]*)$/.exec(entries[0]!)
  if (m === null) throw new Error(`${source}: the ${JAAS_SECTION} entry must be '<LoginModule> required file="...";'`)
  if (m[1] !== PROPERTY_FILE_LOGIN_MODULE) throw new Error(`${source}: login module ${m[1]} is not supported in ${JAAS_SECTION} (Skein provides ${PROPERTY_FILE_LOGIN_MODULE})`)
  const options = new Map<string, string>()
  const optionRe = /\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s"]+))/y
  const rest = m[3]!.trimEnd()
  let pos = 0
  while (pos < rest.length) {
    optionRe.lastIndex = pos
    const o = optionRe.exec(rest)
    if (o === null) throw new Error(`${source}: malformed option in the ${JAAS_SECTION} entry near position ${pos}`)
    options.set(o[1]!, o[2] !== undefined ? o[2].replace(/\\(.)/g, '$1') : o[3]!)
    pos = optionRe.lastIndex
  }
  const file = options.get('file')
  if (file === undefined || file === '') throw new Error(`${source}: the ${JAAS_SECTION} entry needs file="/path/to/password-file"`)
  return file
}
