// Kafka's example connectors, FileStreamSource and FileStreamSink (org.apache.kafka.connect.file): the
// source reads a file line by line into one topic (offset: the byte position after the last line read,
// under the partition {"filename": file}), the sink appends each record's value as a line.
import { closeSync, createReadStream, fsyncSync, openSync, statSync, writeSync } from 'node:fs'
import { ConfigDef, NO_DEFAULT, Validators } from '../api/config-def.js'
import { Schemas } from '../api/data.js'
import { ConnectException, SinkConnector, type SinkRecord, SinkTask, SourceConnector, type SourceRecord, sourceRecord, SourceTask, type TopicPartition } from '../api/plugin.js'
import { valueToString } from '../converters/json.js'

const VERSION = '1.0.0'

export class FileStreamSourceConnector extends SourceConnector {
  private props: Record<string, string> = {}

  version(): string {
    return VERSION
  }

  config(): ConfigDef {
    return new ConfigDef()
      .define('file', 'STRING', null, 'HIGH', 'Source filename. If not specified, the standard input will be used')
      .define('topic', 'LIST', NO_DEFAULT, 'HIGH', 'The topic to publish data to', {
        validator: (_n, v) => (Array.isArray(v) && v.length !== 1 ? "'topic' in FileStreamSourceConnector configuration requires definition of a single topic" : undefined),
      })
      .define('batch.size', 'INT', 2000, 'LOW', 'The maximum number of records the source task can read from the file each time it is polled', { validator: Validators.atLeast(1) })
  }

  start(props: Record<string, string>): void {
    this.config().parse(props)
    this.props = { ...props }
  }

  taskClass(): new () => FileStreamSourceTask {
    return FileStreamSourceTask
  }

  taskConfigs(): Record<string, string>[] {
    // Only one task: a file has one reader.
    return [{ ...this.props }]
  }

  stop(): void {}

  override exactlyOnceSupport(props: Record<string, string>): 'SUPPORTED' | 'UNSUPPORTED' {
    // Reading a file is repeatable from an offset when it is a file, not stdin.
    return props['file'] ? 'SUPPORTED' : 'UNSUPPORTED'
  }

  override alterOffsets(props: Record<string, string>, offsets: Map<Record<string, unknown>, Record<string, unknown> | null>): boolean {
    for (const [partition, offset] of offsets) {
      if (partition['filename'] !== props['file']) throw new ConnectException(`The partition ${JSON.stringify(partition)} is not this connector's file`)
      if (offset !== null && (typeof offset['position'] !== 'number' || (offset['position'] as number) < 0)) throw new ConnectException('The offset must have a non-negative integer "position"')
    }
    return true
  }
}

export class FileStreamSourceTask extends SourceTask {
  private file: string | null = null
  private topic = ''
  private batchSize = 2000
  private position = 0
  private pending = ''
  private stream: AsyncIterator<Buffer> | null = null
  private stopped = false

  version(): string {
    return VERSION
  }

  async start(props: Record<string, string>): Promise<void> {
    this.file = props['file'] ?? null
    this.topic = props['topic']!.split(',')[0]!.trim()
    this.batchSize = Number(props['batch.size'] ?? 2000)
    if (this.file !== null) {
      const offset = await this.context.offsetStorageReader.offset({ filename: this.file })
      const pos = offset?.['position']
      if (typeof pos === 'number' && pos >= 0) this.position = pos
    }
  }

  private open(): void {
    if (this.file === null) {
      this.stream = process.stdin[Symbol.asyncIterator]() as AsyncIterator<Buffer>
      return
    }
    try {
      if (statSync(this.file).size < this.position) this.position = 0
    } catch {
      return
    }
    this.stream = createReadStream(this.file, { start: this.position, highWaterMark: 64 * 1024 })[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  }

  async poll(): Promise<SourceRecord[] | null> {
    if (this.stopped) return null
    const buffered = this.takeLines()
    if (buffered.length > 0) return buffered
    if (this.stream === null) this.open()
    if (this.stream === null) {
      // The file does not exist yet: Kafka's task waits and retries.
      await new Promise((r) => setTimeout(r, 1000))
      return null
    }
    const next = await this.stream.next()
    if (next.done) {
      // At the end of the file: reopen later from the last whole line, so appended lines are read.
      this.stream = null
      this.pending = ''
      await new Promise((r) => setTimeout(r, 1000))
      return null
    }
    this.pending += next.value.toString('utf8')
    return this.takeLines()
  }

  /** Whole lines of what was read, at most batch.size of them. */
  private takeLines(): SourceRecord[] {
    const records: SourceRecord[] = []
    let nl: number
    while (records.length < this.batchSize && (nl = this.pending.indexOf('\n')) >= 0) {
      let line = this.pending.slice(0, nl)
      this.pending = this.pending.slice(nl + 1)
      this.position += Buffer.byteLength(line, 'utf8') + 1
      if (line.endsWith('\r')) line = line.slice(0, -1)
      records.push(sourceRecord({
        topic: this.topic,
        sourcePartition: this.file === null ? null : { filename: this.file },
        sourceOffset: this.file === null ? null : { position: this.position },
        valueSchema: Schemas.STRING,
        value: line,
      }))
    }
    return records
  }

  stop(): void {
    this.stopped = true
    void this.stream?.return?.()
  }
}

export class FileStreamSinkConnector extends SinkConnector {
  private props: Record<string, string> = {}

  version(): string {
    return VERSION
  }

  config(): ConfigDef {
    return new ConfigDef().define('file', 'STRING', null, 'HIGH', 'Destination filename. If not specified, the standard output will be used')
  }

  start(props: Record<string, string>): void {
    this.config().parse(props)
    this.props = { ...props }
  }

  taskClass(): new () => FileStreamSinkTask {
    return FileStreamSinkTask
  }

  taskConfigs(maxTasks: number): Record<string, string>[] {
    return Array.from({ length: maxTasks }, () => ({ ...this.props }))
  }

  stop(): void {}

  override alterOffsets(): boolean {
    // Nothing of the file depends on the consumer offsets.
    return true
  }
}

export class FileStreamSinkTask extends SinkTask {
  private fd: number | null = null

  version(): string {
    return VERSION
  }

  start(props: Record<string, string>): void {
    const file = props['file']
    this.fd = file ? openSync(file, 'a') : null
  }

  put(records: SinkRecord[]): void {
    if (records.length === 0) return
    const text = records.map((r) => `${r.value === null ? 'null' : valueToString(r.value)}\n`).join('')
    if (this.fd === null) process.stdout.write(text)
    else writeSync(this.fd, text)
  }

  override flush(_offsets: Map<string, { tp: TopicPartition; offset: number }>): void {
    if (this.fd !== null) fsyncSync(this.fd)
  }

  stop(): void {
    if (this.fd !== null) closeSync(this.fd)
    this.fd = null
  }
}
