// Reading V8 .cpuprofile files (node --cpu-prof): self time per function inside a time window, grouped
// into the broker's areas. Native functions (empty url: socket writes, postMessage, fs writes) are
// charged to the area of the nearest JavaScript caller, so that "writeBuffer" under segment.js counts as
// storage and under connection.js as socket.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  hitCount?: number
  children?: number[]
}
interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export const AREAS = [
  'idle',
  'garbage collector',
  'native, unattributed ((program))',
  'CRC32C',
  'protocol decode/encode',
  'request dispatch and handlers',
  'socket and connection',
  'router and thread transfer',
  'storage append and index',
  'Buffer copy and allocation',
  'client: producer/consumer',
  'client: perf tool',
  'module loading and compilation',
  'timers, promises and other node internals',
  'other',
] as const
export type Area = (typeof AREAS)[number]

function areaOfUrl(url: string, fn: string): Area | null {
  if (/crc/i.test(fn) || /crc/i.test(url)) return 'CRC32C'
  if (url.includes('/src/protocol/')) return 'protocol decode/encode'
  if (/\/src\/server\/(handlers\/|dispatcher|registry|replica-manager|control-plane|cluster-member|dynamic-configs|topics|fetch-purgatory|producer-ids|broker|groups|transactions|coordinator-partition-writer|internal-topic-service)/.test(url)) return 'request dispatch and handlers'
  // (Moved out of server/ by issue 29; counted where they were counted before.)
  if (/\/src\/(replication\/(replica-manager|replica-fetcher-manager|alter-partition-manager|delayed-fetch)|observability\/broker-metrics)/.test(url)) return 'request dispatch and handlers'
  if (/\/src\/server\/(connection|socket-server)/.test(url) || /^node:(net|stream|internal\/(net|stream|streams)|internal\/stream_base_commons)/.test(url)) return 'socket and connection'
  if (url.includes('/src/shard/') || url.includes('/piscina/') || url.startsWith('node:internal/worker')) return 'router and thread transfer'
  if (url.includes('/src/storage/') || url.includes('/src/addon/') || url.startsWith('node:fs') || url.startsWith('node:internal/fs')) return 'storage append and index'
  if (url === 'node:buffer' || url === 'node:internal/buffer') return 'Buffer copy and allocation'
  if (url.includes('/src/client/')) return 'client: producer/consumer'
  if (url.includes('/src/cli/')) return 'client: perf tool'
  if (url.startsWith('node:internal/modules') || url.startsWith('node:internal/bootstrap') || /^compile/.test(fn)) return 'module loading and compilation'
  if (url.startsWith('node:')) return 'timers, promises and other node internals'
  if (url !== '') return 'other'
  return null
}

export interface FunctionTime {
  name: string
  /** file:line relative to the repository (or the node: module). */
  where: string
  area: Area
  /** The nearest caller in the repository's own code, for native and node-internal functions. */
  caller: string
  ms: number
}

export interface ThreadProfile {
  file: string
  /** Node's thread id from the file name (0 = main thread). */
  threadId: number
  windowMs: number
  busyMs: number
  byArea: Map<Area, number>
  top: FunctionTime[]
}

const rel = (url: string): string => url.replace(/^file:\/\//, '').replace(/^.*?\/(dist\/)?(src|bench|test|node_modules)\//, '$2/')

/** Self time per function and area of one profile, counting only samples taken in [fromUs, toUs] (V8 µs clock). */
export function analyseProfile(file: string, fromUs: number, toUs: number): ThreadProfile {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const n of p.nodes) {
    byId.set(n.id, n)
    for (const c of n.children ?? []) parent.set(c, n.id)
  }
  const self = new Map<number, number>()
  let t = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0
    // A sample stands for the interval up to the next one.
    const next = i + 1 < p.timeDeltas.length ? p.timeDeltas[i + 1]! : 0
    if (t < fromUs || t > toUs) continue
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + next / 1000)
  }
  const areaCache = new Map<number, Area>()
  const areaOf = (id: number): Area => {
    const cached = areaCache.get(id)
    if (cached !== undefined) return cached
    const n = byId.get(id)!
    const fn = n.callFrame.functionName
    let a: Area
    if (fn === '(idle)') a = 'idle'
    else if (fn === '(garbage collector)') a = 'garbage collector'
    else if (fn === '(program)' || fn === '(root)') a = 'native, unattributed ((program))'
    else {
      const own = areaOfUrl(n.callFrame.url, fn)
      if (own !== null) a = own
      else {
        const up = parent.get(id)
        a = up === undefined ? 'other' : areaOf(up)
        if (/crc/i.test(fn)) a = 'CRC32C'
      }
    }
    areaCache.set(id, a)
    return a
  }
  const callerOf = (id: number): string => {
    for (let up = parent.get(id); up !== undefined; up = parent.get(up)) {
      const n = byId.get(up)!
      if (/\/(src|bench)\//.test(n.callFrame.url)) return `${n.callFrame.functionName || '(anonymous)'} ${rel(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
    }
    return ''
  }
  const byArea = new Map<Area, number>()
  const fns = new Map<string, FunctionTime>()
  let total = 0
  let idle = 0
  for (const [id, ms] of self) {
    const n = byId.get(id)!
    const area = areaOf(id)
    total += ms
    if (area === 'idle') idle += ms
    byArea.set(area, (byArea.get(area) ?? 0) + ms)
    const where = n.callFrame.url === '' ? '(native)' : `${rel(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
    const own = /\/(src|bench)\//.test(n.callFrame.url)
    const caller = own ? '' : callerOf(id)
    const key = `${n.callFrame.functionName}|${where}|${caller}`
    const f = fns.get(key)
    if (f !== undefined) f.ms += ms
    else fns.set(key, { name: n.callFrame.functionName || '(anonymous)', where, area, caller, ms })
  }
  const m = /\.(\d+)\.(\d+)\.(\d+)\.cpuprofile$/.exec(file)
  return {
    file,
    threadId: m === null ? 0 : Number(m[2]),
    windowMs: total,
    busyMs: total - idle,
    byArea,
    top: [...fns.values()].filter((f) => f.area !== 'idle').sort((a, b) => b.ms - a.ms),
  }
}

export function profilesIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()
    .map((f) => join(dir, f))
}
