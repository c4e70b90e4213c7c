// The import-rule checker that `npm test` runs (scripts/check-boundaries.ts): on a small tree that breaks
// the rules it names each rule and the offending import, and the command fails; on a tree that keeps
// them it passes. The tree is written to a temp directory, as src/ would be.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkBoundaries, formatReport, FLOORS, RULES, type Violation } from '../../scripts/check-boundaries.js'
import { REPO_ROOT, run } from '../harness/index.js'

function writeTree(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
}

const BROKEN = {
  'src/domain/errors.ts': 'export const NONE = 0\n',
  'src/config/properties.ts': "import { NONE } from '../domain/errors.js'\nexport const parse = (): number => NONE\n",
  // storage reaching up to the server and down to protocol messages
  'src/storage/log.ts': "import { api } from '../server/api.js'\nimport type { Produce } from '../protocol/messages/produce.gen.js'\nexport const log = (p: Produce): number => api + p.acks\n",
  'src/protocol/messages/produce.gen.ts': 'export interface Produce { acks: number }\n',
  // a client-side tool pulling in storage and the broker config (config parsing is fine)
  'src/cli/tool.ts': "import { log } from '../storage/log.js'\nimport { brokerConfig } from '../config/broker-config.js'\nimport { parse } from '../config/properties.js'\nexport const tool = log({ acks: 1 }) + brokerConfig + parse()\n",
  // a future product folder is covered before it exists
  'src/streams/topology.ts': "import { shard } from '../shard/worker.js'\nexport const topology = shard\n",
  'src/shard/worker.ts': "import { api } from '../server/api.js'\nexport const shard = api\n",
  // a folder cycle: coordinator <-> coordinator/group
  'src/coordinator/runtime.ts': "import { group } from './group/group.js'\nexport const runtime = (): number => group\n",
  'src/coordinator/group/group.ts': "import { runtime } from '../runtime.js'\nexport const group = 1\nexport const again = runtime\n",
  // server <-> server/handlers is a folder cycle like any other (handlers use ports from handlers/common/)
  'src/server/api.ts': "import { handler } from './handlers/produce.js'\nexport const api = 1\nexport const handlers = [handler]\n",
  'src/server/handlers/produce.ts': "import type { api } from '../api.js'\nexport const handler = (x: typeof api): number => x\n",
  // a handler reaching past its ports into storage; the broker starting a product; the listener edge using the client
  'src/server/handlers/fetch.ts': "import { log } from '../../storage/log.js'\nimport { NONE } from '../../domain/errors.js'\nexport const fetch = log + NONE\n",
  'src/broker/broker.ts': "import { tool } from '../cli/tool.js'\nimport { connect } from '../client/connection.js'\nimport { api } from '../server/api.js'\nexport const broker = tool + connect + api\n",
  'src/server/socket.ts': "import { connect } from '../client/connection.js'\nexport const socket = connect\n",
  'src/client/connection.ts': "export const connect = 1\n",
  // a module cycle inside one folder
  'src/config/broker-config.ts': "import { topicDefault } from './topic-configs.js'\nexport const brokerConfig = 1\nexport const d = topicDefault\n",
  'src/config/topic-configs.ts': "import type { brokerConfig } from './broker-config.js'\nexport const topicDefault = (b: typeof brokerConfig): number => b\n",
  // a folder no rule knows
  'src/gadgets/widget.ts': "import { NONE } from '../domain/errors.js'\nexport const widget = NONE\n",
  // entry points: only skein.ts may load main.ts; main.ts may import the server
  'src/main.ts': "import { api } from './server/api.js'\nexport const main = api\n",
  'src/skein.ts': "export const run = async (): Promise<number> => (await import('./main.js')).main\n",
}

describe('check-boundaries', () => {
  let root: string
  let violations: Violation[]

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'skein-boundaries-'))
    writeTree(root, BROKEN)
    violations = (await checkBoundaries(root)).violations
  })

  afterAll(() => rmSync(root, { recursive: true, force: true }))

  const found = (rule: string, from: string, to: string): boolean => violations.some((v) => v.rule === rule && v.from === from && v.to === to)

  it('names the broken rule and the import for each violation', () => {
    expect(found('storage-imports-no-network-or-upper-floor', 'src/storage/log.ts', 'src/server/api.ts')).toBe(true)
    expect(found('storage-imports-no-network-or-upper-floor', 'src/storage/log.ts', 'src/protocol/messages/produce.gen.ts')).toBe(true)
    expect(found('only-entries-import-server', 'src/storage/log.ts', 'src/server/api.ts')).toBe(true)
    expect(found('shard-imports-only-storage-and-below', 'src/shard/worker.ts', 'src/server/api.ts')).toBe(true)
    expect(found('client-side-imports-no-broker-internals', 'src/cli/tool.ts', 'src/storage/log.ts')).toBe(true)
    expect(found('client-side-imports-no-broker-internals', 'src/cli/tool.ts', 'src/config/broker-config.ts')).toBe(true)
    expect(found('client-side-imports-no-broker-internals', 'src/streams/topology.ts', 'src/shard/worker.ts')).toBe(true)
  })

  it('forbids import cycles between folders, a folder and its subfolder included', () => {
    const cycles = violations.filter((v) => v.rule === 'no-folder-cycles')
    expect(cycles.map((v) => [v.from, v.to]).sort()).toEqual([
      ['src/coordinator/group/group.ts', 'src/coordinator/runtime.ts'],
      ['src/coordinator/runtime.ts', 'src/coordinator/group/group.ts'],
      ['src/server/api.ts', 'src/server/handlers/produce.ts'],
      ['src/server/handlers/produce.ts', 'src/server/api.ts'],
    ])
    expect(cycles.find((v) => v.from === 'src/coordinator/runtime.ts')!.cycle).toEqual(['src/coordinator', 'src/coordinator/group', 'src/coordinator'])
  })

  it('forbids module cycles inside a folder too, in every folder (src/server is no longer exempt)', () => {
    // dependency-cruiser names one import of each cycle.
    const cycles = violations.filter((v) => v.rule === 'no-module-cycles').map((v) => [v.from, v.to].sort().join(' '))
    expect(cycles.sort()).toEqual([
      'src/config/broker-config.ts src/config/topic-configs.ts',
      'src/coordinator/group/group.ts src/coordinator/runtime.ts',
      'src/server/api.ts src/server/handlers/produce.ts',
    ])
  })

  it('keeps handlers to their ports, the listener edge free of products and the broker free of products but client/', () => {
    expect(found('handlers-import-only-common-protocol-domain-config', 'src/server/handlers/fetch.ts', 'src/storage/log.ts')).toBe(true)
    expect(found('handlers-import-only-common-protocol-domain-config', 'src/server/handlers/produce.ts', 'src/server/api.ts')).toBe(true)
    expect(found('server-imports-no-broker-or-client-side', 'src/server/socket.ts', 'src/client/connection.ts')).toBe(true)
    expect(found('broker-imports-no-product-but-client', 'src/broker/broker.ts', 'src/cli/tool.ts')).toBe(true)
    // the same import is the cli/ floor's too: only the skein entry may load the tools
    expect(found('only-skein-imports-cli', 'src/broker/broker.ts', 'src/cli/tool.ts')).toBe(true)
    // the broker composes the server and reaches other brokers through client/; a handler may import domain/
    expect(violations.some((v) => v.from === 'src/broker/broker.ts' && v.to !== 'src/cli/tool.ts')).toBe(false)
    expect(violations.some((v) => v.from === 'src/server/handlers/fetch.ts' && v.to === 'src/domain/errors.ts')).toBe(false)
  })

  it('refuses a folder that has no floor', () => {
    expect(violations.filter((v) => v.rule === 'every-folder-has-a-floor').map((v) => v.from)).toEqual(['src/gadgets/widget.ts'])
  })

  it('reports nothing else: config parsing, dynamic entry loading and the server floor are allowed', () => {
    const reported = new Set(violations.map((v) => `${v.rule} ${v.from} ${v.to}`))
    expect(reported.size).toBe(21)
    expect(violations.some((v) => v.to === 'src/config/properties.ts' || v.from === 'src/skein.ts' || v.from === 'src/main.ts')).toBe(false)
  })

  it('prints one line per violation with the rule name, and the command exits 1', async () => {
    const lines = formatReport({ modules: 0, imports: 0, violations, staleExemptions: [] }, 0)
    expect(lines).toContain('  shard-imports-only-storage-and-below: src/shard/worker.ts → src/server/api.ts')
    const r = await run(process.execPath, [join(REPO_ROOT, 'dist', 'scripts', 'check-boundaries.js'), root], { timeoutMs: 60000 })
    expect(r.code).toBe(1)
    expect(r.stderr.toString()).toContain('  client-side-imports-no-broker-internals: src/cli/tool.ts → src/storage/log.ts\n')
    expect(r.stderr.toString()).toContain('check-boundaries: 21 violation(s)')
  })

  it('passes a tree that keeps the rules', async () => {
    const clean = mkdtempSync(join(tmpdir(), 'skein-boundaries-clean-'))
    try {
      writeTree(clean, {
        'src/domain/errors.ts': 'export const NONE = 0\n',
        'src/storage/log.ts': "import { NONE } from '../domain/errors.js'\nexport const log = NONE\n",
        'src/server/api.ts': "import { log } from '../storage/log.js'\nexport const api = log\n",
        'src/index.ts': "export { api } from './server/api.js'\n",
      })
      const r = await run(process.execPath, [join(REPO_ROOT, 'dist', 'scripts', 'check-boundaries.js'), clean], { timeoutMs: 60000 })
      expect(r.code).toBe(0)
      expect(r.stdout.toString()).toMatch(/check-boundaries: 4 modules, 3 imports, \d+ rules: no violations/)
      expect(r.stdout.toString()).not.toContain('note:')
    } finally {
      rmSync(clean, { recursive: true, force: true })
    }
  })

  it('places every folder of src/ that a rule names', () => {
    const named = new Set<string>()
    for (const r of RULES) {
      for (const re of [r.from, r.to].flatMap((p) => [p.path, p.pathNot]).filter((x): x is string => typeof x === 'string')) {
        for (const m of re.matchAll(/\^src\/\(([^)]+)\)\//g)) for (const f of m[1]!.split('|')) named.add(f.split('/')[0]!)
      }
    }
    for (const f of named) expect(FLOORS, f).toHaveProperty(f)
  })
})

describe('check-boundaries: the products', () => {
  let root: string
  let violations: Violation[]

  const PRODUCTS = {
    'src/domain/errors.ts': 'export const NONE = 0\n',
    // the skein tools: only the skein entry loads them
    'src/cli/args.ts': "import { NONE } from '../domain/errors.js'\nexport class UsageError extends Error {}\nexport const none = NONE\n",
    'src/skein.ts': "export const run = async (): Promise<unknown> => (await import('./cli/args.js')).UsageError\n",
    // a product throwing the CLI's error
    'src/connect/runtime/worker.ts': "import { UsageError } from '../../cli/args.js'\nexport const fail = (): never => { throw new UsageError() }\n",
    // the product floors: client <- registry <- {rest, streams, connect} <- console <- cli
    'src/client/producer.ts': "import { NONE } from '../domain/errors.js'\nexport const producer = NONE\n",
    'src/client/schemas.ts': "import { registry } from '../registry/client.js'\nexport const schemas = registry\n",
    'src/registry/client.ts': "import { producer } from '../client/producer.js'\nexport const registry = producer\n",
    'src/registry/proxy.ts': "import { proxy } from '../rest/proxy.js'\nexport const viaProxy = proxy\n",
    'src/rest/proxy.ts': "import { registry } from '../registry/client.js'\nimport { producer } from '../client/producer.js'\nexport const proxy = registry + producer\n",
    'src/rest/streams.ts': "import { topology } from '../streams/topology.js'\nexport const viaStreams = topology\n",
    'src/streams/topology.ts': "import { registry } from '../registry/client.js'\nexport const topology = registry\n",
    'src/streams/console.ts': "import { page } from '../console/page.js'\nexport const viaConsole = page\n",
    'src/console/page.ts': "import { proxy } from '../rest/proxy.js'\nimport { topology } from '../streams/topology.js'\nexport const page = proxy + topology\n",
    // Connect's sub-floors: api <- plugins (connectors, converters, transforms, mirror) <- runtime
    'src/connect/api/plugin.ts': "import { NONE } from '../../domain/errors.js'\nexport const plugin = NONE\n",
    'src/connect/api/admin.ts': "import { producer } from '../../client/producer.js'\nexport const admin = producer\n",
    'src/connect/converters/avro.ts': "import { plugin } from '../api/plugin.js'\nimport { registry } from '../../registry/client.js'\nexport const avro = plugin + registry\n",
    'src/connect/transforms/cast.ts': "import { plugin } from '../api/plugin.js'\nimport { avro } from '../converters/avro.js'\nexport const cast = plugin + avro\n",
    'src/connect/mirror/source.ts': "import { plugin } from '../api/plugin.js'\nimport { producer } from '../../client/producer.js'\nexport const source = plugin + producer\n",
    'src/connect/mirror/herder.ts': "import { herder } from '../runtime/herder.js'\nimport { registry } from '../../registry/client.js'\nexport const viaHerder = herder + registry\n",
    'src/connect/connectors/index.ts': "import { source } from '../mirror/source.js'\nimport { avro } from '../converters/avro.js'\nexport const connectors = [source, avro]\n",
    'src/connect/runtime/herder.ts': "import { connectors } from '../connectors/index.js'\nimport { producer } from '../../client/producer.js'\nexport const herder = connectors.length + producer\n",
  }

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'skein-boundaries-products-'))
    writeTree(root, PRODUCTS)
    violations = (await checkBoundaries(root)).violations
  })

  afterAll(() => rmSync(root, { recursive: true, force: true }))

  const reported = (): string[] => violations.map((v) => `${v.rule} ${v.from} → ${v.to}`).sort()

  it('lets only the skein entry import cli/', () => {
    expect(reported()).toContain('only-skein-imports-cli src/connect/runtime/worker.ts → src/cli/args.ts')
  })

  it('keeps each product to the products of the floors below it', () => {
    expect(reported().filter((v) => v.includes('-imports-only-lower-products'))).toEqual([
      'client-imports-only-lower-products src/client/schemas.ts → src/registry/client.ts',
      'connect-imports-only-lower-products src/connect/runtime/worker.ts → src/cli/args.ts',
      'registry-imports-only-lower-products src/registry/proxy.ts → src/rest/proxy.ts',
      'rest-imports-only-lower-products src/rest/streams.ts → src/streams/topology.ts',
      'streams-imports-only-lower-products src/streams/console.ts → src/console/page.ts',
    ])
  })

  it("keeps Connect's sub-floors: the API knows no product, plugins no runtime, MirrorMaker only the API and the client", () => {
    expect(reported().filter((v) => v.startsWith('connect-') && !v.startsWith('connect-imports-'))).toEqual([
      'connect-api-imports-no-product src/connect/api/admin.ts → src/client/producer.ts',
      'connect-mirror-imports-only-connect-api-and-client src/connect/mirror/herder.ts → src/connect/runtime/herder.ts',
      'connect-mirror-imports-only-connect-api-and-client src/connect/mirror/herder.ts → src/registry/client.ts',
      'connect-plugins-import-no-runtime src/connect/mirror/herder.ts → src/connect/runtime/herder.ts',
      'connect-transforms-import-only-connect-api src/connect/transforms/cast.ts → src/connect/converters/avro.ts',
    ])
  })

  it('reports nothing else: lower products, the plugin API and the plugin lists are allowed', () => {
    // The folder cycles the broken imports make (registry <-> rest, streams <-> console, ...) are reported too.
    expect(violations.filter((v) => v.rule !== 'no-folder-cycles')).toHaveLength(11)
  })
})
