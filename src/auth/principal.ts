// Principals as Kafka writes them ("User:alice"), and ssl.principal.mapping.rules: how the subject of a
// client certificate becomes a user name (Kafka's SslPrincipalMapper).

/** The principal of a connection before (or without) authentication. */
export const ANONYMOUS = 'User:ANONYMOUS'

export function userPrincipal(name: string): string {
  return `User:${name}`
}

interface MappingRule {
  /** undefined: DEFAULT (the subject unchanged). */
  pattern?: RegExp
  replacement?: string
  caseChange?: 'L' | 'U'
}

// RULE:pattern/replacement/ with an optional L or U; a slash inside the pattern or replacement is written \/.
const RULE_RE = /^RULE:((?:\\.|[^\\/])*)\/((?:\\.|[^\\/])*)\/([LU]?)$/

/** Parses ssl.principal.mapping.rules; throws Error naming the rule that is malformed. */
export function parsePrincipalMappingRules(text: string): MappingRule[] {
  const rules: MappingRule[] = []
  // Rules are separated by commas that end a rule: after "DEFAULT" or after a RULE's closing slash (+L/U).
  const parts = text.trim() === '' ? ['DEFAULT'] : splitRules(text)
  for (const raw of parts) {
    const rule = raw.trim()
    if (rule === 'DEFAULT') {
      rules.push({})
      continue
    }
    const m = RULE_RE.exec(rule)
    if (m === null) throw new Error(`invalid rule '${rule}' in ssl.principal.mapping.rules (expected RULE:pattern/replacement/[LU] or DEFAULT)`)
    rules.push({ pattern: new RegExp(`^(?:${m[1]!.replace(/\\\//g, '/')})$`), replacement: m[2]!.replace(/\\\//g, '/'), caseChange: (m[3] || undefined) as 'L' | 'U' | undefined })
  }
  return rules
}

function splitRules(text: string): string[] {
  const out: string[] = []
  const re = /\s*(DEFAULT|RULE:(?:\\.|[^\\/])*\/(?:\\.|[^\\/])*\/[LU]?)\s*(?:,|$)/y
  let pos = 0
  while (pos < text.length) {
    re.lastIndex = pos
    const m = re.exec(text)
    if (m === null) throw new Error(`invalid ssl.principal.mapping.rules at '${text.slice(pos)}'`)
    out.push(m[1]!)
    pos = re.lastIndex
  }
  return out
}

/** The user name of a certificate subject: the first rule whose pattern matches wins; none: the subject. */
export function mapSubject(rules: readonly MappingRule[], subject: string): string {
  for (const rule of rules) {
    if (rule.pattern === undefined) return subject
    if (!rule.pattern.test(subject)) continue
    // Java's $1 group references are JavaScript's too.
    let name = subject.replace(rule.pattern, rule.replacement!)
    if (rule.caseChange === 'L') name = name.toLowerCase()
    else if (rule.caseChange === 'U') name = name.toUpperCase()
    return name
  }
  return subject
}

/**
 * A certificate subject in RFC 2253 form, as Java's X500Principal.getName() gives it (most specific
 * attribute first: "CN=alice,OU=dev,O=Example,C=US"). Node's X509Certificate.subject lists the
 * attributes one per line in certificate order (least specific first).
 */
export function rfc2253Subject(nodeSubject: string): string {
  return nodeSubject
    .split('\n')
    .filter((l) => l !== '')
    .reverse()
    .map((attr) => {
      const eq = attr.indexOf('=')
      const value = attr.slice(eq + 1).replace(/([,+"\\<>;])/g, '\\$1')
      return `${attr.slice(0, eq)}=${value}`
    })
    .join(',')
}
