// Connect's group protocol (protocol type "connect"), byte for byte as Kafka's ConnectProtocol (eager,
// protocol "default", version 0) and IncrementalCooperativeConnectProtocol (protocols "compatible",
// version 1, and "sessioned", version 2), so Skein workers and Kafka's could share a group:
//
//   metadata   v0: version int16, url string, config-offset int64
//              v1/v2: the same, then allocation: nullable bytes = the member's current assignment
//                     (serialized as below), so the leader knows what everyone runs
//   assignment v0: version int16, error int16, leader string, leader-url string, config-offset int64,
//                  assignment [connector string, tasks [int32]]
//              v1/v2: the same, then revoked [connector string, tasks [int32]] and delay int32
//
// A connector instance is task id -1 (CONNECTOR_TASK) in the task lists. In the incremental protocols
// the assignment lists what the member gains; revoked what it must stop; delay how long until the leader
// reassigns the work of departed members (scheduled.rebalance.max.delay.ms).
import { Reader } from '../../protocol/primitives/reader.js'
import { Writer } from '../../protocol/primitives/writer.js'

export const CONNECT_PROTOCOL_TYPE = 'connect'
export const CONNECTOR_TASK = -1
export const ASSIGNMENT_NO_ERROR = 0
/** The leader's config log was behind a member's: read to the end and rejoin. */
export const ASSIGNMENT_CONFIG_MISMATCH = 1

export type ProtocolMode = 'eager' | 'compatible' | 'sessioned'
export const PROTOCOL_NAMES: Record<ProtocolMode, string> = { eager: 'default', compatible: 'compatible', sessioned: 'sessioned' }
const PROTOCOL_VERSION: Record<string, number> = { default: 0, compatible: 1, sessioned: 2 }

/** What a worker runs: connector names and task ids (connector -> task numbers). */
export interface ConnectorsAndTasks {
  connectors: string[]
  tasks: { connector: string; task: number }[]
}

export interface WorkerState {
  url: string
  configOffset: number
  /** The member's assignment as it joins (incremental protocols). */
  allocation: ConnectAssignment | null
}

export interface ConnectAssignment {
  version: number
  error: number
  leader: string
  leaderUrl: string
  configOffset: number
  assigned: ConnectorsAndTasks
  revoked: ConnectorsAndTasks
  delayMs: number
}

export const EMPTY: ConnectorsAndTasks = Object.freeze({ connectors: [], tasks: [] }) as ConnectorsAndTasks

export function taskIdString(t: { connector: string; task: number }): string {
  return `${t.connector}-${t.task}`
}

function writeConnectorTasks(w: Writer, ct: ConnectorsAndTasks): void {
  const byConnector = new Map<string, number[]>()
  for (const c of ct.connectors) (byConnector.get(c) ?? byConnector.set(c, []).get(c)!).push(CONNECTOR_TASK)
  for (const t of ct.tasks) (byConnector.get(t.connector) ?? byConnector.set(t.connector, []).get(t.connector)!).push(t.task)
  w.writeInt32(byConnector.size)
  for (const [connector, tasks] of byConnector) {
    w.writeString(connector)
    w.writeInt32(tasks.length)
    for (const t of tasks) w.writeInt32(t)
  }
}

function readConnectorTasks(r: Reader, nullable: boolean): ConnectorsAndTasks {
  const out: ConnectorsAndTasks = { connectors: [], tasks: [] }
  const n = r.readArrayLength(6, nullable)
  for (let i = 0; i < n; i++) {
    const connector = r.readString()
    const m = r.readArrayLength(4, false)
    for (let j = 0; j < m; j++) {
      const task = r.readInt32()
      if (task === CONNECTOR_TASK) out.connectors.push(connector)
      else out.tasks.push({ connector, task })
    }
  }
  return out
}

export function encodeMetadata(state: WorkerState, protocol: string): Buffer {
  const version = PROTOCOL_VERSION[protocol] ?? 0
  const w = new Writer(64)
  w.writeInt16(version)
  w.writeString(state.url)
  w.writeInt64(BigInt(state.configOffset))
  if (version >= 1) w.writeNullableBytes(state.allocation === null ? null : encodeAssignment(state.allocation))
  return w.toBuffer()
}

export function decodeMetadata(buf: Buffer): WorkerState {
  const r = new Reader(buf)
  const version = r.readInt16()
  if (version < 0) throw new Error(`Unsupported subscription version: ${version}`)
  const url = r.readString()
  const configOffset = Number(r.readInt64())
  let allocation: ConnectAssignment | null = null
  if (version >= 1 && r.remaining > 0) {
    const bytes = r.readNullableBytes()
    if (bytes !== null) allocation = decodeAssignment(bytes)
  }
  return { url, configOffset, allocation }
}

export function encodeAssignment(a: ConnectAssignment): Buffer {
  const w = new Writer(128)
  w.writeInt16(a.version)
  w.writeInt16(a.error)
  w.writeString(a.leader)
  w.writeString(a.leaderUrl)
  w.writeInt64(BigInt(a.configOffset))
  writeConnectorTasks(w, a.assigned)
  if (a.version >= 1) {
    writeConnectorTasks(w, a.revoked)
    w.writeInt32(a.delayMs)
  }
  return w.toBuffer()
}

export function decodeAssignment(buf: Buffer): ConnectAssignment {
  const r = new Reader(buf)
  const version = r.readInt16()
  if (version < 0) throw new Error(`Unsupported assignment version: ${version}`)
  const error = r.readInt16()
  const leader = r.readString()
  const leaderUrl = r.readString()
  const configOffset = Number(r.readInt64())
  const assigned = readConnectorTasks(r, version >= 1)
  let revoked: ConnectorsAndTasks = { connectors: [], tasks: [] }
  let delayMs = 0
  if (version >= 1) {
    if (r.remaining > 0) revoked = readConnectorTasks(r, true)
    if (r.remaining >= 4) delayMs = r.readInt32()
  }
  return { version, error, leader, leaderUrl, configOffset, assigned, revoked, delayMs }
}

export function protocolVersion(name: string): number {
  return PROTOCOL_VERSION[name] ?? 0
}

/** The protocols a worker offers in JoinGroup, most preferred first (connect.protocol). */
export function offeredProtocols(mode: ProtocolMode): string[] {
  if (mode === 'eager') return ['default']
  if (mode === 'compatible') return ['compatible', 'default']
  return ['sessioned', 'compatible', 'default']
}
