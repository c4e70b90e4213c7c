// The names of Kafka's client security settings (security.protocol, sasl.*, ssl.*) as rows of the
// client-side products' config tables: the REST Proxy takes them under `client.` and the Schema Registry
// under `kafkastore.` (Confluent's prefixes), and a broker embeds both under its own prefixes
// (rest.client.*, schema.registry.kafkastore.*). The rows only carry the strings; client/
// client-security-config.ts is the one place that turns them into TLS and SASL options.
import type { ConfigDef } from './config-def.js'

/** Kafka's client security settings, without prefix (the set client/client-security-config.ts reads). */
export const CLIENT_SECURITY_NAMES: readonly string[] = [
  'security.protocol', 'sasl.mechanism', 'sasl.jaas.config',
  'ssl.truststore.location', 'ssl.truststore.type', 'ssl.truststore.password', 'ssl.truststore.certificates',
  'ssl.keystore.location', 'ssl.keystore.type', 'ssl.keystore.password', 'ssl.key.password', 'ssl.keystore.certificate.chain', 'ssl.keystore.key',
  'ssl.endpoint.identification.algorithm', 'ssl.protocol', 'ssl.enabled.protocols', 'ssl.cipher.suites',
]

/** Secrets are password-typed, so DescribeConfigs and the logs never show them. */
const SECRET = new Set(['sasl.jaas.config', 'ssl.truststore.password', 'ssl.keystore.password', 'ssl.key.password', 'ssl.keystore.key'])

const SHORT_DOCS: Record<string, string> = {
  'security.protocol': 'PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL',
  'sasl.mechanism': 'PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512',
  'sasl.jaas.config': 'the login: a LoginModule with username="..." password="..."',
}

/** One row per security setting under `prefix`, for a product whose Kafka clients are described as `whose`. */
export function clientSecurityRows<T extends ConfigDef>(prefix: string, whose: string, extra: Omit<T, keyof ConfigDef>): T[] {
  return CLIENT_SECURITY_NAMES.map((name) => ({
    ...extra,
    name: prefix + name,
    type: SECRET.has(name) ? 'password' : 'string',
    default: null,
    doc: `Kafka's ${name} for ${whose}${SHORT_DOCS[name] !== undefined ? ` (${SHORT_DOCS[name]})` : ''}. With no ${prefix}* setting, a broker's embedded service uses the broker's own inter-broker listener and login (docs/security.md).`,
  }) as T)
}

/** The settings of `values` under `prefix`, prefix removed, as strings (what client-security-config.ts reads). */
export function clientSecurityProps(prefix: string, get: (name: string) => unknown): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of CLIENT_SECURITY_NAMES) {
    const v = get(prefix + name)
    if (v !== null && v !== undefined) out.set(name, Array.isArray(v) ? v.join(',') : String(v))
  }
  return out
}
