// The broker-side JAAS config of a SASL mechanism, in the one-line form Kafka takes in
// listener.name.<listener>.<mechanism>.sasl.jaas.config:
//   org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="x" user_admin="x" user_alice="y";
// Only the options matter to Skein (PLAIN's user_<name> entries); the login module class and flag are
// read so that a malformed line is reported rather than half-used.

export interface JaasEntry {
  loginModule: string
  flag: string
  options: Map<string, string>
}

const TOKEN_RE = /\s*(?:"((?:\\.|[^"\\])*)"|([^\s=;"]+)|(=)|(;))/y

/** Parses one JAAS entry; throws Error with the reason (never with the values, which may be passwords). */
export function parseJaasConfig(text: string): JaasEntry {
  const tokens: { kind: 'word' | 'quoted' | '=' | ';'; value: string }[] = []
  let pos = 0
  const trimmed = text.trim()
  while (pos < trimmed.length) {
    TOKEN_RE.lastIndex = pos
    const m = TOKEN_RE.exec(trimmed)
    if (m === null || m[0].length === 0) throw new Error(`sasl.jaas.config: unexpected character at position ${pos}`)
    pos = TOKEN_RE.lastIndex
    if (m[1] !== undefined) tokens.push({ kind: 'quoted', value: m[1].replace(/\\(.)/g, '$1') })
    else if (m[2] !== undefined) tokens.push({ kind: 'word', value: m[2] })
    else if (m[3] !== undefined) tokens.push({ kind: '=', value: '=' })
    else tokens.push({ kind: ';', value: ';' })
  }
  if (tokens.length < 3 || tokens[0]!.kind !== 'word' || tokens[1]!.kind !== 'word') throw new Error('sasl.jaas.config: expected "<LoginModule> <flag> key=value ... ;"')
  if (tokens[tokens.length - 1]!.kind !== ';') throw new Error('sasl.jaas.config: the entry must end with ;')
  const flag = tokens[1]!.value
  if (!['required', 'requisite', 'sufficient', 'optional'].includes(flag)) throw new Error(`sasl.jaas.config: unknown control flag ${flag}`)
  const options = new Map<string, string>()
  let i = 2
  while (i < tokens.length - 1) {
    const key = tokens[i]
    const eq = tokens[i + 1]
    const value = tokens[i + 2]
    if (key?.kind !== 'word' || eq?.kind !== '=' || value === undefined || (value.kind !== 'word' && value.kind !== 'quoted')) {
      throw new Error('sasl.jaas.config: expected key=value options after the control flag')
    }
    options.set(key.value, value.value)
    i += 3
  }
  if (i !== tokens.length - 1) throw new Error('sasl.jaas.config: only one login module entry is supported')
  return { loginModule: tokens[0]!.value, flag, options }
}
