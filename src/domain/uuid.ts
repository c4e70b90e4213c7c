// Kafka's Uuid (topic ids, cluster ids, directory ids): 16 bytes, shown as base64url without padding.

import { randomBytes } from 'node:crypto'

/**
 * A random Kafka Uuid in its string form: 16 random bytes, base64url without padding. Like Kafka's
 * Uuid.randomUuid, never the all-zero id and never one starting with '-' (it would read as a CLI flag).
 */
export function randomKafkaUuid(): string {
  for (;;) {
    const bytes = randomBytes(16)
    if (bytes.every((b) => b === 0)) continue
    const s = bytes.toString('base64url')
    if (!s.startsWith('-')) return s
  }
}
