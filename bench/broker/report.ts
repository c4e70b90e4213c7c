// The benchmark's output: one table (text for the terminal, Markdown for bench/results/RESULTS.md) and two SVG
// charts drawn here without external tools: produce throughput against partitions, and end-to-end
// latency percentiles against their targets.
import type { MachineInfo } from './machine.js'

export interface Row {
  workload: string
  skein: string
  peer: string
  ratio: string
  /** The issue's target and whether this run met it ('-' for raw limits and context rows). */
  target: string
}

const HEADERS = ['Workload', 'Skein', 'Peer', 'Ratio', 'Target (issue 7)'] as const

function cells(r: Row): string[] {
  return [r.workload, r.skein, r.peer, r.ratio, r.target]
}

export function textTable(rows: readonly Row[]): string {
  const all = [HEADERS.slice(), ...rows.map(cells)]
  const widths = HEADERS.map((_, i) => Math.max(...all.map((c) => c[i]!.length)))
  const line = (c: string[]): string => c.map((v, i) => v.padEnd(widths[i]!)).join(' | ')
  return [line(all[0]!), widths.map((w) => '-'.repeat(w)).join('-+-'), ...all.slice(1).map(line)].join('\n')
}

export function markdownTable(rows: readonly Row[]): string {
  const esc = (s: string): string => s.replace(/\|/g, '\\|')
  return [`| ${HEADERS.join(' | ')} |`, `| ${HEADERS.map(() => '---').join(' | ')} |`, ...rows.map((r) => `| ${cells(r).map(esc).join(' | ')} |`)].join('\n')
}

export const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US')
export const fmtMs = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(1))

export function machineMarkdown(m: MachineInfo): string {
  return [
    `- CPU: ${m.cpu}, ${m.cores} cores available to node`,
    `- Memory: ${m.memoryGiB} GiB`,
    `- Disk (data directory): ${m.disk}`,
    `- Kernel: ${m.kernel}`,
    `- Node.js: ${m.node}`,
    `- Date: ${m.date}`,
  ].join('\n')
}

// --- SVG ---

const escXml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

function niceMax(v: number): number {
  if (v <= 0) return 1
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p
  return 10 * p
}

const shortNum = (n: number): string => (n >= 1e6 ? `${+(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : `${+n.toFixed(2)}`)

interface Frame {
  x0: number
  y0: number
  w: number
  h: number
}

function axes(f: Frame, yMax: number, yLabel: string, title: string): string[] {
  const out: string[] = []
  out.push(`<text x="${f.x0 + f.w / 2}" y="${f.y0 - 14}" text-anchor="middle" font-size="14" font-weight="bold">${escXml(title)}</text>`)
  for (let i = 0; i <= 5; i++) {
    const v = (yMax * i) / 5
    const y = f.y0 + f.h - (f.h * i) / 5
    out.push(`<line x1="${f.x0}" y1="${y}" x2="${f.x0 + f.w}" y2="${y}" stroke="#ddd"/>`)
    out.push(`<text x="${f.x0 - 6}" y="${y + 4}" text-anchor="end" font-size="11">${shortNum(v)}</text>`)
  }
  out.push(`<line x1="${f.x0}" y1="${f.y0}" x2="${f.x0}" y2="${f.y0 + f.h}" stroke="#333"/>`)
  out.push(`<line x1="${f.x0}" y1="${f.y0 + f.h}" x2="${f.x0 + f.w}" y2="${f.y0 + f.h}" stroke="#333"/>`)
  out.push(`<text x="${f.x0 - 48}" y="${f.y0 + f.h / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 ${f.x0 - 48} ${f.y0 + f.h / 2})">${escXml(yLabel)}</text>`)
  return out
}

export interface ChartInput {
  /** Produce records/s by partition count (Skein's own perf producer). */
  throughputByPartitions: { partitions: number; recordsPerSec: number }[]
  produceTarget: number
  redisRecordsPerSec: number | null
  /** End-to-end latency percentiles (ms) at the stated rate. */
  e2e: { rate: number; p50: number; p99: number; p999: number } | null
}

/** One SVG with two panels: throughput against partitions (log x) and e2e latency percentiles. */
export function chartSvg(c: ChartInput): string {
  const W = 980
  const H = 400
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
  ]
  // Panel 1: throughput vs partitions.
  const f1: Frame = { x0: 80, y0: 50, w: 380, h: 280 }
  const pts = [...c.throughputByPartitions].sort((a, b) => a.partitions - b.partitions)
  const yMax1 = niceMax(Math.max(c.produceTarget, c.redisRecordsPerSec ?? 0, ...pts.map((p) => p.recordsPerSec)) * 1.05)
  out.push(...axes(f1, yMax1, 'records/s', 'Produce throughput vs partitions (100 B, acks=1)'))
  const xs = pts.map((p) => Math.log10(p.partitions))
  const xMin = Math.min(0, ...xs)
  const xMax = Math.max(xMin + 1, ...xs)
  const px = (p: number): number => f1.x0 + 20 + ((Math.log10(p) - xMin) / (xMax - xMin)) * (f1.w - 40)
  const py = (v: number): number => f1.y0 + f1.h - (v / yMax1) * f1.h
  const hline = (v: number, color: string, label: string): void => {
    out.push(`<line x1="${f1.x0}" y1="${py(v)}" x2="${f1.x0 + f1.w}" y2="${py(v)}" stroke="${color}" stroke-dasharray="6 4"/>`)
    out.push(`<text x="${f1.x0 + f1.w - 4}" y="${py(v) - 5}" text-anchor="end" font-size="11" fill="${color}">${escXml(label)}</text>`)
  }
  hline(c.produceTarget, '#c0392b', `target ${shortNum(c.produceTarget)}/s`)
  if (c.redisRecordsPerSec !== null) hline(c.redisRecordsPerSec, '#8e44ad', `Redis XADD ${shortNum(c.redisRecordsPerSec)}/s`)
  if (pts.length > 0) {
    out.push(`<polyline fill="none" stroke="#2471a3" stroke-width="2" points="${pts.map((p) => `${px(p.partitions)},${py(p.recordsPerSec)}`).join(' ')}"/>`)
    for (const p of pts) {
      out.push(`<circle cx="${px(p.partitions)}" cy="${py(p.recordsPerSec)}" r="4" fill="#2471a3"/>`)
      out.push(`<text x="${px(p.partitions)}" y="${py(p.recordsPerSec) - 8}" text-anchor="middle" font-size="11">${shortNum(p.recordsPerSec)}</text>`)
      out.push(`<text x="${px(p.partitions)}" y="${f1.y0 + f1.h + 16}" text-anchor="middle" font-size="11">${p.partitions}</text>`)
    }
  }
  out.push(`<text x="${f1.x0 + f1.w / 2}" y="${f1.y0 + f1.h + 34}" text-anchor="middle" font-size="12">partitions (log scale)</text>`)

  // Panel 2: e2e latency percentiles with the targets.
  const f2: Frame = { x0: 580, y0: 50, w: 360, h: 280 }
  if (c.e2e === null) {
    out.push(`<text x="${f2.x0 + f2.w / 2}" y="${f2.y0 + f2.h / 2}" text-anchor="middle" font-size="13">end-to-end latency not measured in this run</text>`)
  } else {
    const bars = [
      { label: 'p50', v: c.e2e.p50, target: null as number | null },
      { label: 'p99', v: c.e2e.p99, target: 5 },
      { label: 'p99.9', v: c.e2e.p999, target: 20 },
    ]
    const yMax2 = niceMax(Math.max(22, ...bars.map((b) => b.v)) * 1.05)
    out.push(...axes(f2, yMax2, 'ms', `End-to-end latency at ${shortNum(c.e2e.rate)} records/s`))
    const slot = f2.w / bars.length
    bars.forEach((b, i) => {
      const x = f2.x0 + i * slot + slot * 0.25
      const bw = slot * 0.5
      const y = f2.y0 + f2.h - (b.v / yMax2) * f2.h
      const over = b.target !== null && b.v > b.target
      out.push(`<rect x="${x}" y="${y}" width="${bw}" height="${f2.y0 + f2.h - y}" fill="${over ? '#e67e22' : '#27ae60'}"/>`)
      out.push(`<text x="${x + bw / 2}" y="${y - 5}" text-anchor="middle" font-size="11">${fmtMs(b.v)} ms</text>`)
      out.push(`<text x="${x + bw / 2}" y="${f2.y0 + f2.h + 16}" text-anchor="middle" font-size="12">${b.label}</text>`)
      if (b.target !== null) {
        const ty = f2.y0 + f2.h - (b.target / yMax2) * f2.h
        out.push(`<line x1="${x - 8}" y1="${ty}" x2="${x + bw + 8}" y2="${ty}" stroke="#c0392b" stroke-width="2" stroke-dasharray="4 3"/>`)
        out.push(`<text x="${x + bw + 10}" y="${ty + 4}" font-size="10" fill="#c0392b">target ${b.target} ms</text>`)
      }
    })
  }
  out.push(`<text x="${W / 2}" y="${H - 12}" text-anchor="middle" font-size="11" fill="#555">Generated by npm run bench:broker; dashed red lines are the issue's targets.</text>`)
  out.push('</svg>')
  return out.join('\n') + '\n'
}
