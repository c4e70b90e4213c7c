// Partition -> shard placement. Stable across restarts and identical in every thread, so a worker can
// tell from a directory name alone whether it owns a partition.

/** 32-bit FNV-1a of the UTF-8 bytes of a string. */
export function fnv1a(s: string): number {
  // Topic names are ASCII ([a-zA-Z0-9._-]): their UTF-8 bytes are their char codes, hashed without
  // encoding them into a Buffer first (this runs for every partition of every request).
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x80) return fnv1aUtf8(s)
    h ^= c
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

function fnv1aUtf8(s: string): number {
  let h = 0x811c9dc5
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}

/** The shard owning a partition: FNV-1a of `${topic}-${partition}` modulo max(1, shardCount). */
export function shardOf(topic: string, partition: number, shardCount: number): number {
  if (shardCount <= 1) return 0
  return fnv1a(`${topic}-${partition}`) % shardCount
}
