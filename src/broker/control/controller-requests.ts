// Requests from this broker to the active controller (AlterPartition from partition leaders): answered in
// process when this broker's own controller is the active one, else sent over one connection to the
// controller's inter-broker endpoint (as the metadata image or the store names it), reopened when the
// controller moves or the connection fails. A request with no controller to answer it rejects; the
// caller retries later.
import { BrokerConnection } from '../../client/connection.js'
import type { ClientSecurity } from '../../client/sasl.js'
import type { Controller } from '../../cluster/controller/controller.js'
import type { MetadataImage } from '../../cluster/metadata-image.js'
import type { MetadataStore } from '../../cluster/metadata-store.js'
import { ApiKey } from '../../protocol/api-keys.gen.js'
import * as AlterPartition from '../../protocol/messages/56-alter-partition.gen.js'
import type { BrokerControlPlane } from './control-plane.js'

/** Names topics (v1): a leader knows names; topic ids are v2+. */
const ALTER_PARTITION_VERSION = 1

export class ControllerRequests {
  #conn: { controllerId: number; conn: BrokerConnection } | undefined
  #closed = false

  constructor(
    private readonly brokerId: number,
    private readonly controller: Controller,
    private readonly control: BrokerControlPlane,
    private readonly image: MetadataImage,
    private readonly store: MetadataStore,
    private readonly interBrokerListener: string,
    /** The inter-broker listener's TLS and SASL; undefined for PLAINTEXT. */
    private readonly security: ClientSecurity | undefined = undefined,
  ) {}

  async alterPartition(request: AlterPartition.AlterPartitionRequest): Promise<AlterPartition.AlterPartitionResponse> {
    if (this.controller.isActive) return this.control.alterPartition(request, ALTER_PARTITION_VERSION)
    const conn = await this.#connection()
    try {
      return await conn.send(
        ApiKey.AlterPartition,
        (w) => AlterPartition.encodeAlterPartitionRequest(w, request, ALTER_PARTITION_VERSION),
        AlterPartition.decodeAlterPartitionResponse,
        { version: ALTER_PARTITION_VERSION },
      )
    } catch (err) {
      this.#reset()
      throw err
    }
  }

  async #connection(): Promise<BrokerConnection> {
    if (this.#closed) throw new Error('the broker is shutting down')
    let controllerId = this.image.controllerId
    if (controllerId < 0 || !this.image.isLive(controllerId)) controllerId = await this.store.getControllerId()
    if (controllerId < 0) throw new Error('no active controller')
    const cached = this.#conn
    if (cached !== undefined && cached.controllerId === controllerId && !cached.conn.closed) return cached.conn
    this.#reset()
    const endpoint = this.image.liveBrokers().find((b) => b.id === controllerId)?.endpoints.find((e) => e.listenerName === this.interBrokerListener)
    if (endpoint === undefined) throw new Error(`no endpoint for controller ${controllerId}`)
    const conn = await BrokerConnection.connect({ host: endpoint.host, port: endpoint.port, clientId: `broker-${this.brokerId}-alter-partition`, connectTimeoutMs: 5000, requestTimeoutMs: 30_000, security: this.security })
    if (this.#closed) {
      // Shut down while connecting (an ISR change still under way): an open socket would keep the process alive.
      conn.close()
      throw new Error('the broker is shutting down')
    }
    // Another request connected meanwhile: use its connection and close ours (replacing it would leave one
    // socket that nothing closes, holding the process open after shutdown).
    const current = this.#conn
    if (current !== undefined && current.controllerId === controllerId && !current.conn.closed) {
      conn.close()
      return current.conn
    }
    this.#reset()
    this.#conn = { controllerId, conn }
    return conn
  }

  /** Drops the connection (it is reopened on the next request). */
  #reset(): void {
    this.#conn?.conn.close()
    this.#conn = undefined
  }

  /** At shutdown: the connection goes and no request opens another. */
  close(): void {
    this.#closed = true
    this.#reset()
  }
}
