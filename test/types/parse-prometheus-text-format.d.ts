// The parser ships no types: what the tests read of its output (prom2json's shape).
declare module 'parse-prometheus-text-format' {
  interface ParsedSample {
    value?: string
    labels?: Record<string, string>
    quantiles?: Record<string, string>
    buckets?: Record<string, string>
    count?: string
    sum?: string
  }
  interface ParsedFamily {
    name: string
    help: string
    type: 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'HISTOGRAM' | 'UNTYPED'
    metrics: ParsedSample[]
  }
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[]
}
