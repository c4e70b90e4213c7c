// Producer ids for InitProducerId: handed out from blocks reserved in a file, so that no id is ever
// given twice, across restarts too (Kafka's ProducerIdManager, whose blocks come from the controller).
//
// File `<dataDir>/producer-id-block`, text, '\n' line ends:
//   line 1: format version, 0
//   line 2: the first producer id NOT yet reserved (the end of the current block)
// Before handing out the first id of a block the file is rewritten atomically (tmp + fsync + rename +
// dir fsync) with the block's end, so a crash at any point leaves a value at or above every id handed
// out; the ids left in a block at shutdown or crash are skipped. A missing file means no id was ever
// handed out (start at 0); an unreadable or malformed one refuses allocation (UNKNOWN_SERVER_ERROR)
// rather than risk reusing ids.
//
// Epochs (KIP-360): an idempotent producer that asks again with its id and epoch (InitProducerId v3+)
// gets the same id with the epoch bumped, which fences the old epoch in every partition; the last
// epochs handed out are remembered in memory only (bounded), and a producer id not remembered (handed
// out before a restart, or evicted) gets a new producer id, which is what Kafka answers to every
// idempotent InitProducerId.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { writeFileAtomic } from '../storage/durability.js'

export const PRODUCER_ID_BLOCK_FILE = 'producer-id-block'
export const PRODUCER_ID_BLOCK_SIZE = 1000
/** Kafka's Short.MAX_VALUE: an epoch that cannot be bumped any more gets a new producer id. */
const MAX_EPOCH = 0x7fff
/** Producer ids whose last epoch is remembered for KIP-360 bumps. */
const REMEMBERED_PRODUCERS = 100_000

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
  readonly #path: () => string
  readonly #blockSize: number
  #next = -1
  #blockEnd = -1
  #reserving: Promise<void> | null = null
  readonly #epochs = new Map<number, Remembered>()

  /** dataDir may be a function, read on the first allocation. */
  constructor(dataDir: string | (() => string), blockSize = PRODUCER_ID_BLOCK_SIZE) {
    this.#path = () => join(typeof dataDir === 'string' ? dataDir : dataDir(), PRODUCER_ID_BLOCK_FILE)
    if (!Number.isInteger(blockSize) || blockSize < 1) throw new RangeError(`blockSize ${blockSize}`)
    this.#blockSize = blockSize
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
    const path = this.#path()
    const start = this.#blockEnd >= 0 ? this.#blockEnd : readBlockFile(path)
    const end = start + this.#blockSize
    if (!Number.isSafeInteger(end)) throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, 'producer ids are exhausted')
    await writeFileAtomic(path, `0\n${end}\n`)
    this.#next = start
    this.#blockEnd = end
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

/** The first unreserved id recorded in the block file; 0 when there is none. Throws when it is unusable. */
export function readBlockFile(path: string): number {
  let text: string
  try {
    const buf = readFileSync(path)
    if (buf.length > 64) throw new Error(`${buf.length} bytes`)
    text = buf.toString('utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0
    throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `cannot read ${path}: ${(err as Error).message}`)
  }
  const m = /^0\n(\d{1,16})\n$/.exec(text)
  const value = m === null ? NaN : Number(m[1])
  if (!Number.isSafeInteger(value)) throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `${path} is malformed; refusing to hand out producer ids that may repeat`)
  return value
}
