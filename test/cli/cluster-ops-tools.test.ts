// The JSON formats of skein reassign-partitions and skein leader-election (Kafka's, version 1), and the
// replica assignment --generate proposes (Kafka's rack-unaware assignment), without a broker.
import { describe, expect, it } from 'vitest'
import { parseElectionJson } from '../../src/cli/leader-election.js'
import { assignReplicas, parseReassignmentJson, reassignmentJson } from '../../src/cli/reassign-partitions.js'

describe('skein reassign-partitions and leader-election JSON', () => {
  it("reads and writes Kafka's reassignment JSON and refuses what Kafka's tool refuses", () => {
    const doc = { version: 1, partitions: [{ topic: 't', partition: 1, replicas: [2, 3], log_dirs: ['any', 'any'] }, { topic: 't', partition: 0, replicas: [1] }] }
    const plan = parseReassignmentJson(doc, 'f.json')
    expect(plan).toEqual([{ topic: 't', partition: 1, replicas: [2, 3] }, { topic: 't', partition: 0, replicas: [1] }])
    expect(reassignmentJson(plan)).toBe('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]},{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}')
    expect(() => parseReassignmentJson({ version: 2, partitions: [] }, 'f.json')).toThrow(/unsupported version 2/)
    expect(() => parseReassignmentJson({ partitions: [{ topic: 't', partition: 0, replicas: [1, 1] }] }, 'f.json')).toThrow(/lists a broker twice/)
    expect(() => parseReassignmentJson({ partitions: [{ topic: 't', partition: 0, replicas: [] }] }, 'f.json')).toThrow(/has no replicas/)
    expect(() => parseReassignmentJson({ partitions: [{ topic: 't', partition: 0, replicas: [1], log_dirs: ['/data'] }] }, 'f.json')).toThrow(/log_dirs/)
    expect(() => parseReassignmentJson({ partitions: [{ topic: 't', partition: 0, replicas: [1] }, { topic: 't', partition: 0, replicas: [2] }] }, 'f.json')).toThrow(/t-0 is listed twice/)
  })

  it("proposes Kafka's rack-unaware assignment", () => {
    // AdminUtils' documented example: 5 brokers, 10 partitions, RF 3, start index 0, shift 0.
    expect(assignReplicas([0, 1, 2, 3, 4], 10, 3, 0, 0)).toEqual([
      [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1], [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2],
    ])
  })

  it("reads kafka-leader-election's JSON", () => {
    expect(parseElectionJson('{"partitions":[{"topic":"a","partition":0},{"topic":"b","partition":2}]}', 'f')).toEqual([{ topic: 'a', partition: 0 }, { topic: 'b', partition: 2 }])
    expect(() => parseElectionJson('{"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":0}]}', 'f')).toThrow(/duplicate partition a-0/)
    expect(() => parseElectionJson('{"partitions":[{"topic":"a"}]}', 'f')).toThrow(/integer "partition"/)
  })
})
