// meta.properties: the identity file Kafka keeps in every log dir (KRaft format, version=1).
// Layout (Java .properties, see ../config/properties.ts):
//   #<comment lines>
//   version=1
//   cluster.id=<22-char base64url UUID>
//   node.id=<broker.id>
//   directory.id=<22-char base64url UUID, one per log dir>
// Written to meta.properties.tmp, fsynced, then renamed over meta.properties, so a crash leaves either
// the old file or the new one, never a torn one; a stale .tmp is ignored and overwritten on next start.
// On start a present file must agree with the configured node.id and cluster.id, else startup stops
// (Kafka refuses to mix a log dir into another cluster or node).

import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { formatProperties, parseProperties } from '../config/properties.js'
import { randomKafkaUuid } from '../domain/uuid.js'
import { writeFileAtomicSync } from './atomic-file.js'

export const META_PROPERTIES = 'meta.properties'

export interface MetaProperties {
  clusterId: string
  nodeId: number
  directoryId: string
}

/** Reads meta.properties of a log dir, or undefined when there is none. Throws when it is malformed. */
export function readMetaProperties(logDir: string): MetaProperties | undefined {
  const file = join(logDir, META_PROPERTIES)
  if (!existsSync(file)) return undefined
  const props = parseProperties(readFileSync(file, 'utf8'))
  const version = props.get('version')
  if (version !== '1') throw new Error(`${file}: unsupported meta.properties version ${version ?? '(missing)'}, expected 1`)
  const clusterId = props.get('cluster.id')
  const nodeId = props.get('node.id')
  const directoryId = props.get('directory.id')
  if (clusterId === undefined || clusterId === '') throw new Error(`${file}: cluster.id is missing`)
  if (nodeId === undefined || !/^\d+$/.test(nodeId)) throw new Error(`${file}: node.id is missing or not a number`)
  return { clusterId, nodeId: Number(nodeId), directoryId: directoryId ?? randomKafkaUuid() }
}

export function writeMetaProperties(logDir: string, meta: MetaProperties): void {
  mkdirSync(logDir, { recursive: true })
  const file = join(logDir, META_PROPERTIES)
  const text = formatProperties(
    [['version', '1'], ['cluster.id', meta.clusterId], ['node.id', String(meta.nodeId)], ['directory.id', meta.directoryId]],
    ['', `Written by Skein at ${new Date().toISOString()}`],
  )
  writeFileAtomicSync(file, text)
}

/**
 * Loads the identity of a log dir, creating meta.properties when absent. The cluster id is the
 * configured one, else the one on disk, else a new random one. Throws when the file disagrees with
 * the configured node id or cluster id.
 */
export function loadOrCreateMetaProperties(logDir: string, opts: { nodeId: number; clusterId?: string | null }): MetaProperties {
  const existing = readMetaProperties(logDir)
  const configured = opts.clusterId ?? undefined
  if (existing !== undefined) {
    if (existing.nodeId !== opts.nodeId) {
      throw new Error(`${join(logDir, META_PROPERTIES)}: node.id ${existing.nodeId} does not match the configured broker.id ${opts.nodeId}`)
    }
    if (configured !== undefined && existing.clusterId !== configured) {
      throw new Error(`${join(logDir, META_PROPERTIES)}: cluster.id ${existing.clusterId} does not match the configured cluster.id ${configured}`)
    }
    return existing
  }
  const meta = { clusterId: configured ?? randomKafkaUuid(), nodeId: opts.nodeId, directoryId: randomKafkaUuid() }
  writeMetaProperties(logDir, meta)
  return meta
}
