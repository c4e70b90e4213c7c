// The registry's PROTOBUF schema type: parsing with imports resolved through references, the stored form,
// message indexes for the wire format, and compatibility by Confluent's protobuf rules.
import type protobuf from 'protobufjs'
import type { Incompatibility, ParsedSchema, ResolvedReference, SchemaReference } from '../schema-type/types.js'
import { fillLabels } from '../schema-type/types.js'
import { PROTOBUF_COMPATIBLE_CHANGES, describeProtobufDifference, diffProtoFiles } from './diff.js'
import { type ParsedProto, ProtobufParseError, messageAt, messageIndexes, parseProto } from './schema.js'

export * from './diff.js'
export * from './schema.js'

export class ProtobufSchema implements ParsedSchema {
  readonly schemaType = 'PROTOBUF' as const
  readonly canonical: string

  private constructor(
    readonly parsed: ParsedProto,
    readonly references: SchemaReference[],
  ) {
    this.canonical = parsed.canonical
  }

  static parse(text: string, references: SchemaReference[] = [], resolved: ResolvedReference[] = []): ProtobufSchema {
    const parsed = parseProto(text, references, resolved)
    const imported = new Set(parsed.main.imports)
    for (const ref of references) {
      if (!imported.has(ref.name)) throw new ProtobufParseError(`reference ${ref.name} is not imported by the schema`)
    }
    return new ProtobufSchema(parsed, references)
  }

  normalized(): string {
    return this.canonical
  }

  /** The first message of the file: what Confluent's serializers use when no message is named. */
  firstMessage(): protobuf.Type | undefined {
    return messageAt(this.parsed.main, [0])
  }

  /** The message with this full name (with or without a leading dot), if the file defines it. */
  message(fullName: string): protobuf.Type | undefined {
    const indexes = messageIndexes(this.parsed.main, fullName)
    return indexes ? messageAt(this.parsed.main, indexes) : undefined
  }

  messageIndexes(fullName: string): number[] | undefined {
    return messageIndexes(this.parsed.main, fullName)
  }

  messageAt(indexes: number[]): protobuf.Type | undefined {
    return messageAt(this.parsed.main, indexes)
  }

  checkCanRead(writer: ParsedSchema): Incompatibility[] {
    if (!(writer instanceof ProtobufSchema)) throw new ProtobufParseError('not a Protobuf schema')
    return diffProtoFiles(writer.parsed, this.parsed)
      .filter((d) => !PROTOBUF_COMPATIBLE_CHANGES.has(d.type))
      .map((d) => {
        const description = describeProtobufDifference(d)
        return {
          errorType: d.type,
          path: d.path,
          description,
          render: (reader: string, w: string) => `{errorType:"${d.type}", description:"${fillLabels(description, reader, w)}"}`,
        }
      })
  }
}
