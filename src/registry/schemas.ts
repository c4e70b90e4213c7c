// Parsing a schema of any of the three types, turning each library's complaint into Confluent's 42201.
import { AvroSchema } from './avro/index.js'
import { Errors, RegistryError } from './errors.js'
import { JsonSchema } from './jsonschema/index.js'
import { ProtobufSchema } from './protobuf/index.js'
import type { ParsedSchema, ResolvedReference, SchemaReference, SchemaType } from './schema-type/types.js'

export function parseSchema(schemaType: SchemaType, text: string, references: SchemaReference[], resolved: ResolvedReference[]): ParsedSchema {
  try {
    switch (schemaType) {
      case 'AVRO':
        return AvroSchema.parse(text, references, resolved)
      case 'JSON':
        return JsonSchema.parse(text, references, resolved)
      case 'PROTOBUF':
        return ProtobufSchema.parse(text, references, resolved)
    }
  } catch (e) {
    if (e instanceof RegistryError) throw e
    throw Errors.invalidSchema(`Invalid schema ${text.length > 200 ? text.slice(0, 200) + '...' : text} with refs ${JSON.stringify(references)} of type ${schemaType}, details: ${(e as Error).message}`)
  }
}
