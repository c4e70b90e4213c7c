// What cluster tests wait on and look at: polling until a condition holds, and a partition's leader,
// epoch, replicas, ISR and offline replicas as one broker's Metadata answers them, and a partition's records.
import { ErrorCode } from '../../src/domain/errors.js'
import type { ClusterBroker } from './cluster.js'
import { recordsBuffer } from './raw-client.js'
import { decodeAllRecords } from './records.js'

/** Polls fn until it returns a value (errors count as "not yet"); the last error is named on timeout. */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 40_000, everyMs = 150): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v !== undefined) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : ` (last error: ${(last as Error).message})`}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

export interface PartitionView {
  partition: number
  leader: number
  epoch: number
  replicas: number[]
  /** Sorted, so views of two brokers compare as strings. */
  isr: number[]
  offline: number[]
}

/** The topic's partitions as broker b's metadata has them, by partition index. */
export async function partitionsOf(b: ClusterBroker, topic: string): Promise<PartitionView[]> {
  const c = await b.client()
  try {
    const t = (await c.metadata([topic])).topics.find((x) => x.name === topic)
    return (t?.partitions ?? [])
      .map((p) => ({ partition: p.partitionIndex, leader: p.leaderId, epoch: p.leaderEpoch, replicas: p.replicaNodes, isr: [...p.isrNodes].sort(), offline: p.offlineReplicas }))
      .sort((a, b) => a.partition - b.partition)
  } finally {
    c.close()
  }
}

/** Every record of a partition, read from `b` (its leader) up to the high watermark. */
export async function readAll(b: ClusterBroker, topic: string, partition: number): Promise<{ offset: number; value: string }[]> {
  const c = await b.client()
  const out: { offset: number; value: string }[] = []
  try {
    let offset = 0
    for (;;) {
      const p = await c.fetch(topic, partition, offset, { maxWaitMs: 0, partitionMaxBytes: 1 << 20, maxBytes: 1 << 20 })
      if (p.errorCode !== ErrorCode.NONE) throw new Error(`fetch ${topic}-${partition}@${offset}: error ${p.errorCode}`)
      const fresh = decodeAllRecords(recordsBuffer(p)).filter((r) => r.offset >= offset)
      for (const r of fresh) out.push({ offset: r.offset, value: r.value === null ? '' : r.value.toString() })
      if (fresh.length === 0) {
        if (offset >= Number(p.highWatermark)) return out
        throw new Error(`no records at ${offset} below the high watermark ${p.highWatermark}`)
      }
      offset = fresh.at(-1)!.offset + 1
    }
  } finally {
    c.close()
  }
}

/** The unlabelled samples of a Prometheus text page (a broker's /metrics), by name. */
export function prometheusSamples(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+) (\S+)$/.exec(line)
    if (m !== null) out.set(m[1]!, Number(m[2]))
  }
  return out
}
