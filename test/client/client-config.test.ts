// Kafka's client configs mapped onto the Skein client's options (src/client/client-config.ts), the one
// mapping the skein tools, Connect, MirrorMaker, Streams and the REST Proxy share: names, value parsing,
// the names it does not know, ConfigException for a value it cannot use, and the security settings.
import { describe, expect, it } from 'vitest'
import { applyAdminProps, applyConsumerProps, applyProducerProps, parseAcks, parseIsolationLevel } from '../../src/client/client-config.js'
import { securityFromProps } from '../../src/client/client-security-config.js'
import type { ClientOptions } from '../../src/client/cluster-connections.js'
import type { ConsumerOptions } from '../../src/client/consumer.js'
import { ConfigException } from '../../src/client/errors.js'
import type { ProducerOptions } from '../../src/client/producer.js'

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
