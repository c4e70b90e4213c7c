// The plugins a worker knows: the built-ins (connectors, converters, transforms, predicates) and those
// found under plugin.path. Each plugin.path entry is a directory; it is a plugin module itself when it has
// a package.json or an index module (index.js / index.mjs), else each of its subdirectories that has one
// is. A module declares its plugins by exporting `plugins` (or a default export): an array of
// PluginDescriptor ({className, kind, aliases, version, create}); without it, every exported class that
// is a Connector, Transformation, Predicate or Converter is taken, named by the package name and the
// export name (and the export name alone as an alias). A module that fails to load is reported and
// skipped, as Kafka skips a broken plugin jar.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Connector, type Converter, type HeaderConverter, type PluginDescriptor, type PluginKind, type Predicate, SinkConnector, SourceConnector, type Transformation } from '../api/plugin.js'
import { CONNECTOR_PLUGINS } from '../connectors/index.js'
import { CONVERTER_PLUGINS } from '../converters/index.js'
import { TRANSFORM_PLUGINS } from '../transforms/index.js'

export interface PluginInfo {
  className: string
  kind: PluginKind
  version: string
  aliases: string[]
  /** Where it came from: 'builtin' or the module's path. */
  location: string
}

export class PluginNotFoundError extends Error {
  constructor(readonly pluginName: string, kind: string) {
    super(`Failed to find any class that implements ${kind} and which name matches ${pluginName}`)
    this.name = 'PluginNotFoundError'
  }
}

const KIND_NAMES: Record<PluginKind, string> = {
  source: 'Connector', sink: 'Connector', converter: 'Converter', header_converter: 'HeaderConverter', transformation: 'Transformation', predicate: 'Predicate',
}

export class Plugins {
  /** By class name and alias: one entry per kind (ByteArrayConverter is a converter and a header converter, as in Kafka). */
  private readonly byName = new Map<string, { d: PluginDescriptor; location: string }[]>()
  private readonly list: { d: PluginDescriptor; location: string }[] = []
  readonly loadErrors: { path: string; error: string }[] = []

  constructor() {
    for (const d of [...CONNECTOR_PLUGINS, ...CONVERTER_PLUGINS, ...TRANSFORM_PLUGINS]) this.add(d, 'builtin')
  }

  private add(d: PluginDescriptor, location: string): void {
    const entry = { d, location }
    this.list.push(entry)
    for (const n of [d.className, ...(d.aliases ?? [])]) {
      const list = this.byName.get(n) ?? []
      if (!list.some((e) => e.d.kind === d.kind)) list.push(entry)
      this.byName.set(n, list)
    }
  }

  /** Loads the modules under plugin.path. */
  async loadPath(paths: readonly string[]): Promise<void> {
    for (const p of paths) {
      const dir = resolve(p.trim())
      if (!existsSync(dir)) {
        this.loadErrors.push({ path: dir, error: 'no such directory' })
        continue
      }
      const candidates = isModuleDir(dir) ? [dir] : readdirSync(dir).map((e) => join(dir, e)).filter((e) => statSync(e).isDirectory() && isModuleDir(e))
      for (const c of candidates) await this.loadModule(c)
    }
  }

  private async loadModule(dir: string): Promise<void> {
    try {
      const pkg = existsSync(join(dir, 'package.json')) ? (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string; main?: string; exports?: unknown }) : {}
      const entry = moduleEntry(dir, pkg)
      const mod = (await import(pathToFileURL(entry).href)) as Record<string, unknown>
      const declared = (mod['plugins'] ?? (Array.isArray(mod['default']) ? mod['default'] : undefined)) as PluginDescriptor[] | undefined
      if (Array.isArray(declared)) {
        for (const d of declared) this.add(d, dir)
        return
      }
      const prefix = pkg.name ?? dir.split('/').pop()!
      for (const [name, value] of Object.entries(mod)) {
        if (typeof value !== 'function') continue
        const kind = classKind(value as new () => unknown)
        if (kind === null) continue
        const Cls = value as new () => Connector | Transformation | Predicate | Converter
        this.add({ className: `${prefix}.${name}`, kind, aliases: [name], version: pkg.version ?? 'unknown', create: () => new Cls() }, dir)
      }
    } catch (err) {
      this.loadErrors.push({ path: dir, error: (err as Error).message })
    }
  }

  infos(): PluginInfo[] {
    return this.list.map(({ d, location }) => ({ className: d.className, kind: d.kind, version: d.version ?? pluginVersion(d), aliases: d.aliases ?? [], location }))
  }

  find(name: string): PluginInfo | undefined {
    const e = this.byName.get(name)?.[0]
    return e === undefined ? undefined : { className: e.d.className, kind: e.d.kind, version: e.d.version ?? pluginVersion(e.d), aliases: e.d.aliases ?? [], location: e.location }
  }

  private descriptor(name: string, kinds: PluginKind[]): PluginDescriptor {
    const e = this.byName.get(name)?.find((x) => kinds.includes(x.d.kind))
    if (e === undefined) throw new PluginNotFoundError(name, KIND_NAMES[kinds[0]!])
    return e.d
  }

  newConnector(name: string): Connector {
    return this.descriptor(name, ['source', 'sink']).create() as Connector
  }

  newConverter(name: string): Converter {
    return this.descriptor(name, ['converter']).create() as Converter
  }

  newHeaderConverter(name: string): HeaderConverter {
    return this.descriptor(name, ['header_converter']).create() as HeaderConverter
  }

  newTransformation(name: string): Transformation {
    return this.descriptor(name, ['transformation']).create() as Transformation
  }

  newPredicate(name: string): Predicate {
    return this.descriptor(name, ['predicate']).create() as Predicate
  }

  connectorKind(name: string): 'source' | 'sink' {
    return this.descriptor(name, ['source', 'sink']).kind as 'source' | 'sink'
  }
}

function isModuleDir(dir: string): boolean {
  return existsSync(join(dir, 'package.json')) || existsSync(join(dir, 'index.js')) || existsSync(join(dir, 'index.mjs'))
}

function moduleEntry(dir: string, pkg: { main?: string; exports?: unknown }): string {
  const exp = pkg.exports
  const fromExports = typeof exp === 'string' ? exp : typeof exp === 'object' && exp !== null ? pickExport((exp as Record<string, unknown>)['.'] ?? exp) : undefined
  for (const c of [fromExports, pkg.main, 'index.js', 'index.mjs']) if (c !== undefined && existsSync(join(dir, c))) return join(dir, c)
  throw new Error(`no entry module (exports, main, index.js or index.mjs) in ${dir}`)
}

function pickExport(e: unknown): string | undefined {
  if (typeof e === 'string') return e
  if (typeof e === 'object' && e !== null) {
    const o = e as Record<string, unknown>
    return pickExport(o['import'] ?? o['default'] ?? o['node'])
  }
  return undefined
}

/** What kind of plugin an exported class is, by its prototype (connectors) or its methods. */
function classKind(cls: new () => unknown): PluginKind | null {
  const proto = cls.prototype as Record<string, unknown> | undefined
  if (proto === undefined) return null
  if (proto instanceof SourceConnector) return 'source'
  if (proto instanceof SinkConnector) return 'sink'
  if (proto instanceof Connector) return null
  const has = (m: string): boolean => typeof proto[m] === 'function'
  if (has('apply') && has('configure') && has('config')) return 'transformation'
  if (has('test') && has('configure') && has('config')) return 'predicate'
  if (has('fromConnectData') && has('toConnectData')) return 'converter'
  if (has('fromConnectHeader') && has('toConnectHeader')) return 'header_converter'
  return null
}

function pluginVersion(d: PluginDescriptor): string {
  try {
    const p = d.create() as { version?: () => string }
    return typeof p.version === 'function' ? p.version() : 'unknown'
  } catch {
    return 'unknown'
  }
}
