// Kafka's default partitioner for keyed records: Utils.murmur2 (MurmurHash2, seed 0x9747b28c) of the
// serialized key, made positive with `& 0x7fffffff` (Utils.toPositive), modulo the partition count. A key
// therefore lands on the partition the Java client and librdkafka (partitioner=murmur2_random) pick.

const SEED = 0x9747b28c
const M = 0x5bd1e995

/** Kafka's Utils.murmur2: a signed 32-bit hash of data. */
export function murmur2(data: Uint8Array): number {
  const length = data.length
  let h = (SEED ^ length) | 0
  const length4 = length >>> 2
  for (let i = 0; i < length4; i++) {
    const i4 = i << 2
    let k = (data[i4]! & 0xff) | ((data[i4 + 1]! & 0xff) << 8) | ((data[i4 + 2]! & 0xff) << 16) | ((data[i4 + 3]! & 0xff) << 24)
    k = Math.imul(k, M)
    k ^= k >>> 24
    k = Math.imul(k, M)
    h = Math.imul(h, M)
    h ^= k
  }
  // The tail, as Java's falling-through switch on length % 4 handles it.
  const tail = length & ~3
  const rest = length & 3
  if (rest >= 3) h ^= (data[tail + 2]! & 0xff) << 16
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8
  if (rest >= 1) {
    h ^= data[tail]! & 0xff
    h = Math.imul(h, M)
  }
  h ^= h >>> 13
  h = Math.imul(h, M)
  h ^= h >>> 15
  return h | 0
}

/** Kafka's Utils.toPositive: clears the sign bit (not Math.abs, which differs for MIN_VALUE). */
export function toPositive(n: number): number {
  return n & 0x7fffffff
}

/** The partition Kafka's default partitioner gives a non-null key. */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions <= 0) throw new RangeError(`partition count must be a positive integer, not ${numPartitions}`)
  return toPositive(murmur2(key)) % numPartitions
}
