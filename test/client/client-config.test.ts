// Kafka's client configs mapped onto the Skein client's options (src/client/client-config.ts), the one
// mapping the skein tools, Connect, MirrorMaker, Streams and the REST Proxy share: names, value parsing,
// the names it does not know, ConfigException for a value it cannot use, and the security settings.
import { describe, expect, it } from 'vitest'
import { applyAdminProps, applyConsumerProps, applyProducerProps, applyShareConsumerProps, parseAcks, parseIsolationLevel } from '../../src/client/client-config.js'
import { securityFromProps } from '../../src/client/client-security-config.js'
import type { ClientOptions } from '../../src/client/cluster-connections.js'
import type { ConsumerOptions } from '../../src/client/consumer.js'
import { ConfigException } from '../../src/client/errors.js'
import type { ProducerOptions } from '../../src/client/producer.js'
import type { ShareConsumerOptions } from '../../src/client/share-consumer.js'

const props = (entries: Record<string, string>): Map<string, string> => new Map(Object.entries(entries))

describe('client-config', () => {
  it('maps the common client configs for every client', () => {
    const opts: ClientOptions = { bootstrapServers: 'a:1' }
    const unknown = applyAdminProps(opts, props({ 'bootstrap.servers': 'b:2,c:3', 'client.id': 'me', 'request.timeout.ms': '1500', 'default.api.timeout.ms': '9000', retries: '3', 'retry.backoff.ms': '50', 'socket.connection.setup.timeout.ms': '700', 'metadata.max.age.ms': '1000', 'no.such.config': 'x' }))
    expect(opts).toEqual({ bootstrapServers: 'b:2,c:3', clientId: 'me', requestTimeoutMs: 1500, apiTimeoutMs: 9000, retries: 3, retryBackoffMs: 50, connectTimeoutMs: 700 })
    // An admin-only name Kafka knows is accepted without effect; an unknown one is returned for a warning.
    expect(unknown).toEqual(['no.such.config'])
  })

  it('maps the producer configs', () => {
    const opts: ProducerOptions = { bootstrapServers: 'a:1' }
    const unknown = applyProducerProps(opts, props({ acks: 'all', 'batch.size': '32768', 'linger.ms': '7', 'compression.type': 'LZ4', 'enable.idempotence': 'false', 'transactional.id': ' tx ', 'partitioner.class': 'org.apache.kafka.clients.producer.RoundRobinPartitioner', 'key.serializer': 'x', 'fetch.min.bytes': '1' }))
    expect(opts).toMatchObject({ acks: -1, batchSize: 32768, lingerMs: 7, compression: 'lz4', enableIdempotence: false, transactionalId: 'tx', partitioner: 'round-robin' })
    expect(unknown).toEqual(['fetch.min.bytes'])
  })

  it('maps the consumer configs', () => {
    const opts: ConsumerOptions = { bootstrapServers: 'a:1' }
    const unknown = applyConsumerProps(opts, props({ 'group.id': 'g', 'auto.offset.reset': 'Earliest', 'isolation.level': 'read_committed', 'fetch.max.wait.ms': '20', 'max.poll.interval.ms': '60000', 'partition.assignment.strategy': 'org.apache.kafka.clients.consumer.RoundRobinAssignor,range', 'linger.ms': '1' }))
    expect(opts).toMatchObject({ groupId: 'g', autoOffsetReset: 'earliest', isolationLevel: 'read_committed', fetchMaxWaitMs: 20, rebalanceTimeoutMs: 60000, assignors: ['roundrobin', 'range'] })
    expect(unknown).toEqual(['linger.ms'])
  })

  it('maps the share consumer configs, refusing those Kafka refuses for a share consumer', () => {
    const opts: ShareConsumerOptions = { bootstrapServers: 'a:1', groupId: '' }
    const unknown = applyShareConsumerProps(opts, props({
      'group.id': 'workers', 'share.acknowledgement.mode': 'EXPLICIT', 'max.poll.records': '5', 'fetch.max.bytes': '0', 'fetch.min.bytes': '10',
      'fetch.max.wait.ms': '250', 'max.poll.interval.ms': '10000', 'check.crcs': 'false', 'client.rack': 'r1', 'share.acquire.mode': 'batch_optimized',
      'max.partition.fetch.bytes': '1024', 'value.deserializer': 'x', 'no.such.config': 'y',
    }))
    expect(opts).toEqual({
      bootstrapServers: 'a:1', groupId: 'workers', acknowledgementMode: 'explicit', maxPollRecords: 5, fetchMaxBytes: 0, fetchMinBytes: 10,
      fetchMaxWaitMs: 250, maxPollIntervalMs: 10000, checkCrcs: false, clientRack: 'r1', acquireMode: 'batch_optimized',
    })
    expect(unknown).toEqual(['no.such.config'])
    const fresh = (): ShareConsumerOptions => ({ bootstrapServers: 'a:1', groupId: 'g' })
    expect(() => applyShareConsumerProps(fresh(), props({ 'share.acknowledgement.mode': 'auto' }))).toThrow(ConfigException)
    expect(() => applyShareConsumerProps(fresh(), props({ 'share.acquire.mode': 'record_limit' }))).toThrow(/ShareFetch v2/)
    for (const name of ['auto.offset.reset', 'isolation.level', 'enable.auto.commit', 'session.timeout.ms']) {
      expect(() => applyShareConsumerProps(fresh(), props({ [name]: 'x' }))).toThrow(/not supported for a share consumer/)
    }
  })

  it('refuses a value the client cannot use with ConfigException', () => {
    expect(() => applyProducerProps({ bootstrapServers: 'a:1' }, props({ 'linger.ms': 'soon' }))).toThrow(ConfigException)
    expect(() => applyConsumerProps({ bootstrapServers: 'a:1' }, props({ 'enable.auto.commit': 'yes' }))).toThrow(/expected true or false/)
    expect(() => parseAcks('2')).toThrow(ConfigException)
    expect(parseAcks('-1')).toBe(-1)
    expect(() => parseIsolationLevel('dirty')).toThrow(ConfigException)
  })

  it('turns security.protocol, sasl.* and ssl.* into the client security', () => {
    const opts: ClientOptions = { bootstrapServers: 'a:1' }
    applyAdminProps(opts, props({ 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'SCRAM-SHA-256', 'sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="secret";' }))
    expect(opts.security).toEqual({ sasl: { mechanism: 'SCRAM-SHA-256', username: 'alice', password: 'secret' } })
    expect(securityFromProps(props({ 'security.protocol': 'PLAINTEXT' }))).toBeUndefined()
    expect(() => securityFromProps(props({ 'security.protocol': 'SSL', 'ssl.keystore.type': 'JKS', 'ssl.keystore.location': '/nowhere' }))).toThrow(ConfigException)
  })
})
