// Reads a single-partition internal topic (offset syncs, checkpoints) from its beginning and then
// follows it, handing each record to a callback; ready resolves once the records written before start()
// were all handed over.
import { Consumer, type ConsumedRecord, type ConsumerOptions, LATEST_TIMESTAMP, listOffsets, tpKey } from '../../client/index.js'
import { mirrorLog } from './log.js'

export class TopicTail {
  private consumer: Consumer | null = null
  private running = false
  private loop: Promise<void> | null = null
  private initialized = false

  constructor(private readonly opts: ConsumerOptions, private readonly topic: string, private readonly onRecord: (r: ConsumedRecord) => void) {}

  get ready(): boolean {
    return this.initialized
  }

  /** Starts following the topic; resolves once it was read to the end it had at the call (or stop()). */
  async start(): Promise<void> {
    const c = new Consumer({ ...this.opts, autoOffsetReset: 'earliest', fetchMaxWaitMs: 200 })
    this.consumer = c
    c.assign([{ topic: this.topic, partition: 0 }])
    c.seek(this.topic, 0, 'earliest')
    this.running = true
    let end = 0
    for (;;) {
      try {
        end = (await listOffsets(c.cluster, [{ topic: this.topic, partition: 0, timestamp: LATEST_TIMESTAMP }])).get(tpKey(this.topic, 0))?.offset ?? 0
        break
      } catch (err) {
        if (!this.running) return
        mirrorLog().debug({ topic: this.topic, err: (err as Error).message }, 'waiting for topic')
        await new Promise((r) => setTimeout(r, 1000))
      }
    }
    this.loop = this.run()
    while (this.running && (c.position(this.topic, 0) ?? 0) < end) await new Promise((r) => setTimeout(r, 20))
    this.initialized = true
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        for (const r of await this.consumer!.poll(500)) {
          try {
            this.onRecord(r)
          } catch (err) {
            mirrorLog().warn({ topic: this.topic, offset: r.offset, err: (err as Error).message }, 'skipping a record that is not in MirrorMaker\'s format')
          }
        }
      } catch (err) {
        if (!this.running) break
        mirrorLog().debug({ topic: this.topic, err: (err as Error).message }, 'reading failed; retrying')
        await new Promise((r) => setTimeout(r, 1000))
      }
    }
  }

  async stop(): Promise<void> {
    this.running = false
    await this.loop?.catch(() => {})
    await this.consumer?.close().catch(() => {})
    this.consumer = null
  }
}
