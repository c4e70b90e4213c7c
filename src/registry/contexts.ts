// Confluent's schema contexts: a subject may be qualified as ":.ctx:subject" to live in context ".ctx",
// with its own id space; an unqualified subject is in the default context ".". A subject ":.ctx:" (empty
// subject) names the context itself, which is where context-level config and mode are kept.
// (io.confluent.kafka.schemaregistry.utils.QualifiedSubject; multi-tenant prefixes are not supported.)

export const DEFAULT_CONTEXT = '.'

export interface QualifiedSubject {
  context: string
  subject: string
}

export function qualify(qualified: string): QualifiedSubject {
  if (qualified.startsWith(':.')) {
    const end = qualified.indexOf(':', 2)
    if (end >= 0) return { context: qualified.slice(1, end), subject: qualified.slice(end + 1) }
    return { context: qualified.slice(1), subject: '' }
  }
  return { context: DEFAULT_CONTEXT, subject: qualified }
}

export function contextOf(qualified: string): string {
  return qualify(qualified).context
}

/** The subject written with its context prefix; unqualified in the default context. */
export function qualifiedName(context: string, subject: string): string {
  return context === DEFAULT_CONTEXT ? subject : `:${context}:${subject}`
}

/** The subject under which a context's own config and mode are stored (":.ctx:"); null for the default. */
export function contextConfigSubject(context: string): string | null {
  return context === DEFAULT_CONTEXT ? null : `:${context}:`
}
