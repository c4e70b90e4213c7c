// The spec validator itself: it accepts the spec's own examples' shapes and refuses bodies that break
// them, so that the REST tests' conformance checks are not vacuous.
import { describe, expect, it } from 'vitest'
import { assertMatchesSpec, specOperations } from './openapi.js'

const topic = {
  kind: 'KafkaTopic',
  metadata: { self: 'http://h/v3/clusters/c/topics/t', resource_name: 'crn:///kafka=c/topic=t' },
  cluster_id: 'c',
  topic_name: 't',
  is_internal: false,
  replication_factor: 1,
  partitions_count: 1,
  partitions: { related: 'x' },
  configs: { related: 'x' },
  partition_reassignments: { related: 'x' },
}

describe("Confluent's OpenAPI spec as a validator", () => {
  it('knows the v3 operations', () => {
    const ops = specOperations()
    expect(ops).toContain('POST /clusters/{cluster_id}/topics/{topic_name}/records')
    expect(ops).toContain('GET /clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lag-summary')
    expect(ops.length).toBe(50)
  })

  it('accepts conforming bodies and refuses the others', () => {
    assertMatchesSpec('GET', '/clusters/{cluster_id}/topics/{topic_name}', 200, topic)
    expect(() => assertMatchesSpec('GET', '/clusters/{cluster_id}/topics/{topic_name}', 200, { ...topic, partitions_count: 'one' })).toThrow(/partitions_count/)
    const { cluster_id: _, ...noCluster } = topic
    expect(() => assertMatchesSpec('GET', '/clusters/{cluster_id}/topics/{topic_name}', 200, noCluster)).toThrow(/cluster_id/)
    assertMatchesSpec('GET', '/clusters/{cluster_id}/topics/{topic_name}', 404, { error_code: 40403, message: 'This server does not host this topic-partition.' })
    expect(() => assertMatchesSpec('GET', '/clusters/{cluster_id}/topics/{topic_name}', 404, { message: 'x' })).toThrow(/error_code/)
    // nullable and formats
    assertMatchesSpec('POST', '/clusters/{cluster_id}/topics/{topic_name}/records', 200, { error_code: 200, partition_id: 0, offset: 1, timestamp: '2021-02-05T19:14:42.123Z', value: { type: 'JSON', size: 3 }, key: null })
    expect(() => assertMatchesSpec('POST', '/clusters/{cluster_id}/topics/{topic_name}/records', 200, { error_code: 200, timestamp: 'yesterday' })).toThrow(/date-time/)
    // The spec's `type: int64` is read as an integer.
    assertMatchesSpec('GET', '/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offset', 200, { kind: 'KafkaPartitionWithOffsets', metadata: { self: 'x' }, cluster_id: 'c', topic_name: 't', partition_id: 0, earliest_offset: 0, latest_offset: 3 })
    expect(() => assertMatchesSpec('GET', '/clusters/{cluster_id}/topics/{topic_name}', 302, topic)).toThrow(/does not document status 302/)
    // An error status the operation does not list: the spec's Error schema.
    assertMatchesSpec('GET', '/clusters/{cluster_id}', 404, { error_code: 404, message: 'Cluster x cannot be found.' })
    expect(() => assertMatchesSpec('GET', '/clusters/{cluster_id}', 404, topic)).toThrow(/error_code/)
  })
})
