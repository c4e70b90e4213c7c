// Helpers of the Streams tests against a real broker: topics, producing inputs, reading outputs to the
// end (read_committed when asked), and waiting for a KafkaStreams state.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Admin, Consumer, Producer } from '../../src/client/index.js'
import type { KafkaStreams, KafkaStreamsState } from '../../src/streams/index.js'

export function stateDir(tag: string): string {
  return mkdtempSync(join(tmpdir(), `skein-streams-${tag}-`))
}

export async function createTopics(bootstrap: string, topics: { name: string; partitions: number; configs?: Record<string, string> }[]): Promise<void> {
  const admin = new Admin({ bootstrapServers: bootstrap })
  try {
    await admin.createTopics(topics.map((t) => ({ name: t.name, numPartitions: t.partitions, replicationFactor: 1, configs: t.configs })))
  } finally {
    await admin.close()
  }
}

export async function produce(bootstrap: string, topic: string, records: { key: string | Buffer | null; value: string | Buffer | null; timestamp?: number; partition?: number }[]): Promise<void> {
  const p = new Producer({ bootstrapServers: bootstrap, lingerMs: 1 })
  try {
    await Promise.all(records.map((r) => p.send({ topic, key: r.key, value: r.value, timestamp: r.timestamp, partition: r.partition })))
  } finally {
    await p.close()
  }
}

/** Reads a topic from the start until no record arrives for quietMs (or until done() says so). */
export async function readAll(bootstrap: string, topic: string, opts: { readCommitted?: boolean; quietMs?: number; timeoutMs?: number; done?: (n: number) => boolean } = {}): Promise<{ key: Buffer | null; value: Buffer | null; timestamp: number; partition: number }[]> {
  const admin = new Admin({ bootstrapServers: bootstrap })
  const [d] = await admin.describeTopics([topic])
  await admin.close()
  const c = new Consumer({ bootstrapServers: bootstrap, autoOffsetReset: 'earliest', isolationLevel: opts.readCommitted ? 'read_committed' : 'read_uncommitted', fetchMaxWaitMs: 100 })
  c.assign(d!.partitions.map((p) => ({ topic, partition: p.partition })))
  const out: { key: Buffer | null; value: Buffer | null; timestamp: number; partition: number }[] = []
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000)
  let lastRecord = Date.now()
  try {
    while (Date.now() < deadline) {
      const rs = await c.poll(100)
      for (const r of rs) out.push({ key: r.key, value: r.value, timestamp: r.timestamp, partition: r.partition })
      if (rs.length > 0) lastRecord = Date.now()
      if (opts.done?.(out.length)) break
      if (opts.done === undefined && Date.now() - lastRecord >= (opts.quietMs ?? 1500)) break
    }
  } finally {
    await c.close()
  }
  return out
}

export async function waitForState(streams: KafkaStreams, state: KafkaStreamsState, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (streams.state !== state) {
    // ERROR is final: waiting longer for another state only hides why the instance stopped.
    if (streams.state === 'ERROR') throw new Error(`KafkaStreams went to ERROR while waiting for ${state}`)
    if (Date.now() > deadline) throw new Error(`KafkaStreams did not reach ${state} within ${timeoutMs} ms (it is ${streams.state})`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
