// Client quota enforcement on the request path (Kafka's KafkaApis + ClientQuotaManager.throttle): what
// each request is measured by and how long its client is throttled.
//
// - Produce: the request's size against producer_byte_rate (Kafka records the request size).
// - Fetch from a consumer: the response's size against consumer_byte_rate.
// - Every request (except those below): its request time against request_percentage, the share of one
//   thread's time in percent. Skein measures the time the request held the event loop: decoding, the
//   synchronous part of its handler and encoding (performance.now() around them). Time spent awaiting
//   shard threads, disk or long polls is not counted, as Kafka does not count purgatory time; work the
//   shard threads do for it is not counted either (an approximation: Kafka counts its I/O threads).
// - CreateTopics, CreatePartitions, DeleteTopics: controller_mutation_rate, checked by those handlers.
// Not throttled (Kafka's exemptions): follower fetches (replication), the inter-broker APIs that need
// ClusterAction (LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown, WriteTxnMarkers,
// AlterPartition...), ApiVersions and the SASL exchange.
//
// The response carries the largest throttle time, and the broker mutes the channel (stops reading the
// socket) for that long. Clients of KIP-219 versions throttle themselves, so their response is sent at
// once and the channel muted after it; older clients get their response after the throttle time, with
// the channel muted meanwhile.
import type { ClientQuotas } from '../quota/client-quotas.js'
import type { MetricsRegistry } from '../observability/metrics.js'

/** The first version of each API whose clients throttle themselves (Kafka's shouldClientThrottle); absent: every version. */
const CLIENT_THROTTLES_FROM: Readonly<Record<number, number>> = {
  0: 6, 1: 8, 2: 3, 3: 6, 8: 4, 9: 4, 10: 2, 11: 3, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2, 18: 2, 19: 3, 20: 2, 21: 1, 22: 1,
  23: 2, 24: 1, 25: 1, 26: 1, 28: 1, 29: 1, 30: 1, 31: 1, 32: 2, 33: 1, 35: 1, 36: 1, 37: 1, 42: 1,
}

export function clientThrottles(apiKey: number, version: number): boolean {
  return version >= (CLIENT_THROTTLES_FROM[apiKey] ?? 0)
}

/**
 * SaslHandshake, ApiVersions, SaslAuthenticate, and the inter-broker APIs (ClusterAction): LeaderAndIsr,
 * StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterPartition.
 */
const EXEMPT_APIS = new Set([17, 18, 36, 4, 5, 6, 7, 27, 56])

/** The user a connection's quotas are looked up by: the principal's name ("User:alice" -> "alice"). */
export function quotaUser(principal: string): string {
  const colon = principal.indexOf(':')
  return colon < 0 ? principal : principal.slice(colon + 1)
}

export class RequestThrottler {
  constructor(readonly quotas: ClientQuotas) {}

  get active(): boolean {
    return this.quotas.active
  }

  /** Requests no client quota applies to. */
  exempt(apiKey: number, fromFollower: boolean): boolean {
    return fromFollower || EXEMPT_APIS.has(apiKey)
  }

  produceThrottleMs(principal: string, clientId: string, requestBytes: number, now: number): number {
    return this.quotas.produce.recordAndGetThrottleTimeMs(quotaUser(principal), clientId, requestBytes, now)
  }

  fetchThrottleMs(principal: string, clientId: string, responseBytes: number, now: number): number {
    return this.quotas.fetch.recordAndGetThrottleTimeMs(quotaUser(principal), clientId, responseBytes, now)
  }

  /** requestTimeMs of one thread's time, recorded as a percentage rate (Kafka's nanosToPercentage). */
  requestThrottleMs(principal: string, clientId: string, requestTimeMs: number, now: number): number {
    return this.quotas.request.recordAndGetThrottleTimeMs(quotaUser(principal), clientId, requestTimeMs / 10, now)
  }

  /**
   * Kafka's quota metrics, as the JMX exporter names them: kafka.server:type=Produce|Fetch|Request|
   * ControllerMutation,user=U,client-id=C with byte-rate / request-time / mutation-rate and throttle-time.
   */
  registerMetrics(registry: MetricsRegistry): void {
    const families: [string, 'produce' | 'fetch' | 'request' | 'controllerMutation', string, string][] = [
      ['produce', 'produce', 'byte_rate', 'Bytes per second produced, by quota user and client-id'],
      ['fetch', 'fetch', 'byte_rate', 'Bytes per second fetched by consumers, by quota user and client-id'],
      ['request', 'request', 'request_time', 'Request handling time in percent of one thread, by quota user and client-id'],
      ['controllermutation', 'controllerMutation', 'mutation_rate', 'Partition mutations per second, by quota user and client-id'],
    ]
    for (const [type, manager, rateName, help] of families) {
      registry.collected(`kafka_server_${type}_${rateName}`, help, 'gauge', ['user', 'client_id'], (emit) => {
        for (const s of this.quotas[manager].snapshot(Date.now())) emit([s.user, s.clientId], s.rate)
      })
      registry.collected(`kafka_server_${type}_throttle_time`, `Average throttle time (ms) of ${type} quota sensors`, 'gauge', ['user', 'client_id'], (emit) => {
        for (const s of this.quotas[manager].snapshot(Date.now())) emit([s.user, s.clientId], s.throttleTimeMs)
      })
    }
  }
}
