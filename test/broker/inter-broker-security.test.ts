// The client security of the broker's own connections to other brokers, derived from real broker configs
// (loadBrokerConfig): the listener chosen as Kafka chooses it, TLS from the listener's stores, SASL from
// sasl.mechanism.inter.broker.protocol and the listener's JAAS login, and each impossible setting refused
// with a message naming it. The end-to-end run over sockets is test/cluster/secure-cluster.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadBrokerConfig } from '../../src/config/broker-config.js'
import { interBrokerClientSecurity } from '../../src/broker/inter-broker-security.js'
import { hasOpenssl, makeTestCertificates, type TestCertificates } from '../harness/index.js'

const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret";'
/** A cluster member's config (zookeeper.connect set): a single broker reaches no other broker. */
const derive = (...overrides: string[]): ReturnType<typeof interBrokerClientSecurity> => interBrokerClientSecurity(loadBrokerConfig({ overrides: ['zookeeper.connect=127.0.0.1:2181/skein', ...overrides] }))

describe('inter-broker client security', () => {
  it('PLAINTEXT: no security; the default listener is the first one', () => {
    expect(derive('listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0')).toEqual({ listener: 'PLAINTEXT', protocol: 'PLAINTEXT', security: undefined })
  })

  it('a single broker (no zookeeper.connect) needs no inter-broker login', () => {
    const single = interBrokerClientSecurity(loadBrokerConfig({ overrides: ['listeners=SASL_PLAINTEXT://127.0.0.1:0', 'sasl.enabled.mechanisms=SCRAM-SHA-256'] }))
    expect(single).toEqual({ listener: 'SASL_PLAINTEXT', protocol: 'SASL_PLAINTEXT', security: undefined })
  })

  it('security.inter.broker.protocol names the listener; both it and inter.broker.listener.name is refused', () => {
    const sasl = ['listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0', 'sasl.enabled.mechanisms=PLAIN', `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`, 'sasl.mechanism.inter.broker.protocol=PLAIN']
    const got = derive(...sasl, 'security.inter.broker.protocol=SASL_PLAINTEXT')
    expect(got.listener).toBe('SASL_PLAINTEXT')
    expect(got.security).toEqual({ sasl: { mechanism: 'PLAIN', username: 'broker', password: 'broker-secret' } })
    expect(() => derive(...sasl, 'security.inter.broker.protocol=SASL_PLAINTEXT', 'inter.broker.listener.name=SASL_PLAINTEXT')).toThrow(/only one of inter.broker.listener.name and security.inter.broker.protocol/)
    expect(() => derive(...sasl, 'security.inter.broker.protocol=SSL')).toThrow(/security.inter.broker.protocol SSL is not one of the listeners/)
  })

  it('SASL: GSSAPI (Kafka\'s default), a mechanism the listener does not enable, a missing or password-less login each stop startup', () => {
    const base = ['listeners=SASL_PLAINTEXT://127.0.0.1:0', 'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512']
    expect(() => derive(...base, `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`)).toThrow(/sasl.mechanism.inter.broker.protocol=GSSAPI.*PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/)
    expect(() => derive(...base, 'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256')).toThrow(/SCRAM-SHA-256 is not in sasl.enabled.mechanisms/)
    expect(() => derive(...base, 'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512')).toThrow(/needs listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config/)
    expect(() => derive(...base, 'sasl.mechanism.inter.broker.protocol=PLAIN', 'listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="x";'))
      .toThrow(/username="..." and password="..."/)
    const scram = derive(...base, 'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
      'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="s3cret";')
    expect(scram.security?.sasl).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'broker', password: 's3cret' })
  })

  describe.skipIf(!hasOpenssl())('TLS from the listener\'s stores', () => {
    let certs: TestCertificates
    beforeAll(() => {
      certs = makeTestCertificates()
    })
    afterAll(() => certs?.cleanup())

    it('trust store, key store for mutual TLS, listener-prefixed forms, endpoint identification', () => {
      const got = derive('listeners=INTERNAL://127.0.0.1:0', 'listener.security.protocol.map=INTERNAL:SSL', 'inter.broker.listener.name=INTERNAL',
        'listener.name.internal.ssl.keystore.type=PEM', `listener.name.internal.ssl.keystore.location=${certs.serverKeystore}`,
        'listener.name.internal.ssl.truststore.type=PEM', `listener.name.internal.ssl.truststore.location=${certs.ca}`)
      expect(got.protocol).toBe('SSL')
      expect(got.security?.sasl).toBeUndefined()
      const tls = got.security!.tls!
      expect(tls.ca?.toString()).toContain('BEGIN CERTIFICATE')
      expect(tls.cert?.toString()).toContain('BEGIN CERTIFICATE')
      expect(tls.key?.toString()).toContain('PRIVATE KEY')
      expect(tls.checkServerIdentity).toBeUndefined()
      const noHostCheck = derive('listeners=SSL://127.0.0.1:0', 'ssl.keystore.type=PEM', `ssl.keystore.location=${certs.serverKeystore}`, 'ssl.endpoint.identification.algorithm=')
      expect(noHostCheck.security!.tls!.checkServerIdentity).toBeTypeOf('function')
      expect(noHostCheck.security!.tls!.ca).toBeUndefined()
      expect(() => derive('listeners=SSL://127.0.0.1:0', 'ssl.keystore.type=JKS', 'ssl.keystore.location=/nonexistent.jks')).toThrow(/listener SSL: ssl.keystore.type=JKS/)
    })
  })
})
