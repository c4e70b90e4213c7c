// MirrorMaker 2 as Connect connectors (Kafka's connect-mirror and connect-mirror-client): the three
// connectors under Kafka's class names, the replication policies, MirrorMaker's record formats and the
// failover helpers (translateOffsets). Dedicated mode (`skein mirror-maker`) is ../mirror-maker.ts.
import type { PluginDescriptor } from '../api/plugin.js'
import { MirrorCheckpointConnector } from './checkpoint.js'
import { MirrorHeartbeatConnector } from './heartbeat.js'
import { MirrorSourceConnector } from './source.js'

export * from './checkpoint.js'
export * from './client.js'
export * from './config.js'
export * from './heartbeat.js'
export * from './offset-syncs.js'
export * from './policy.js'
export * from './sync-checkpoint-heartbeat-records.js'
export * from './source.js'

function connector(className: string, create: PluginDescriptor['create']): PluginDescriptor {
  const simple = className.slice(className.lastIndexOf('.') + 1)
  return { className, kind: 'source', aliases: [simple, simple.replace(/Connector$/, '')], version: '1.0.0', create }
}

export const MIRROR_PLUGINS: readonly PluginDescriptor[] = [
  connector('org.apache.kafka.connect.mirror.MirrorSourceConnector', () => new MirrorSourceConnector()),
  connector('org.apache.kafka.connect.mirror.MirrorCheckpointConnector', () => new MirrorCheckpointConnector()),
  connector('org.apache.kafka.connect.mirror.MirrorHeartbeatConnector', () => new MirrorHeartbeatConnector()),
]
