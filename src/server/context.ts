// What a handler knows about the request it serves, besides the request body.
import type { RequestHeader } from '../protocol/header.js'
import type { Broker } from './broker.js'
import type { Connection } from './connection.js'

export interface RequestContext {
  header: RequestHeader
  apiKey: number
  apiVersion: number
  clientId: string | null
  connection: Connection
  broker: Broker
  /** When the whole frame had arrived (ms). */
  receivedAt: number
  /**
   * Called once the response has been written (or the connection closed); handlers that hand out
   * file regions release their leases here.
   */
  onResponseDone(fn: () => void): void
}
