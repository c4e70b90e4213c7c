// The names of the built-in server-side assignors of KIP-848 consumer groups, as group.consumer.assignors
// and ConsumerGroupHeartbeat's ServerAssignor give them: the short names Kafka 4 uses, or Kafka's class
// names of the same assignors. The config validates with it; the coordinator (server-assignors.ts)
// implements them.

export const UNIFORM_ASSIGNOR = 'uniform'
export const RANGE_ASSIGNOR = 'range'
export const BUILT_IN_ASSIGNOR_NAMES: readonly string[] = [UNIFORM_ASSIGNOR, RANGE_ASSIGNOR]

const CLASS_NAMES: Readonly<Record<string, string>> = {
  'org.apache.kafka.coordinator.group.assignor.UniformAssignor': UNIFORM_ASSIGNOR,
  'org.apache.kafka.coordinator.group.assignor.RangeAssignor': RANGE_ASSIGNOR,
}

/** The built-in assignor a group.consumer.assignors entry names (short name or Kafka class name), or undefined. */
export function assignorName(entry: string): string | undefined {
  const e = entry.trim()
  if (BUILT_IN_ASSIGNOR_NAMES.includes(e)) return e
  return CLASS_NAMES[e]
}
