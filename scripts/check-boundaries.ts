// The import rules of src/, checked by `npm test` (ARCHITECTURE.md explains the floors they keep).
//
// dependency-cruiser reads every module of src/ (type-only and dynamic imports included) and applies
// RULES: for each floor an allow-list or deny-list of the folders it may import, and no module cycles
// anywhere. Two more checks run on its
// module graph: no import cycle between folders (`no-folder-cycles`: a folder is the directory a module
// sits in, so src/server and src/server/handlers are two folders), and every module of src/ sits in a
// folder FLOORS places (`every-folder-has-a-floor`), so that a new folder is refused until someone
// decides which rules it obeys. Only imports between modules of src/ are checked: node: modules and npm
// packages are free. A violation prints the rule's name and the offending import; the exit code is 1.
//
// Usage: node dist/scripts/check-boundaries.js [baseDir]   (baseDir default: the repository root)

import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cruise, type ICruiseResult, type IRegularForbiddenRuleType } from 'dependency-cruiser'

/**
 * Every top-level folder of src/ and its floor (ARCHITECTURE.md). Folders of capabilities still to come
 * are listed so that their rules hold from their first file.
 */
export const FLOORS: Readonly<Record<string, string>> = {
  domain: 'ground floor: Kafka error codes and ids, imported by everything',
  addon: 'ground floor: the native C++ core',
  observability: 'ground floor: logger and the one metrics registry',
  protocol: 'wire format: generated messages, primitives, record batches',
  config: 'settings: parsing, the config tables, validation',
  storage: 'the log engine: segments, indexes, recovery, retention, compaction',
  shard: 'worker threads that own partitions and run storage',
  replication: 'leader/follower partition state, ISR, high watermark, replica fetcher',
  cluster: 'metadata image and its stores, the controller',
  coordinator: 'group and transaction coordinators',
  quota: 'client quotas: entities, precedence, sampled rates, quota managers',
  auth: 'authentication (TLS principals, SASL PLAIN/SCRAM) and authorization',
  http: 'the one HTTP adapter over uWebSockets.js',
  broker: 'top floor: the Broker composition, admin services, coordinators/ and control/ (the control plane)',
  server: 'the listener edge: sockets, connections, request dispatch, the API table, handlers',
  client: 'client-side: the Kafka client',
  cli: 'client-side: the skein tools',
  rest: 'client-side: REST proxy',
  console: 'client-side: web console, WebSocket streaming over http/',
  registry: 'client-side: Schema Registry',
  connect: 'client-side: Kafka Connect, MirrorMaker 2 (connect/mirror/)',
  streams: 'client-side: Streams',
}

/** The entry points at the top of src/. */
export const ENTRIES = ['main.ts', 'index.ts', 'skein.ts']

/** Client-side products: they talk to brokers over the Kafka protocol, even inside a broker's process. */
const CLIENT_SIDE = 'client|cli|rest|console|registry|connect|streams'

/**
 * The client-side products in floors, lowest first: a product imports the products of the floors below
 * its own, never one beside it or above it (the REST Proxy and the web console both need the Schema
 * Registry's client, the console mounts on the REST Proxy, the skein tools start them all).
 */
export const PRODUCT_FLOORS: ReadonlyArray<readonly string[]> = [['client'], ['registry'], ['rest', 'streams', 'connect'], ['console'], ['cli']]

/** One rule per product: the products it may not import (those beside it and above it). */
function productFloorRules(): Array<{ name: string; comment: string; from: { path: string }; to: { path: string } }> {
  return PRODUCT_FLOORS.flatMap((floor, level) =>
    floor.map((product) => {
      const below = PRODUCT_FLOORS.slice(0, level).flat()
      const forbidden = PRODUCT_FLOORS.flat().filter((p) => p !== product && !below.includes(p))
      return {
        name: `${product}-imports-only-lower-products`,
        comment: `products are in floors (${PRODUCT_FLOORS.map((f) => f.join(' ')).join(' <- ')}): ${product}/ imports ${below.length === 0 ? 'no other product' : `only ${below.join(', ')} of them`}`,
        from: { path: under(product) },
        to: { path: under(forbidden.join('|')) },
      }
    }),
  )
}

/** Kafka Connect's plugin folders: they implement connect/api/ and are loaded by connect/runtime/. */
const CONNECT_PLUGINS = 'connect/connectors|connect/converters|connect/transforms|connect/mirror'

/** Client-side products other than the Kafka client: the broker may use client/ to reach other brokers, never these. */
const PRODUCTS = 'cli|rest|console|registry|connect|streams'

/** `^src/(a|b)/`: the modules of these folders and their subfolders. */
const under = (names: string): string => `^src/(${names})/`

export const RULES: IRegularForbiddenRuleType[] = [
  {
    name: 'domain-imports-nothing',
    comment: 'domain/ is the ground floor: everything may import it, it imports no other folder',
    from: { path: under('domain') },
    to: { path: '^src/', pathNot: under('domain') },
  },
  {
    name: 'addon-imports-only-domain',
    comment: 'addon/ wraps the native core, under protocol and storage',
    from: { path: under('addon') },
    to: { path: '^src/', pathNot: under('addon|domain') },
  },
  {
    name: 'observability-imports-only-domain',
    comment: 'every layer writes to observability/; it reads none of them',
    from: { path: under('observability') },
    to: { path: '^src/', pathNot: under('observability|domain') },
  },
  {
    name: 'protocol-imports-only-domain-and-addon',
    comment: 'protocol/ is shared by the broker and the client-side products',
    from: { path: under('protocol') },
    to: { path: '^src/', pathNot: under('protocol|domain|addon') },
  },
  {
    name: 'config-imports-only-domain-and-protocol',
    comment: 'config/ parses and validates; storage and the broker receive its validated values',
    from: { path: under('config') },
    to: { path: '^src/', pathNot: under('config|domain|protocol') },
  },
  {
    name: 'storage-imports-no-network-or-upper-floor',
    comment:
      'storage/ speaks offsets, batch bytes and files: no protocol messages, server, shard, coordinator or cluster; ' +
      'from config only log-config.ts (LogConfig, the table defaults and checks) and the .properties format',
    from: { path: under('storage') },
    to: { path: '^src/', pathNot: `${under('storage|domain|addon|observability|protocol/records')}|^src/config/(log-config|properties)\\.ts$` },
  },
  {
    name: 'shard-imports-only-storage-and-below',
    comment: 'shard/ runs storage on worker threads; it never imports the server or anything above itself',
    from: { path: under('shard') },
    to: { path: '^src/', pathNot: under('shard|storage|protocol/records|domain|addon|config|observability') },
  },
  {
    name: 'replication-imports-no-broker-or-server',
    comment:
      'replication/ (the rules and the replica manager that applies them) sits under the broker and the server: ' +
      'they hand it its ports (the leaders\' endpoints over client/, the controller), it never imports them',
    from: { path: under('replication') },
    to: { path: under(`broker|server|coordinator|${CLIENT_SIDE}`) },
  },
  {
    name: 'coordinator-imports-no-log-or-server',
    comment: 'coordinators write their records through a port the broker provides: no storage, shard, server or broker',
    from: { path: under('coordinator') },
    to: { path: '^src/', pathNot: under('coordinator|protocol|domain|addon|config|observability') },
  },
  {
    name: 'cluster-imports-no-data-path',
    comment: 'cluster/ metadata is read by the data path and never reads it',
    from: { path: under('cluster') },
    to: { path: under(`server|broker|shard|replication|coordinator|${CLIENT_SIDE}`) },
  },
  {
    name: 'quota-and-auth-import-no-data-path',
    comment: 'quota/ and auth/ are consulted by the server per request; they do not reach into the data path',
    from: { path: under('quota|auth') },
    to: { path: under(`storage|shard|replication|coordinator|${CLIENT_SIDE}`) },
  },
  {
    name: 'http-imports-no-broker-or-product',
    comment: 'http/ is the one adapter over uWebSockets.js: the products and the broker use it, it uses neither',
    from: { path: under('http') },
    to: { path: under(`storage|shard|replication|server|broker|coordinator|cluster|quota|auth|${CLIENT_SIDE}`) },
  },
  {
    name: 'only-entries-import-server',
    comment: 'server/ is the listener edge: only broker/, which composes it, and the entry points main.ts and index.ts import it',
    from: { path: '^src/', pathNot: '^src/(server/|broker/|(main|index)\\.ts$)' },
    to: { path: under('server') },
  },
  {
    name: 'only-skein-imports-cli',
    comment: 'cli/ is the skein tools: only the skein entry loads them; a product raises errors of its own, never the CLI\'s',
    from: { path: '^src/', pathNot: '^src/(cli/|skein\\.ts$)' },
    to: { path: under('cli') },
  },
  {
    name: 'only-entries-import-broker',
    comment: 'broker/ is the top floor, the Broker and what it composes: only the entry points main.ts and index.ts import it',
    from: { path: '^src/', pathNot: '^src/(broker/|(main|index)\\.ts$)' },
    to: { path: under('broker') },
  },
  {
    name: 'broker-imports-no-product-but-client',
    comment:
      'the broker reaches other brokers through client/ (fetchers, controller channel, WriteTxnMarkers); the other ' +
      'client-side products are started beside it by main.ts, never by the broker',
    from: { path: under('broker') },
    to: { path: under(PRODUCTS) },
  },
  {
    name: 'server-imports-no-broker-or-client-side',
    comment:
      'server/ is the listener edge and the handlers: sockets in, handlers out through ports; the broker composes it, ' +
      'and no client-side product, client/ included, is needed there',
    from: { path: under('server') },
    to: { path: under(`broker|${CLIENT_SIDE}`) },
  },
  {
    name: 'handlers-import-only-common-protocol-domain-config',
    comment:
      'a handler file sees the broker only through the ports of handlers/common/ (its RequestContext), so it imports ' +
      'handlers/ (common/ and, for index.ts, the handler files), protocol, domain and config; common/ itself is not a handler',
    from: { path: '^src/server/handlers/[^/]+\\.ts$' },
    to: { path: '^src/', pathNot: `^src/server/handlers/|${under('protocol|domain|config')}` },
  },
  {
    name: 'entries-are-not-imported',
    comment: 'main.ts, index.ts and skein.ts are entry points; only skein.ts loads main.ts (for `skein broker`)',
    from: { path: '^src/', pathNot: '^src/skein\\.ts$' },
    to: { path: '^src/(main|index|skein)\\.ts$' },
  },
  {
    name: 'client-side-imports-no-broker-internals',
    comment:
      'client-side products import client-side code, protocol, domain, addon, observability, http and config parsing ' +
      '(properties.ts, config-def.ts, client-*.ts): never broker internals or the broker config, even inside a broker process',
    from: { path: under(CLIENT_SIDE) },
    to: {
      path: '^src/',
      pathNot: `${under(`${CLIENT_SIDE}|protocol|domain|addon|observability|http`)}|^src/config/(properties|config-def|client-[a-z0-9-]+)\\.ts$`,
    },
  },
  ...productFloorRules(),
  {
    name: 'connect-api-imports-no-product',
    comment: 'connect/api/ is the plugin API (Kafka\'s connect-api): plugins build on it, it knows no plugin, runtime or client',
    from: { path: under('connect/api') },
    to: { path: under(CLIENT_SIDE), pathNot: under('connect/api') },
  },
  {
    name: 'connect-plugins-import-no-runtime',
    comment: 'connectors, converters, transforms and MirrorMaker\'s connectors are loaded by connect/runtime/ through connect/api/; they never reach into the runtime',
    from: { path: under(CONNECT_PLUGINS) },
    to: { path: `${under('connect/runtime')}|^src/connect/[^/]+\\.ts$` },
  },
  {
    name: 'connect-transforms-import-only-connect-api',
    comment: 'a transform (SMT) or predicate works on connect/api/ records alone',
    from: { path: under('connect/transforms') },
    to: { path: under(CLIENT_SIDE), pathNot: under('connect/transforms|connect/api') },
  },
  {
    name: 'connect-mirror-imports-only-connect-api-and-client',
    comment: 'MirrorMaker 2 is Connect connectors (connect/mirror/): connect/api/ and the Kafka client, no other plugin; connect/connectors/ lists them',
    from: { path: under('connect/mirror') },
    to: { path: under(CLIENT_SIDE), pathNot: under('connect/mirror|connect/api|client') },
  },
  {
    name: 'no-module-cycles',
    comment:
      'no module imports itself through others, within a folder too (config/broker-config <-> config/topic-configs was one; ' +
      'broker.ts <-> its coordinators\' services was the last: they now get ports). No folder is exempt',
    from: { path: '^src/' },
    to: { circular: true },
  },
].map((r) => ({ ...r, severity: 'error' }) as IRegularForbiddenRuleType)

/**
 * Folder cycles that exist today on purpose, each with the change that removes it. Only a cycle made
 * of exactly these folders is let through.
 */
export const KNOWN_FOLDER_CYCLES: ReadonlyArray<{ folders: readonly string[]; until: string }> = [
]

export interface Violation {
  rule: string
  from: string
  to: string
  /** For no-folder-cycles: the folders of the cycle, in order. */
  cycle?: string[]
}

export interface BoundaryReport {
  modules: number
  imports: number
  violations: Violation[]
  /** KNOWN_FOLDER_CYCLES entries whose cycle is gone: to be removed from the list. */
  staleExemptions: string[]
}

function folderOf(path: string): string {
  return dirname(path)
}

/** Strongly connected components of a directed graph (Tarjan), each with more than one node. */
function cycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const out: string[][] = []
  let next = 0
  const visit = (v: string): void => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) out.push(component.sort())
    }
  }
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v)
  return out
}

/** One cycle through `start` inside the component (breadth-first, so the shortest). */
function cycleThrough(start: string, members: ReadonlySet<string>, edges: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const previous = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const v = queue.shift()!
    for (const w of [...(edges.get(v) ?? [])].sort()) {
      if (!members.has(w)) continue
      if (w === start) {
        const path = [v]
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!)
        return [...path, start]
      }
      if (!previous.has(w)) {
        previous.set(w, v)
        queue.push(w)
      }
    }
  }
  return [start]
}

function folderChecks(result: ICruiseResult): { violations: Violation[]; staleExemptions: string[] } {
  const violations: Violation[] = []
  const edges = new Map<string, Set<string>>()
  /** The first import (by path order) behind each folder edge, to name it in a violation. */
  const example = new Map<string, { from: string; to: string }>()
  for (const m of [...result.modules].sort((a, b) => a.source.localeCompare(b.source))) {
    if (!m.source.startsWith('src/')) continue
    const parts = m.source.split('/')
    if (parts.length === 2 ? !ENTRIES.includes(parts[1]!) : !(parts[1]! in FLOORS)) {
      violations.push({ rule: 'every-folder-has-a-floor', from: m.source, to: `${parts.length === 2 ? m.source : `src/${parts[1]}`} is not in FLOORS (scripts/check-boundaries.ts)` })
    }
    const from = folderOf(m.source)
    for (const d of m.dependencies) {
      if (!d.resolved.startsWith('src/')) continue
      const to = folderOf(d.resolved)
      if (to === from) continue
      if (!edges.has(from)) edges.set(from, new Set())
      edges.get(from)!.add(to)
      const key = `${from}\u0000${to}`
      if (!example.has(key)) example.set(key, { from: m.source, to: d.resolved })
    }
  }
  const used = new Set<(typeof KNOWN_FOLDER_CYCLES)[number]>()
  for (const component of cycles(edges)) {
    const known = KNOWN_FOLDER_CYCLES.find((k) => k.folders.length === component.length && k.folders.every((f) => component.includes(f)))
    if (known !== undefined) {
      used.add(known)
      continue
    }
    const path = cycleThrough(component[0]!, new Set(component), edges)
    for (let i = 0; i + 1 < path.length; i++) {
      const imp = example.get(`${path[i]}\u0000${path[i + 1]}`)!
      violations.push({ rule: 'no-folder-cycles', from: imp.from, to: imp.to, cycle: path })
    }
  }
  const staleExemptions = KNOWN_FOLDER_CYCLES.filter((k) => !used.has(k)).map((k) => k.folders.join(' <-> '))
  return { violations, staleExemptions }
}

/** Checks the modules under `<baseDir>/src`; returns every violation (none when the tree obeys). */
export async function checkBoundaries(baseDir: string): Promise<BoundaryReport> {
  const { output } = await cruise(['src'], {
    baseDir,
    validate: true,
    ruleSet: { forbidden: RULES },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    outputType: 'json',
  })
  const result: ICruiseResult = typeof output === 'string' ? (JSON.parse(output) as ICruiseResult) : output
  const violations: Violation[] = (result.summary.violations ?? []).map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }))
  const folders = folderChecks(result)
  violations.push(...folders.violations)
  return {
    modules: result.modules.filter((m) => m.source.startsWith('src/')).length,
    imports: result.summary.totalDependenciesCruised ?? 0,
    violations,
    staleExemptions: folders.staleExemptions,
  }
}

/** The lines printed for a report (violations first, then a one-line summary). */
export function formatReport(report: BoundaryReport, ms: number): string[] {
  const lines: string[] = []
  for (const s of report.staleExemptions) lines.push(`  note: the folder cycle ${s} is gone; remove it from KNOWN_FOLDER_CYCLES`)
  for (const v of report.violations) {
    lines.push(`  ${v.rule}: ${v.from} → ${v.to}${v.cycle === undefined ? '' : `   (cycle ${v.cycle.join(' → ')})`}`)
  }
  const rules = RULES.length + 2
  lines.push(
    report.violations.length === 0
      ? `check-boundaries: ${report.modules} modules, ${report.imports} imports, ${rules} rules: no violations (${(ms / 1000).toFixed(1)} s)`
      : `check-boundaries: ${report.violations.length} violation(s) of the import rules (ARCHITECTURE.md, scripts/check-boundaries.ts)`,
  )
  return lines
}

function repoRoot(): string {
  // dist/scripts/check-boundaries.js -> the repository root
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..')
}

async function main(): Promise<number> {
  const started = performance.now()
  const report = await checkBoundaries(process.argv[2] ?? repoRoot())
  const lines = formatReport(report, performance.now() - started)
  ;(report.violations.length === 0 ? console.log : console.error)(lines.join('\n'))
  return report.violations.length === 0 ? 0 : 1
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => {
      process.exitCode = code
    },
    (err: unknown) => {
      console.error(`check-boundaries: ${(err as Error).stack ?? String(err)}`)
      process.exitCode = 2
    },
  )
}
