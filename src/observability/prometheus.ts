// The registry in Prometheus' text exposition format (version 0.0.4), which every Prometheus server and
// agent scrapes: `# HELP` and `# TYPE` per family, then one line per sample. Latency summaries are
// written the way the JMX exporter's Kafka rules write Kafka's histograms: a gauge line per percentile
// (quantile="0.99") and a separate `<name>_count` counter.
import type { FamilySnapshot } from './metrics.js'

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'

function escapeHelp(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}

function escapeLabelValue(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN'
  if (v === Infinity) return '+Inf'
  if (v === -Infinity) return '-Inf'
  return String(v)
}

/** A label with an empty value is the same as no label in Prometheus: it is left out (the all-topics total). */
function labelSet(names: readonly string[], values: readonly string[], extra?: string): string {
  const parts: string[] = []
  for (let i = 0; i < names.length; i++) if (values[i] !== undefined && values[i] !== '') parts.push(`${names[i]}="${escapeLabelValue(values[i] ?? '')}"`)
  if (extra !== undefined) parts.push(extra)
  return parts.length === 0 ? '' : `{${parts.join(',')}}`
}

/** Families as the text format; a family without samples yet (no topic) keeps its HELP and TYPE lines. */
export function renderPrometheusText(families: readonly FamilySnapshot[]): string {
  const lines: string[] = []
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`)
    lines.push(`# TYPE ${f.name} ${f.type === 'summary' ? 'gauge' : f.type}`)
    if (f.type === 'summary') {
      // As the JMX exporter's Kafka rules write a Yammer histogram: its percentiles as a gauge with a
      // quantile label, its Count as a counter family of its own (name_count). Kafka dashboards query
      // these names, so they are kept exactly, rather than a Prometheus summary type.
      const qs = f.quantiles ?? []
      for (const s of f.summaries ?? []) {
        for (let i = 0; i < qs.length; i++) lines.push(`${f.name}${labelSet(f.labelNames, s.labels, `quantile="${qs[i]!.label}"`)} ${formatValue(s.quantiles[i]!)}`)
      }
      lines.push(`# HELP ${f.name}_count ${escapeHelp(`Count of ${f.name}`)}`)
      lines.push(`# TYPE ${f.name}_count counter`)
      for (const s of f.summaries ?? []) lines.push(`${f.name}_count${labelSet(f.labelNames, s.labels)} ${formatValue(s.count)}`)
      continue
    }
    for (const s of f.samples) lines.push(`${f.name}${labelSet(f.labelNames, s.labels)} ${formatValue(s.value)}`)
  }
  lines.push('')
  return lines.join('\n')
}
