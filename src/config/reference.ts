// The config reference as Markdown, generated from the schema tables so that docs/configuration.md
// can be produced from (and checked against) the code.

import { BROKER_CONFIGS } from './broker-configs.js'
import { REST_CONFIGS } from './client-rest.js'
import { REGISTRY_CONFIGS } from './client-registry.js'
import { formatValue, type ConfigDef } from './config-def.js'
import { GROUP_CONFIGS } from './group-configs.js'
import { TOPIC_CONFIGS } from './topic-configs.js'

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ')
}

function shownDefault(d: ConfigDef): string {
  const v = formatValue(d, d.default)
  if (v === null) return 'null'
  return v === '' ? '""' : `\`${v}\``
}

/** Markdown: the broker, topic and group config tables, then the REST Proxy's and Schema Registry's (name, type, default, description ...). */
export function renderConfigReference(): string {
  const lines: string[] = []
  lines.push('### Broker configs', '')
  lines.push('| Name | Type | Default | Valid values | Update mode | Description |')
  lines.push('| --- | --- | --- | --- | --- | --- |')
  for (const d of [...BROKER_CONFIGS].sort((a, b) => a.name.localeCompare(b.name))) {
    const name = d.aliases === undefined ? `\`${d.name}\`` : `\`${d.name}\` (alias ${d.aliases.map((a) => `\`${a}\``).join(', ')})`
    const doc = d.ignored === true ? `*Ignored.* ${d.doc}` : d.doc
    lines.push(`| ${name} | ${d.type} | ${shownDefault(d)} | ${cell(d.validValues ?? '')} | ${d.dynamic} | ${cell(doc)} |`)
  }
  lines.push('', '### Topic configs', '')
  lines.push('| Name | Type | Default | Valid values | Broker default from | Description |')
  lines.push('| --- | --- | --- | --- | --- | --- |')
  for (const d of TOPIC_CONFIGS) {
    const from = d.synonyms.map((s) => `\`${s.name}\``).join(', ')
    lines.push(`| \`${d.name}\` | ${d.type} | ${shownDefault(d)} | ${cell(d.validValues ?? '')} | ${from} | ${cell(d.doc)} |`)
  }
  lines.push('', '### Group configs (GROUP resources: DescribeConfigs, IncrementalAlterConfigs, skein configs --entity-type groups)', '')
  lines.push('| Name | Type | Default | Valid values | Broker default from | Bounded by | Description |')
  lines.push('| --- | --- | --- | --- | --- | --- | --- |')
  for (const d of GROUP_CONFIGS) {
    const from = d.synonym === undefined ? '' : `\`${d.synonym}\``
    const bounds = [d.min, d.max].filter((b) => b !== undefined).map((b) => `\`${b}\``).join(', ')
    lines.push(`| \`${d.name}\` | ${d.type} | ${shownDefault(d)} | ${cell(d.validValues ?? '')} | ${from} | ${bounds} | ${cell(d.doc)} |`)
  }
  lines.push('', '### REST Proxy configs (skein rest; in a broker, the same names prefixed rest.)', '')
  lines.push('| Name | Type | Default | Valid values | Description |')
  lines.push('| --- | --- | --- | --- | --- |')
  for (const d of REST_CONFIGS) lines.push(`| \`${d.name}\` | ${d.type} | ${shownDefault(d)} | ${cell(d.validValues ?? '')} | ${cell(d.doc)} |`)
  lines.push('', '### Schema Registry configs (skein schema-registry; in a broker, the same names prefixed schema.registry.)', '')
  lines.push('| Name | Type | Default | Valid values | Description |')
  lines.push('| --- | --- | --- | --- | --- |')
  for (const d of REGISTRY_CONFIGS) lines.push(`| \`${d.name}\` | ${d.type} | ${shownDefault(d)} | ${cell(d.validValues ?? '')} | ${cell(d.doc)} |`)
  return lines.join('\n') + '\n'
}
