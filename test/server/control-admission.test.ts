// ControlAdmission (src/broker/control/network-control.ts) over a counting store double: who it admits as
// the controller (the one ZooKeeper names, at its epoch, to this broker's own registration), the codes it
// refuses with, and what it costs: the store is read only when a request names something other than the
// last confirmed controller, and one read answers every request that arrived before it began.
import { describe, expect, it } from 'vitest'
import { ControlAdmission, type ControlAdmissionOptions } from '../../src/broker/control/network-control.js'
import type { MetadataStore } from '../../src/cluster/metadata-store.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { silentLogger } from '../../src/observability/logger.js'

const BROKER_ID = 2
const OWN_EPOCH = 4_294_967_301n

/** The store's controller and this broker's registration, as ZooKeeper would answer; counts the reads. */
class StoreDouble {
  readonly kind: MetadataStore['kind']
  controllerId = 1
  controllerEpoch = 7
  brokerEpoch = OWN_EPOCH
  reads = 0
  failing = false

  constructor(kind: MetadataStore['kind'] = 'zookeeper') {
    this.kind = kind
  }

  async getControllerId(): Promise<number> {
    this.reads++
    if (this.failing) throw new Error('connection loss')
    return this.controllerId
  }

  async getControllerEpoch(): Promise<{ epoch: number; epochVersion: number } | undefined> {
    return { epoch: this.controllerEpoch, epochVersion: this.controllerEpoch }
  }

  async getBroker(id: number): Promise<{ id: number; epoch: bigint } | undefined> {
    return id === BROKER_ID ? { id, epoch: this.brokerEpoch } : undefined
  }
}

function admissionOver(store: StoreDouble, ownEpoch = () => OWN_EPOCH): ControlAdmission {
  return new ControlAdmission({ brokerId: BROKER_ID, store: store as unknown as ControlAdmissionOptions['store'], ownBrokerEpoch: ownEpoch, log: silentLogger() })
}

/** One request: it arrives, then is admitted (the control plane admits in arrival order). */
const ask = (a: ControlAdmission, controllerId: number, controllerEpoch: number, brokerEpoch: bigint) => a.admit(a.arrive(), controllerId, controllerEpoch, brokerEpoch)

describe('ControlAdmission', () => {
  it('admits the controller ZooKeeper names, at its epoch, to this registration; reads the store once for it', async () => {
    const store = new StoreDouble()
    const a = admissionOver(store)
    expect(await ask(a, 1, 7, OWN_EPOCH)).toBe(ErrorCode.NONE)
    expect(store.reads).toBe(1)
    for (let i = 0; i < 50; i++) expect(await ask(a, 1, 7, OWN_EPOCH)).toBe(ErrorCode.NONE)
    expect(store.reads).toBe(1)
  })

  it('refuses a broker epoch that is not this registration: none (-1), older, or newer than the store has', async () => {
    const store = new StoreDouble()
    const a = admissionOver(store)
    expect(await ask(a, 1, 7, -1n)).toBe(ErrorCode.STALE_BROKER_EPOCH)
    expect(await ask(a, 1, 7, OWN_EPOCH - 1n)).toBe(ErrorCode.STALE_BROKER_EPOCH)
    expect(await ask(a, 1, 7, 2n ** 63n - 1n)).toBe(ErrorCode.STALE_BROKER_EPOCH)
    // The controller may know a new registration before registerBroker returned here: the store confirms it.
    store.brokerEpoch = OWN_EPOCH + 10n
    expect(await ask(a, 1, 7, OWN_EPOCH + 10n)).toBe(ErrorCode.NONE)
  })

  it('refuses controllers ZooKeeper does not name: an epoch ahead of it, another broker, an older epoch', async () => {
    const store = new StoreDouble()
    const a = admissionOver(store)
    expect(await ask(a, 1, 8, OWN_EPOCH)).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
    expect(await ask(a, 1, 2 ** 31 - 1, OWN_EPOCH)).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
    expect(await ask(a, 3, 7, OWN_EPOCH)).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
    const reads = store.reads
    expect(await ask(a, 1, 6, OWN_EPOCH)).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
    expect(store.reads).toBe(reads)
  })

  it('admits a newly elected controller at its new epoch, and then refuses the old one', async () => {
    const store = new StoreDouble()
    const a = admissionOver(store)
    expect(await ask(a, 1, 7, OWN_EPOCH)).toBe(ErrorCode.NONE)
    store.controllerId = 3
    store.controllerEpoch = 8
    expect(await ask(a, 3, 8, OWN_EPOCH)).toBe(ErrorCode.NONE)
    expect(await ask(a, 1, 7, OWN_EPOCH)).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
  })

  it('answers a flood of forged requests with one store read per batch of arrivals, and the real controller still at once', async () => {
    const store = new StoreDouble()
    const a = admissionOver(store)
    const tickets = Array.from({ length: 1000 }, () => a.arrive())
    for (const [i, t] of tickets.entries()) expect(await a.admit(t, 1, 100 + i, OWN_EPOCH)).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
    expect(store.reads).toBe(1)
    expect(await ask(a, 1, 7, OWN_EPOCH)).toBe(ErrorCode.NONE)
    expect(store.reads).toBe(1)
  })

  it('refuses with NOT_CONTROLLER when the store cannot be read, and everything on a broker without ZooKeeper', async () => {
    const store = new StoreDouble()
    store.failing = true
    expect(await ask(admissionOver(store), 1, 7, OWN_EPOCH)).toBe(ErrorCode.NOT_CONTROLLER)
    const embedded = new StoreDouble('embedded')
    expect(await ask(admissionOver(embedded), 1, 7, OWN_EPOCH)).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    expect(embedded.reads).toBe(0)
  })
})
