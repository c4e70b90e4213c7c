// Partition -> shard placement. Stable across restarts and identical in every thread, so a worker can
// tell from a directory name alone whether it owns a partition.

/** 32-bit FNV-1a of the UTF-8 bytes of a string. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

/** The shard owning a partition: FNV-1a of `${topic}-${partition}` modulo max(1, shardCount). */
export function shardOf(topic: string, partition: number, shardCount: number): number {
  return fnv1a(`${topic}-${partition}`) % Math.max(1, shardCount)
}
