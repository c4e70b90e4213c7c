// Producer ids for InitProducerId: handed out from blocks reserved in the metadata store, so that no id is
// ever given twice, across restarts and across the brokers of a cluster (Kafka's ZkProducerIdManager:
// /latest_producer_id_block in ZooKeeper, a conditional update per block of 1000; a single broker keeps
// its blocks in <log.dir>/producer-id-block, see embedded-store.ts). The ids left in a block at shutdown
// or crash are skipped; a store that cannot hand out a block fails the request (UNKNOWN_SERVER_ERROR)
// rather than risk reusing ids.
//
// Epochs (KIP-360): an idempotent producer that asks again with its id and epoch (InitProducerId v3+)
// gets the same id with the epoch bumped, which fences the old epoch in every partition; the last
// epochs handed out are remembered in memory only (bounded), and a producer id not remembered (handed
// out before a restart, or evicted) gets a new producer id, which is what Kafka answers to every
// idempotent InitProducerId.

import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { ProducerIdBlock } from '../cluster/metadata-store.js'

export const PRODUCER_ID_BLOCK_SIZE = 1000
/** Kafka's Short.MAX_VALUE: an epoch that cannot be bumped any more gets a new producer id. */
const MAX_EPOCH = 0x7fff
/** Producer ids whose last epoch is remembered for KIP-360 bumps. */
const REMEMBERED_PRODUCERS = 100_000

/** Where blocks come from: the metadata store, for this broker. */
export type ProducerIdBlockSource = (blockSize: number) => Promise<ProducerIdBlock>

export interface ProducerIdAndEpoch {
  producerId: number
  producerEpoch: number
}

interface Remembered {
  epoch: number
  /** The epoch bumped from, so that a retried bump (response lost) gets the same answer. */
  previous: number
}

export class ProducerIdManager {
  readonly #source: ProducerIdBlockSource
  readonly #blockSize: number
  #next = -1
  #blockEnd = -1
  #reserving: Promise<void> | null = null
  readonly #epochs = new Map<number, Remembered>()

  constructor(source: ProducerIdBlockSource, blockSize = PRODUCER_ID_BLOCK_SIZE) {
    this.#source = source
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new RangeError(`blockSize ${blockSize}`)
    this.#blockSize = blockSize
  }

  /**
   * Reserves the first block now (Kafka's PIDManager grabs its first block when the broker starts), so the
   * first InitProducerId answers without a metadata-store round trip (a ZooKeeper read and conditional
   * write). A failure is logged by the caller and left to the first InitProducerId, which tries again.
   */
  reserveFirstBlock(): Promise<void> {
    if (this.#next >= 0) return Promise.resolve()
    this.#reserving ??= this.#reserveBlock().finally(() => {
      this.#reserving = null
    })
    return this.#reserving
  }

  /** A producer id never handed out before. */
  async nextProducerId(): Promise<number> {
    while (this.#next < 0 || this.#next >= this.#blockEnd) {
      this.#reserving ??= this.#reserveBlock().finally(() => {
        this.#reserving = null
      })
      await this.#reserving
    }
    return this.#next++
  }

  async #reserveBlock(): Promise<void> {
    let block: ProducerIdBlock
    try {
      block = await this.#source(this.#blockSize)
    } catch (err) {
      if (err instanceof KafkaError) throw err
      throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `cannot reserve producer ids: ${(err as Error).message}`)
    }
    this.#next = block.firstProducerId
    this.#blockEnd = block.lastProducerId + 1
  }

  /**
   * InitProducerId for an idempotent producer (transactionalId null). current is the producer's id and
   * epoch when it sent them (v3+), else null: see the file header. Throws KafkaError.
   */
  async initProducerId(current: ProducerIdAndEpoch | null): Promise<ProducerIdAndEpoch> {
    if (current !== null) {
      const known = this.#epochs.get(current.producerId)
      if (known !== undefined) {
        if (current.producerEpoch === known.previous) return { producerId: current.producerId, producerEpoch: known.epoch }
        if (current.producerEpoch !== known.epoch) {
          throw new KafkaError(
            ErrorCode.INVALID_PRODUCER_EPOCH,
            `producer ${current.producerId} has epoch ${known.epoch}, not ${current.producerEpoch}`,
          )
        }
        if (known.epoch < MAX_EPOCH) {
          this.#remember(current.producerId, known.epoch + 1, known.epoch)
          return { producerId: current.producerId, producerEpoch: known.epoch + 1 }
        }
      }
    }
    const producerId = await this.nextProducerId()
    this.#remember(producerId, 0, -1)
    return { producerId, producerEpoch: 0 }
  }

  #remember(producerId: number, epoch: number, previous: number): void {
    this.#epochs.delete(producerId)
    this.#epochs.set(producerId, { epoch, previous })
    // Maps iterate in insertion order: the first key is the producer not heard from the longest.
    if (this.#epochs.size > REMEMBERED_PRODUCERS) this.#epochs.delete(this.#epochs.keys().next().value!)
  }
}
