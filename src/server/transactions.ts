// The broker side of the transaction coordinator: __transaction_state is created on first use
// (transaction.state.log.num.partitions, .replication.factor, .segment.bytes, cleanup.policy=compact,
// as Kafka does: never by a client's Metadata auto-creation), the coordinator's PartitionWriter goes
// through the partition service as the group coordinator's does, producer ids come from the broker's
// ProducerIdManager, and transaction markers are written by the partition service. A marker written to a
// __consumer_offsets partition is also handed to the group coordinator, which commits or drops the
// producer's pending TxnOffsetCommit offsets (a restart gets the same result by replaying the marker).
// When the topic exists at startup every partition is replayed in the background, and transactions
// found in PrepareCommit/PrepareAbort are completed.
import { systemClock } from '../coordinator/runtime/clock.js'
import { txnStatusFromName } from '../coordinator/transaction/records.js'
import { TransactionCoordinator } from '../coordinator/transaction/txn-coordinator.js'
import type { TransactionCoordinatorConfig, TxnMarkerItem, TxnMarkerWriter } from '../coordinator/transaction/types.js'
import { ErrorCode } from '../domain/errors.js'
import type { TopicInfo } from './handlers/common/ports.js'
import type { Broker } from './broker.js'
import { CoordinatorPartitionWriter } from './coordinator-partition-writer.js'
import { CONSUMER_OFFSETS_TOPIC } from './groups.js'
import type { TransactionCoordinatorService } from './handlers/common/ports.js'
import { InternalTopicService, type InternalTopicSpec } from './internal-topic-service.js'

/** The coordinator epoch of the transaction coordinator until coordinators move with partition leadership. */
const COORDINATOR_EPOCH = 0

export const TRANSACTION_STATE_TOPIC = '__transaction_state'
/** How long a __transaction_state append may wait for the in-sync replicas (Kafka's request.timeout.ms default). */
const TRANSACTION_STATE_APPEND_TIMEOUT_MS = 30_000

/** Markers through the partition service; the group coordinator learns of markers in __consumer_offsets. */
class BrokerMarkerWriter implements TxnMarkerWriter {
  constructor(private readonly broker: Broker) {}

  async writeMarkers(items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]> {
    const { broker } = this
    const results = await broker.partitions.writeTxnMarkers(items)
    const answers: { errorCode: number }[] = []
    for (const [i, item] of items.entries()) {
      const r = results[i]
      if (r === undefined || !r.ok) {
        const code = r === undefined ? ErrorCode.UNKNOWN_SERVER_ERROR : r.errorCode
        // A newer epoch or coordinator already wrote there: this marker is obsolete (Kafka drops it too).
        if (code === ErrorCode.INVALID_PRODUCER_EPOCH || code === ErrorCode.TRANSACTION_COORDINATOR_FENCED) {
          broker.log.warn({ topic: item.topic, partition: item.partition, producerId: item.producerId, error: code }, 'transaction marker refused by the partition; dropped')
          answers.push({ errorCode: ErrorCode.NONE })
        } else {
          answers.push({ errorCode: code })
        }
        continue
      }
      if (item.topic === CONSUMER_OFFSETS_TOPIC) {
        try {
          const groups = await broker.groups.coordinator()
          await groups.onTxnCompleted(item.partition, item.producerId, item.commit)
        } catch (err) {
          // The marker is in the log: the group partition applies it when it (re)loads.
          broker.log.warn({ partition: item.partition, producerId: item.producerId, err: (err as Error)?.message }, 'group coordinator did not take a transaction marker now')
        }
      }
      answers.push({ errorCode: ErrorCode.NONE })
    }
    return answers
  }
}

/** Owns the broker's TransactionCoordinator: created with __transaction_state on first use, closed on stop. */
export class TransactionService extends InternalTopicService<TransactionCoordinator> implements TransactionCoordinatorService {
  constructor(broker: Broker) {
    super(broker, TRANSACTION_STATE_TOPIC)
  }

  isStateName(name: string): boolean {
    return txnStatusFromName(name) !== undefined
  }

  protected topicSpec(): InternalTopicSpec {
    const c = this.broker.config
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
    const { broker } = this
    const c = broker.config
    const config: TransactionCoordinatorConfig = {
      transactionStatePartitions: topic.partitions,
      maxTimeoutMs: c.getInt('transaction.max.timeout.ms'),
      transactionalIdExpirationMs: c.getInt('transactional.id.expiration.ms'),
      abortTimedOutTransactionsIntervalMs: c.getInt('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
      removeExpiredTransactionalIdsIntervalMs: c.getInt('transaction.remove.expired.transaction.cleanup.interval.ms'),
      coordinatorEpoch: COORDINATOR_EPOCH,
    }
    const writer = new CoordinatorPartitionWriter(broker.partitions, TRANSACTION_STATE_TOPIC, TRANSACTION_STATE_APPEND_TIMEOUT_MS)
    return new TransactionCoordinator({ config, writer, markers: new BrokerMarkerWriter(broker), producerIds: broker.producerIds, clock: systemClock, log: broker.log })
  }
}
