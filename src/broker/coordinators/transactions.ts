// The broker side of the transaction coordinator: __transaction_state is created on first use
// (transaction.state.log.num.partitions, .replication.factor, .segment.bytes, cleanup.policy=compact,
// as Kafka does: never by a client's Metadata auto-creation), the coordinator's PartitionWriter goes
// through the partition service as the group coordinator's does, producer ids come from the broker's
// ProducerIdManager, and transaction markers are written by each partition's leader (here, or sent to it
// with WriteTxnMarkers). A marker written to a
// __consumer_offsets partition is also handed to the group coordinator, which commits or drops the
// producer's pending TxnOffsetCommit offsets (a restart gets the same result by replaying the marker).
// When the topic exists at startup every partition is replayed in the background, and transactions
// found in PrepareCommit/PrepareAbort are completed. Each partition is coordinated in the epoch Kafka
// uses, its leader epoch (Metadata's), which every marker carries as its coordinator epoch; a partition
// refuses a marker from an older coordinator epoch than one it has seen (TRANSACTION_COORDINATOR_FENCED).
import { systemClock } from '../../coordinator/runtime/clock.js'
import { txnStatusFromName } from '../../coordinator/transaction/transaction-log-records.js'
import { TransactionCoordinator } from '../../coordinator/transaction/txn-coordinator.js'
import type { ProducerIdSource, TransactionCoordinatorConfig, TxnMarkerItem, TxnMarkerWriter } from '../../coordinator/transaction/types.js'
import { BrokerConnection } from '../../client/connection.js'
import type { ClientSecurity } from '../../client/sasl.js'
import type { MetadataImage } from '../../cluster/metadata-image.js'
import { ErrorCode } from '../../domain/errors.js'
import { ApiKey } from '../../protocol/api-keys.gen.js'
import * as WriteTxnMarkers from '../../protocol/messages/27-write-txn-markers.gen.js'
import type { TopicInfo } from '../../server/handlers/common/ports.js'
import { CoordinatorPartitionWriter } from './coordinator-partition-writer.js'
import { CONSUMER_OFFSETS_TOPIC, type GroupService } from './groups.js'
import type { TransactionCoordinatorService } from '../../server/handlers/common/ports.js'
import type { ReplicaManager } from '../../replication/replica-manager.js'
import { InternalTopicService, type InternalTopicPorts, type InternalTopicSpec } from './internal-topic-service.js'

export const TRANSACTION_STATE_TOPIC = '__transaction_state'
const WRITE_TXN_MARKERS_VERSION = 1
/** How long a __transaction_state append may wait for the in-sync replicas (Kafka's request.timeout.ms default). */
const TRANSACTION_STATE_APPEND_TIMEOUT_MS = 30_000

/** What the marker writer uses of the broker: its partitions, who leads the others, and how to reach them. */
export interface MarkerWriterPorts {
  readonly nodeId: number
  readonly log: InternalTopicPorts['log']
  readonly partitions: Pick<ReplicaManager, 'leaderError' | 'writeTxnMarkers'>
  /** The partition leaders and live brokers as the controller last told this broker. */
  readonly metadata: Pick<MetadataImage, 'partition' | 'liveBrokers'>
  readonly interBrokerListener: string
  /** TLS and SASL of this broker's connections to the others; undefined for PLAINTEXT. */
  readonly interBrokerSecurity: ClientSecurity | undefined
  /** The group coordinator, told of markers written to __consumer_offsets. */
  readonly groups: Pick<GroupService, 'coordinator'>
}

/** What the transaction service uses of the broker: an internal topic's ports, the marker writer's, producer ids. */
export interface TransactionServicePorts extends InternalTopicPorts, MarkerWriterPorts {
  readonly partitions: InternalTopicPorts['partitions'] & MarkerWriterPorts['partitions']
  readonly producerIds: ProducerIdSource
}

/**
 * Markers go to each partition's leader: written here through the partition service when this broker
 * leads the partition (the group coordinator learns of markers in __consumer_offsets), else sent in a
 * WriteTxnMarkers request to the leader the metadata names (Kafka's TransactionMarkerChannelManager), one
 * request per leader broker. A partition without a known leader answers NOT_LEADER_OR_FOLLOWER, which the
 * coordinator retries.
 */
export class BrokerMarkerWriter implements TxnMarkerWriter {
  readonly #links = new Map<number, BrokerConnection>()
  #closed = false

  constructor(private readonly ports: MarkerWriterPorts) {}

  async writeMarkers(items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]> {
    const { ports } = this
    const answers: { errorCode: number }[] = new Array(items.length)
    const local: number[] = []
    const remote = new Map<number, number[]>()
    items.forEach((item, i) => {
      const error = ports.partitions.leaderError(item.topic, item.partition)
      if (error === ErrorCode.NONE) {
        local.push(i)
        return
      }
      const leaderId = ports.metadata.partition(item.topic, item.partition)?.leaderId ?? -1
      if (error === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION || leaderId < 0 || leaderId === ports.nodeId) {
        answers[i] = { errorCode: error === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION ? error : ErrorCode.NOT_LEADER_OR_FOLLOWER }
        return
      }
      let list = remote.get(leaderId)
      if (list === undefined) remote.set(leaderId, (list = []))
      list.push(i)
    })
    const localAnswers = this.writeLocal(local.map((i) => items[i]!))
    const sent = [...remote].map(async ([leaderId, at]) => {
      const results = await this.#send(leaderId, at.map((i) => items[i]!)).catch((err: unknown) => {
        ports.log.warn({ leaderId, err: (err as Error).message }, 'cannot send transaction markers to the partition leader; retrying later')
        this.#links.get(leaderId)?.close()
        this.#links.delete(leaderId)
        return at.map(() => ({ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER }))
      })
      at.forEach((i, j) => {
        answers[i] = results[j]!
      })
    })
    const [written] = await Promise.all([localAnswers, ...sent])
    local.forEach((i, j) => {
      answers[i] = written[j]!
    })
    return answers
  }

  /** Writes markers to partitions this broker leads (WriteTxnMarkers from a coordinator elsewhere, too). */
  async writeLocal(items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]> {
    const { ports } = this
    if (items.length === 0) return []
    const results = await ports.partitions.writeTxnMarkers(items)
    const answers: { errorCode: number }[] = []
    for (const [i, item] of items.entries()) {
      const r = results[i]
      if (r === undefined || !r.ok) {
        // TRANSACTION_COORDINATOR_FENCED / INVALID_PRODUCER_EPOCH included: the coordinator decides.
        answers.push({ errorCode: r === undefined ? ErrorCode.UNKNOWN_SERVER_ERROR : r.errorCode })
        continue
      }
      if (item.topic === CONSUMER_OFFSETS_TOPIC) {
        try {
          const groups = await ports.groups.coordinator()
          await groups.onTxnCompleted(item.partition, item.producerId, item.commit)
        } catch (err) {
          // The marker is in the log: the group partition applies it when it (re)loads.
          ports.log.warn({ partition: item.partition, producerId: item.producerId, err: (err as Error)?.message }, 'group coordinator did not take a transaction marker now')
        }
      }
      answers.push({ errorCode: ErrorCode.NONE })
    }
    return answers
  }

  /** One WriteTxnMarkers request to a leader broker; one answer per item, in order. */
  async #send(leaderId: number, items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]> {
    let conn = this.#links.get(leaderId)
    if (conn === undefined || conn.closed) {
      const { ports } = this
      const endpoint = ports.metadata.liveBrokers().find((b) => b.id === leaderId)?.endpoints.find((e) => e.listenerName === ports.interBrokerListener)
      if (endpoint === undefined) throw new Error(`broker ${leaderId} is not live`)
      conn = await BrokerConnection.connect({ host: endpoint.host, port: endpoint.port, clientId: `broker-${ports.nodeId}-txn-markers`, connectTimeoutMs: 5000, requestTimeoutMs: 30_000, security: ports.interBrokerSecurity })
      // close() ran while connecting: this connection would outlive it and keep the process alive.
      if (this.#closed) {
        conn.close()
        throw new Error('the marker writer is closed')
      }
      // Another send connected meanwhile: keep its connection, close ours (a replaced one would leak).
      const current = this.#links.get(leaderId)
      if (current !== undefined && !current.closed) {
        conn.close()
        conn = current
      } else {
        this.#links.set(leaderId, conn)
      }
    }
    const req = WriteTxnMarkers.createWriteTxnMarkersRequest({
      markers: items.map((m) => WriteTxnMarkers.createWritableTxnMarker({
        producerId: BigInt(m.producerId),
        producerEpoch: m.producerEpoch,
        transactionResult: m.commit,
        coordinatorEpoch: m.coordinatorEpoch,
        topics: [WriteTxnMarkers.createWritableTxnMarkerTopic({ name: m.topic, partitionIndexes: [m.partition] })],
      })),
    })
    const res = await conn.send(ApiKey.WriteTxnMarkers, (w) => WriteTxnMarkers.encodeWriteTxnMarkersRequest(w, req, WRITE_TXN_MARKERS_VERSION), WriteTxnMarkers.decodeWriteTxnMarkersResponse, {
      version: WRITE_TXN_MARKERS_VERSION,
    })
    // One marker per item, answered in order (Kafka answers markers in request order).
    return items.map((m, i) => {
      const partition = res.markers[i]?.topics.find((t) => t.name === m.topic)?.partitions.find((p) => p.partitionIndex === m.partition)
      return { errorCode: partition?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR }
    })
  }

  close(): void {
    this.#closed = true
    for (const c of this.#links.values()) c.close()
    this.#links.clear()
  }
}

/** Owns the broker's TransactionCoordinator: created with __transaction_state on first use, closed on stop. */
export class TransactionService extends InternalTopicService<TransactionCoordinator, TransactionServicePorts> implements TransactionCoordinatorService {
  readonly #markers: BrokerMarkerWriter

  constructor(ports: TransactionServicePorts) {
    super(ports, TRANSACTION_STATE_TOPIC)
    this.#markers = new BrokerMarkerWriter(ports)
  }

  /** WriteTxnMarkers from a transaction coordinator: markers for partitions this broker leads. */
  writeLocalMarkers(items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]> {
    return this.#markers.writeLocal(items)
  }

  override close(): void {
    super.close()
    this.#markers.close()
  }

  isStateName(name: string): boolean {
    return txnStatusFromName(name) !== undefined
  }

  protected topicSpec(): InternalTopicSpec {
    const c = this.ports.config()
    return {
      numPartitions: c.getInt('transaction.state.log.num.partitions'),
      replicationFactor: c.getInt('transaction.state.log.replication.factor'),
      configs: {
        'cleanup.policy': 'compact',
        'segment.bytes': String(c.getInt('transaction.state.log.segment.bytes')),
        'min.insync.replicas': String(c.getInt('transaction.state.log.min.isr')),
      },
    }
  }

  protected build(topic: TopicInfo): TransactionCoordinator {
    const { ports } = this
    const c = ports.config()
    const config: TransactionCoordinatorConfig = {
      transactionStatePartitions: topic.partitions,
      maxTimeoutMs: c.getInt('transaction.max.timeout.ms'),
      transactionalIdExpirationMs: c.getInt('transactional.id.expiration.ms'),
      abortTimedOutTransactionsIntervalMs: c.getInt('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
      removeExpiredTransactionalIdsIntervalMs: c.getInt('transaction.remove.expired.transaction.cleanup.interval.ms'),
    }
    const writer = new CoordinatorPartitionWriter(ports.partitions, TRANSACTION_STATE_TOPIC, TRANSACTION_STATE_APPEND_TIMEOUT_MS)
    // The coordinator epoch of a partition is its leader epoch (Kafka's onElection), which markers carry.
    const partitionEpoch = (partition: number): number => ports.metadata.partition(TRANSACTION_STATE_TOPIC, partition)?.leaderEpoch ?? 0
    return new TransactionCoordinator({ config, partitionEpoch, writer, markers: this.#markers, producerIds: ports.producerIds, clock: systemClock, log: ports.log })
  }
}
