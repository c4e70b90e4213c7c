// A broker with two listeners tells each client the endpoint of the listener it connected through
// (Kafka's rule): Metadata, FindCoordinator and DescribeCluster all answer with that listener's
// advertised host and port, and Metadata carries broker.rack.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as DescribeCluster from '../../src/protocol/messages/60-describe-cluster.gen.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT',
    'advertised.listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://localhost:0',
    'broker.rack=rack-a',
  ])
})

afterAll(async () => {
  await tb?.stop()
})

describe('two listeners', () => {
  it('answers Metadata, FindCoordinator and DescribeCluster with the endpoint of the listener the client used', async () => {
    const internal = tb.broker.bound.find((b) => b.listener.name === 'INTERNAL')!
    const plain = tb.broker.bound.find((b) => b.listener.name === 'PLAINTEXT')!
    expect(internal.port).not.toBe(plain.port)
    for (const [bound, host] of [[plain, '127.0.0.1'], [internal, 'localhost']] as const) {
      const c = await RawClient.connect('127.0.0.1', bound.port)
      try {
        const md = await c.metadata(null)
        expect(md.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack])).toEqual([[tb.broker.nodeId, host, bound.port, 'rack-a']])
        expect(md.controllerId).toBe(tb.broker.nodeId)
        const fc = await c.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, FindCoordinator.createFindCoordinatorRequest({ keyType: 0, coordinatorKeys: ['g'] }), 4), FindCoordinator.decodeFindCoordinatorResponse)
        expect(fc.coordinators.map((x) => [x.errorCode, x.nodeId, x.host, x.port])).toEqual([[ErrorCode.NONE, tb.broker.nodeId, host, bound.port]])
        const dc = await c.call(60, 1, (w) => DescribeCluster.encodeDescribeClusterRequest(w, DescribeCluster.createDescribeClusterRequest({ endpointType: 1 }), 1), DescribeCluster.decodeDescribeClusterResponse)
        expect(dc.brokers.map((b) => [b.brokerId, b.host, b.port, b.rack])).toEqual([[tb.broker.nodeId, host, bound.port, 'rack-a']])
      } finally {
        c.close()
      }
    }
  })
})
