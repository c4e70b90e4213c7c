// Who may act as the controller from the network. LeaderAndIsr, StopReplica and UpdateMetadata rewrite
// what this broker leads, follows and believes about the cluster, and ControlledShutdown moves a broker's
// leaderships away: a client that could send them would take the partitions (and the group and
// transaction coordinators over them) away from their leaders.
//
// - A broker without ZooKeeper has its controller in this process (direct calls, no socket): it serves
//   none of them from the network and does not advertise them in ApiVersions, as a Kafka broker whose
//   controller is not ZooKeeper (KRaft) does; asking for one closes the connection, Kafka's answer to an
//   API a listener does not serve.
// - In a ZooKeeper cluster a request is admitted only from the active controller this broker can
//   confirm in ZooKeeper: controllerId and controllerEpoch those of /controller and /controller_epoch
//   (older -> STALE_CONTROLLER_EPOCH, Kafka's fencing; anything else is not the controller either and gets
//   the same answer), and brokerEpoch this broker's own registration (Kafka's KIP-380 check; stricter:
//   Kafka lets a newer epoch through, here a newer one is admitted only when the store says it is this
//   broker's registration — the controller may see it before registerBroker returns here; -1, sent by
//   versions before the broker epoch, is refused: Skein's controller always sends it). The broker
//   epoch is the czxid of this broker's registration: an attacker cannot know it. ClusterAction is
//   checked before, by the handlers, when an authorizer is set.
// - Reading the store costs a round trip, so it is read only when a request names a controller or an
//   epoch other than the last confirmed ones, and one read answers every request that arrived before it
//   began (a flood of forged requests costs one read at a time, not one each).
import type { MetadataStore } from '../../cluster/metadata-store.js'
import { ErrorCode } from '../../domain/errors.js'
import type { Logger } from '../../observability/logger.js'
import { ApiKey } from '../../protocol/api-keys.gen.js'
import type { AnyHandler } from '../../server/handlers/common/handler.js'

/** The requests of the control plane: the controller's to a broker, and ControlledShutdown to the controller. */
export const CONTROL_PLANE_API_KEYS: ReadonlySet<number> = new Set([ApiKey.LeaderAndIsr, ApiKey.StopReplica, ApiKey.UpdateMetadata, ApiKey.ControlledShutdown])

/** The handlers a broker serves from the network: without ZooKeeper, none of the control plane's. */
export function servedHandlers(handlers: readonly AnyHandler[], storeKind: MetadataStore['kind']): readonly AnyHandler[] {
  return storeKind === 'embedded' ? handlers.filter((h) => !CONTROL_PLANE_API_KEYS.has(h.api.apiKey)) : handlers
}

/** The store's word on who the controller is and which registration is this broker's. */
interface StoreView {
  /** Every request with a ticket up to this one arrived before the read began. */
  readAfterTicket: number
  controllerId: number
  controllerEpoch: number
  /** This broker's registration epoch in the store; -1 when it is not registered. */
  brokerEpoch: bigint
}

export interface ControlAdmissionOptions {
  brokerId: number
  store: Pick<MetadataStore, 'kind' | 'getControllerId' | 'getControllerEpoch' | 'getBroker'>
  /** This broker's epoch as its registration returned it. */
  ownBrokerEpoch(): bigint
  log: Logger
}

/** Decides whether a control request from the network comes from the active controller (see the header). */
export class ControlAdmission {
  #arrivals = 0
  #confirmed: StoreView | undefined

  constructor(private readonly options: ControlAdmissionOptions) {}

  /** A request arrived (before it waits its turn): its ticket, for admit(). */
  arrive(): number {
    return ++this.#arrivals
  }

  /** NONE when the request comes from the active controller to this registration of this broker, else the error to answer. */
  async admit(ticket: number, controllerId: number, controllerEpoch: number, brokerEpoch: bigint): Promise<ErrorCode> {
    if (this.options.store.kind === 'embedded') return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    const own = this.options.ownBrokerEpoch()
    if (brokerEpoch === -1n || brokerEpoch < own) return ErrorCode.STALE_BROKER_EPOCH
    const known = this.#confirmed
    if (known !== undefined && brokerEpoch === own && controllerId === known.controllerId && controllerEpoch === known.controllerEpoch) return ErrorCode.NONE
    if (known !== undefined && controllerEpoch < known.controllerEpoch) return ErrorCode.STALE_CONTROLLER_EPOCH
    let view: StoreView
    try {
      view = known !== undefined && known.readAfterTicket >= ticket ? known : await this.#read()
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message, controllerId, controllerEpoch }, 'cannot confirm a control request with the metadata store; refused')
      return ErrorCode.NOT_CONTROLLER
    }
    if (brokerEpoch !== own && brokerEpoch !== view.brokerEpoch) return ErrorCode.STALE_BROKER_EPOCH
    if (controllerId !== view.controllerId || controllerEpoch !== view.controllerEpoch) {
      this.options.log.warn({ controllerId, controllerEpoch, activeController: view.controllerId, activeEpoch: view.controllerEpoch }, 'control request not from the active controller; refused')
      return ErrorCode.STALE_CONTROLLER_EPOCH
    }
    return ErrorCode.NONE
  }

  async #read(): Promise<StoreView> {
    const { store, brokerId } = this.options
    const readAfterTicket = this.#arrivals
    const [controllerId, epoch, self] = await Promise.all([store.getControllerId(), store.getControllerEpoch(), store.getBroker(brokerId)])
    const view: StoreView = { readAfterTicket, controllerId, controllerEpoch: epoch?.epoch ?? -1, brokerEpoch: self?.epoch ?? -1n }
    if (this.#confirmed === undefined || this.#confirmed.readAfterTicket < readAfterTicket) this.#confirmed = view
    return view
  }
}
