// Record-level single message transforms and predicates with Kafka's names and options: RegexRouter,
// TimestampRouter, Filter, InsertHeader, DropHeaders; the predicates TopicNameMatches, HasHeaderKey and
// RecordIsTombstone. A transform's `predicate` and `negate` options are the runtime's (TransformationChain).
import { ConfigDef, ConfigException, NO_DEFAULT, Validators } from '../api/config-def.js'
import { Schemas } from '../api/data.js'
import { type ConnectRecord, newRecord, type Predicate, type Transformation } from '../api/plugin.js'
import { compileDatePattern, formatDate } from './util.js'

/** Java's Matcher.replaceFirst over a whole-topic match: $1 groups, \$ escapes. */
function javaReplacement(replacement: string): string {
  return replacement.replace(/\\\$/g, '$$$$')
}

export class RegexRouter implements Transformation {
  private regex!: RegExp
  private replacement = ''

  config(): ConfigDef {
    return new ConfigDef()
      .define('regex', 'STRING', NO_DEFAULT, 'HIGH', 'Regular expression to use for matching.', { validator: Validators.regex() })
      .define('replacement', 'STRING', NO_DEFAULT, 'HIGH', 'Replacement string.')
  }

  configure(props: Record<string, string>): void {
    const c = this.config().parse(props)
    // Java's matches(): the whole topic must match.
    this.regex = new RegExp(`^(?:${c['regex'] as string})$`)
    this.replacement = javaReplacement(c['replacement'] as string)
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    if (!this.regex.test(record.topic)) return record
    return newRecord(record, { topic: record.topic.replace(this.regex, this.replacement) })
  }

  close(): void {}
}

export class TimestampRouter implements Transformation {
  private topicFormat = ''
  private timestampFormat!: ReturnType<typeof compileDatePattern>

  config(): ConfigDef {
    return new ConfigDef()
      .define('topic.format', 'STRING', '${topic}-${timestamp}', 'HIGH', 'Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as placeholders for the topic and timestamp, respectively.')
      .define('timestamp.format', 'STRING', 'yyyyMMdd', 'HIGH', 'Format string for the timestamp that is compatible with <code>java.text.SimpleDateFormat</code>.')
  }

  configure(props: Record<string, string>): void {
    const c = this.config().parse(props)
    this.topicFormat = c['topic.format'] as string
    this.timestampFormat = compileDatePattern(c['timestamp.format'] as string)
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    if (record.timestamp === null) throw new Error(`Timestamp missing on record: ${record.topic}`)
    const ts = formatDate(this.timestampFormat, new Date(record.timestamp))
    return newRecord(record, { topic: this.topicFormat.replaceAll('${topic}', record.topic).replaceAll('${timestamp}', ts) })
  }

  close(): void {}
}

/** Drops every record (its predicate decides which, through the runtime's predicate/negate options). */
export class Filter implements Transformation {
  config(): ConfigDef {
    return new ConfigDef()
  }
  configure(): void {}
  apply(): ConnectRecord | null {
    return null
  }
  close(): void {}
}

export class InsertHeader implements Transformation {
  private header = ''
  private literal = ''

  config(): ConfigDef {
    return new ConfigDef()
      .define('header', 'STRING', NO_DEFAULT, 'HIGH', 'The name of the header.', { validator: Validators.nonEmptyString() })
      .define('value.literal', 'STRING', NO_DEFAULT, 'HIGH', 'The literal value that is to be set as the header value on all records.')
  }

  configure(props: Record<string, string>): void {
    const c = this.config().parse(props)
    this.header = c['header'] as string
    this.literal = c['value.literal'] as string
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const headers = record.headers.duplicate()
    headers.add(this.header, this.literal, Schemas.STRING)
    return newRecord(record, { headers })
  }

  close(): void {}
}

export class DropHeaders implements Transformation {
  private headers: string[] = []

  config(): ConfigDef {
    return new ConfigDef().define('headers', 'LIST', NO_DEFAULT, 'HIGH', 'The name of the headers to be removed.', { validator: Validators.nonEmptyList() })
  }

  configure(props: Record<string, string>): void {
    this.headers = this.config().parse(props)['headers'] as string[]
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const headers = record.headers.duplicate()
    for (const h of this.headers) headers.remove(h)
    return newRecord(record, { headers })
  }

  close(): void {}
}

// ---- predicates ----

export class TopicNameMatches implements Predicate {
  private pattern!: RegExp

  config(): ConfigDef {
    return new ConfigDef().define('pattern', 'STRING', NO_DEFAULT, 'MEDIUM', 'A Java regular expression for matching against the name of a record\'s topic.', {
      validator: Validators.all(Validators.nonEmptyString(), Validators.regex()),
    })
  }

  configure(props: Record<string, string>): void {
    const p = this.config().parse(props)['pattern'] as string
    try {
      this.pattern = new RegExp(`^(?:${p})$`)
    } catch (err) {
      throw new ConfigException('pattern', `Invalid regex: ${(err as Error).message}`)
    }
  }

  test(record: ConnectRecord): boolean {
    return record.topic !== null && this.pattern.test(record.topic)
  }

  close(): void {}
}

export class HasHeaderKey implements Predicate {
  private name = ''

  config(): ConfigDef {
    return new ConfigDef().define('name', 'STRING', NO_DEFAULT, 'MEDIUM', 'The header name.', { validator: Validators.nonEmptyString() })
  }

  configure(props: Record<string, string>): void {
    this.name = this.config().parse(props)['name'] as string
  }

  test(record: ConnectRecord): boolean {
    return record.headers.lastWithName(this.name) !== undefined
  }

  close(): void {}
}

export class RecordIsTombstone implements Predicate {
  config(): ConfigDef {
    return new ConfigDef()
  }
  configure(): void {}
  test(record: ConnectRecord): boolean {
    return record.value === null
  }
  close(): void {}
}
