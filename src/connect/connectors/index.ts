// The connectors shipped with Skein, under their class names; as in Kafka, the simple class name and
// the name without the "Connector" suffix are aliases.
import type { PluginDescriptor } from '../api/plugin.js'
import { DatagenConnector } from './datagen.js'
import { FileStreamSinkConnector, FileStreamSourceConnector } from './file.js'
import { PostgresSinkConnector } from './postgres/sink.js'
import { PostgresSourceConnector } from './postgres/source.js'
import { MIRROR_PLUGINS } from '../mirror/index.js'

export * from './datagen.js'
export * from './file.js'
export * from './postgres/common.js'
export * from './postgres/sink.js'
export * from './postgres/source.js'

function connector(className: string, kind: 'source' | 'sink', create: PluginDescriptor['create']): PluginDescriptor {
  const simple = className.slice(className.lastIndexOf('.') + 1)
  return { className, kind, aliases: [simple, simple.replace(/Connector$/, '')], version: '1.0.0', create }
}

export const CONNECTOR_PLUGINS: readonly PluginDescriptor[] = [
  connector('org.apache.kafka.connect.file.FileStreamSourceConnector', 'source', () => new FileStreamSourceConnector()),
  connector('org.apache.kafka.connect.file.FileStreamSinkConnector', 'sink', () => new FileStreamSinkConnector()),
  connector('skein.connect.datagen.DatagenConnector', 'source', () => new DatagenConnector()),
  connector('skein.connect.postgres.PostgresSourceConnector', 'source', () => new PostgresSourceConnector()),
  connector('skein.connect.postgres.PostgresSinkConnector', 'sink', () => new PostgresSinkConnector()),
  ...MIRROR_PLUGINS,
]
