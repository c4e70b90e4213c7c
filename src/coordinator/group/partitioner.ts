// Which partition of __consumer_offsets holds a group: Kafka's Utils.abs(groupId.hashCode()) % n, so a
// group lands on the same partition number as in Kafka (and Kafka's tools find it there).

/** Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, with 32-bit overflow. */
export function javaStringHashCode(s: string): number {
  let h = 0
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0
  return h
}

/** Kafka's Utils.abs: x & 0x7fffffff (so Integer.MIN_VALUE maps to 0, not to itself). */
export function kafkaAbs(x: number): number {
  return x & 0x7fffffff
}

export function groupPartition(groupId: string, partitionCount: number): number {
  return kafkaAbs(javaStringHashCode(groupId)) % partitionCount
}
