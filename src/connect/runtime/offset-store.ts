// Source offsets: per connector, a source partition (a JSON object the connector chooses) maps to its
// latest offset (another JSON object). The key is Kafka's: the JSON array [connector, partition] as
// JsonConverter writes it with schemas.enable=false, e.g. ["file-source",{"filename":"/tmp/in.txt"}];
// the value is the offset JSON, null when reset. Distributed workers keep them in the offsets topic
// (offset.storage.topic, compacted, offset.storage.partitions); standalone workers in a file.
//
// Lookups compare partitions by value (keys sorted), so a connector may build its partition objects in
// any key order.
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'
import type { ClientOptions, ConsumedRecord } from '../../client/index.js'
import { KafkaBasedLog } from './kafka-log.js'

export type SourcePartition = Record<string, unknown>
export type SourceOffset = Record<string, unknown>

export interface OffsetEntry {
  connector: string
  partition: SourcePartition
  offset: SourceOffset | null
}

/** JSON with object keys sorted, for comparing partitions by value. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`
  if (typeof v === 'object' && v !== null) return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`
  return JSON.stringify(v) ?? 'null'
}

/** The offsets-topic key and value of an entry (Kafka's format). */
export function offsetRecord(e: OffsetEntry): { key: Buffer; value: Buffer | null } {
  return { key: Buffer.from(JSON.stringify([e.connector, e.partition]), 'utf8'), value: e.offset === null ? null : Buffer.from(JSON.stringify(e.offset), 'utf8') }
}

export interface OffsetBackingStore {
  start(): Promise<void>
  stop(): Promise<void>
  readToEnd(): Promise<void>
  /** The stored offset of each partition (null: none). */
  get(connector: string, partition: SourcePartition): SourceOffset | null
  /** Every partition of a connector with its offset. */
  partitionsOf(connector: string): { partition: SourcePartition; offset: SourceOffset }[]
  /** Writes offsets; resolves when they are durable. */
  set(entries: readonly OffsetEntry[]): Promise<void>
  /** The offsets topic, for exactly-once tasks that write offsets in their own transactions (null: not a topic). */
  readonly topic: string | null
}

class OffsetMap {
  private readonly byConnector = new Map<string, Map<string, { partition: SourcePartition; offset: SourceOffset }>>()

  apply(connector: string, partition: SourcePartition, offset: SourceOffset | null): void {
    let m = this.byConnector.get(connector)
    if (m === undefined) this.byConnector.set(connector, (m = new Map()))
    const k = canonicalJson(partition)
    if (offset === null) m.delete(k)
    else m.set(k, { partition, offset })
  }

  get(connector: string, partition: SourcePartition): SourceOffset | null {
    return this.byConnector.get(connector)?.get(canonicalJson(partition))?.offset ?? null
  }

  partitionsOf(connector: string): { partition: SourcePartition; offset: SourceOffset }[] {
    return [...(this.byConnector.get(connector)?.values() ?? [])]
  }

  all(): OffsetEntry[] {
    const out: OffsetEntry[] = []
    for (const [connector, m] of this.byConnector) for (const { partition, offset } of m.values()) out.push({ connector, partition, offset })
    return out
  }
}

/** Parses an offsets-topic key: [connector, partition], else null (not a Connect offset record). */
export function parseOffsetKey(key: Buffer): { connector: string; partition: SourcePartition } | null {
  try {
    const k = JSON.parse(key.toString('utf8'))
    if (!Array.isArray(k) || k.length !== 2 || typeof k[0] !== 'string' || typeof k[1] !== 'object' || k[1] === null) return null
    return { connector: k[0], partition: k[1] }
  } catch {
    return null
  }
}

export class KafkaOffsetStore implements OffsetBackingStore {
  private readonly data = new OffsetMap()
  private readonly log: KafkaBasedLog

  constructor(client: ClientOptions, readonly topic: string, partitions: number, replicationFactor: number, readCommitted: boolean, onError?: (err: unknown) => void) {
    this.log = new KafkaBasedLog({ client, topic, partitions, replicationFactor, readCommitted, onRecord: (r) => this.onRecord(r), onError })
  }

  private onRecord(r: ConsumedRecord): void {
    if (r.key === null) return
    const k = parseOffsetKey(r.key)
    if (k === null) return
    let offset: SourceOffset | null = null
    if (r.value !== null) {
      try {
        const v = JSON.parse(r.value.toString('utf8'))
        offset = typeof v === 'object' && v !== null ? v : null
      } catch {
        return
      }
    }
    this.data.apply(k.connector, k.partition, offset)
  }

  start(): Promise<void> {
    return this.log.start()
  }
  stop(): Promise<void> {
    return this.log.stop()
  }
  readToEnd(): Promise<void> {
    return this.log.readToEnd()
  }
  get(connector: string, partition: SourcePartition): SourceOffset | null {
    return this.data.get(connector, partition)
  }
  partitionsOf(connector: string): { partition: SourcePartition; offset: SourceOffset }[] {
    return this.data.partitionsOf(connector)
  }

  async set(entries: readonly OffsetEntry[]): Promise<void> {
    await Promise.all(entries.map((e) => {
      const { key, value } = offsetRecord(e)
      return this.log.send(key, value)
    }))
    // Applied locally now too: the tail would bring them, but a reader asking right away must see them.
    for (const e of entries) this.data.apply(e.connector, e.partition, e.offset)
  }
}

const FILE_HEADER = '# skein connect source offsets v1. One line per source partition: the Kafka offsets-topic key JSON ' +
  '([connector, partition]), a tab, the offset JSON. Rewritten whole into <file>.tmp, fsynced and renamed over the file, ' +
  'so after a crash the file holds either the previous or the new offsets, never a mix.'

/** Standalone mode: offsets in offset.storage.file.filename. */
export class FileOffsetStore implements OffsetBackingStore {
  private readonly data = new OffsetMap()
  readonly topic = null

  constructor(private readonly path: string) {}

  async start(): Promise<void> {
    if (!existsSync(this.path)) return
    const text = readFileSync(this.path, 'utf8')
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue
      const tab = line.indexOf('\t')
      if (tab < 0) continue
      const k = parseOffsetKey(Buffer.from(line.slice(0, tab)))
      if (k === null) continue
      try {
        const v = JSON.parse(line.slice(tab + 1))
        this.data.apply(k.connector, k.partition, typeof v === 'object' && v !== null ? v : null)
      } catch {
        // A line a crash cut (cannot happen with rename, but a hand edit can): skipped.
      }
    }
  }

  async stop(): Promise<void> {}
  async readToEnd(): Promise<void> {}

  get(connector: string, partition: SourcePartition): SourceOffset | null {
    return this.data.get(connector, partition)
  }

  partitionsOf(connector: string): { partition: SourcePartition; offset: SourceOffset }[] {
    return this.data.partitionsOf(connector)
  }

  async set(entries: readonly OffsetEntry[]): Promise<void> {
    for (const e of entries) this.data.apply(e.connector, e.partition, e.offset)
    const tmp = `${this.path}.tmp`
    const fd = openSync(tmp, 'w')
    try {
      writeSync(fd, FILE_HEADER + '\n')
      for (const e of this.data.all()) writeSync(fd, `${JSON.stringify([e.connector, e.partition])}\t${JSON.stringify(e.offset)}\n`)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, this.path)
  }
}
