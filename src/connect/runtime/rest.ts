// Kafka Connect's REST API on Skein's HTTP adapter, with Kafka's paths, bodies, status codes and error
// body {"error_code": <status>, "message": "..."}:
//   GET /, GET /health, GET /metrics (the worker's metrics registry in Prometheus' text format, as the
//   broker's /metrics; Kafka publishes these over JMX)
//   GET|POST /connectors (?expand=status&expand=info), GET|DELETE /connectors/{c}
//   GET|PUT|PATCH /connectors/{c}/config, GET /connectors/{c}/status, GET /connectors/{c}/tasks,
//   GET /connectors/{c}/tasks-config, GET /connectors/{c}/tasks/{t}/status, POST /connectors/{c}/tasks/{t}/restart
//   POST /connectors/{c}/restart (?includeTasks, ?onlyFailed), PUT /connectors/{c}/pause|resume|stop
//   GET /connectors/{c}/topics, PUT /connectors/{c}/topics/reset
//   GET|PATCH|DELETE /connectors/{c}/offsets
//   GET /connector-plugins (?connectorsOnly), GET /connector-plugins/{p}/config, PUT /connector-plugins/{p}/config/validate
//   GET /admin/loggers, GET|PUT /admin/loggers/{l} (?scope=worker|cluster)
//   POST /connectors/{c}/tasks (internal: task configs sent to the leader)
// A write that reaches a follower is forwarded to the leader (once: the forwarded request carries
// forward=false), as Kafka's workers do; during a rebalance, when no leader is known, the answer is 409.
import { configKeyInfo } from '../api/config-def.js'
import { createHttpServer, jsonNestedDeeperThan, tooDeepMessage, type BufferedRequest, type BoundListener, type HttpResponse, type HttpServer, type HttpTls } from '../../http/index.js'
import { fetchWithTls } from '../../http/fetch.js'
import type { ConnectionOptions } from 'node:tls'
import type { Logger } from '../../observability/logger.js'
import type { MetricsRegistry } from '../../observability/metrics.js'
import { PROMETHEUS_CONTENT_TYPE, renderPrometheusText } from '../../observability/prometheus.js'
import type { TargetState } from './config-store.js'
import { type Herder, HerderError, NotLeaderError } from './herder.js'
import { isLog4jLevel, type Loggers } from './loggers.js'
import { type ConnectRestAuth, SIGNATURE_ALGORITHM_HEADER, SIGNATURE_HEADER } from './rest-auth.js'

export const CONNECT_VERSION = '3.9.0-skein'

const JSON_HEADERS = { 'Content-Type': 'application/json' }

function errorBody(status: number, message: string): { headers: typeof JSON_HEADERS; body: string } {
  return { headers: JSON_HEADERS, body: JSON.stringify({ error_code: status, message }) }
}

type Route = (req: BufferedRequest, res: HttpResponse) => Promise<{ status: number; body?: unknown }>

export interface ConnectRestOptions {
  listeners: readonly string[]
  /** The herder, once it exists (the REST listener binds first: its port is part of the worker's URL). */
  herder: () => Herder | null
  loggers: Loggers
  log: Logger
  /** The Kafka cluster id, for GET /. */
  clusterId: () => string | null
  /** Served at GET /metrics. */
  metrics?: MetricsRegistry
  maxBodyBytes?: number
  /** access.control.allow.origin (src/http's allowedOrigins). */
  allowedOrigins?: readonly string[]
  /** The key and trust stores of https listeners (listeners.https.ssl.* or ssl.*). */
  tls?: HttpTls
  /** TLS of requests forwarded to the leader's https URL (the same stores, as Kafka's RestClient). */
  peerTls?: ConnectionOptions
  /** rest.extension.classes' BASIC authentication (rest-auth.ts); null or absent: none. */
  auth?: ConnectRestAuth | null
}

function parseJson(req: BufferedRequest): unknown {
  if (req.body.length === 0) return undefined
  if (jsonNestedDeeperThan(req.body)) throw new HerderError(400, tooDeepMessage())
  try {
    return JSON.parse(req.body.toString('utf8'))
  } catch (err) {
    throw new HerderError(400, `Request body is not valid JSON: ${(err as Error).message}`)
  }
}

function stringProps(v: unknown, what: string): Record<string, string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new HerderError(400, `${what} must be a JSON object of strings`)
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v)) {
    if (x === null || x === undefined) continue
    if (typeof x === 'object') throw new HerderError(400, `${what}: the value of ${k} must be a string`)
    out[k] = String(x)
  }
  return out
}

function bool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name)
  if (v === null) return false
  if (v.toLowerCase() === 'true') return true
  if (v.toLowerCase() === 'false') return false
  throw new HerderError(400, `Query parameter ${name} must be true or false`)
}

export class ConnectRest {
  private constructor(private readonly server: HttpServer, private readonly o: ConnectRestOptions) {}

  get listeners(): readonly BoundListener[] {
    return this.server.listeners
  }

  static async start(o: ConnectRestOptions): Promise<ConnectRest> {
    const server = await createHttpServer({ maxBodyBytes: o.maxBodyBytes ?? 16 * 1024 * 1024, allowedOrigins: o.allowedOrigins, tls: o.tls, ...(o.auth == null ? {} : { authenticator: o.auth.authenticator }), errorBody: (status, message) => errorBody(status, message), onHandlerError: (err) => o.log.error({ err: (err as Error).message }, 'REST handler error') })
    const rest = new ConnectRest(server, o)
    rest.mount()
    try {
      for (const l of o.listeners) await server.listen(l)
    } catch (err) {
      await server.close()
      throw err
    }
    return rest
  }

  close(): Promise<void> {
    return this.server.close()
  }

  private route(method: string, pattern: string, fn: Route, writes = false): void {
    this.server.route(method, pattern, async (req, res) => {
      let answer: { status: number; body?: unknown }
      try {
        answer = await fn(req, res)
      } catch (err) {
        if (err instanceof NotLeaderError && writes) {
          answer = await this.forward(req, err.leaderUrl)
        } else if (err instanceof NotLeaderError) {
          answer = { status: 409, body: { error_code: 409, message: err.message } }
        } else if (err instanceof HerderError) {
          answer = { status: err.status, body: { error_code: err.status, message: err.message } }
        } else {
          this.o.log.error({ err: (err as Error).message, stack: (err as Error).stack, path: req.path }, 'REST request failed')
          answer = { status: 500, body: { error_code: 500, message: (err as Error).message } }
        }
      }
      if (res.aborted) return
      if (answer.body === undefined) res.send(answer.status, JSON_HEADERS)
      else res.send(answer.status, JSON_HEADERS, JSON.stringify(answer.body))
    })
  }

  /** Sends a write to the leader and relays its answer. */
  private async forward(req: BufferedRequest, leaderUrl: string | null): Promise<{ status: number; body?: unknown }> {
    if (leaderUrl === null || req.query.get('forward') === 'false' || leaderUrl === this.o.herder()?.url) {
      return { status: 409, body: { error_code: 409, message: 'Cannot complete request because of a conflicting operation (e.g. worker rebalance)' } }
    }
    const q = new URLSearchParams(req.query)
    q.set('forward', 'false')
    // The caller's own credentials go along (Kafka's RestClient does the same), so the leader
    // authenticates the caller; a signed internal request stays signed.
    const headers: Record<string, string> = { 'Content-Type': 'application/json' }
    for (const name of ['authorization', SIGNATURE_HEADER.toLowerCase(), SIGNATURE_ALGORITHM_HEADER.toLowerCase()]) {
      const value = req.header(name)
      if (value !== undefined && value !== '') headers[name] = value
    }
    const res = await fetchWithTls(`${leaderUrl}${req.path}?${q.toString()}`, {
      method: req.method,
      headers,
      body: req.body.length > 0 ? req.body : undefined,
      signal: AbortSignal.timeout(90000),
    }, this.o.peerTls).catch((err: unknown) => {
      throw new HerderError(500, `Error trying to forward REST request: ${(err as Error).message}`)
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
  }

  private get h(): Herder {
    const h = this.o.herder()
    if (h === null) throw new HerderError(503, 'Worker is still starting up.')
    return h
  }

  private mount(): void {
    this.route('GET', '/', async () => ({ status: 200, body: { version: CONNECT_VERSION, commit: 'skein', kafka_cluster_id: this.o.clusterId() } }))
    this.route('GET', '/health', async () => (this.o.herder()?.ready === true
      ? { status: 200, body: { status: 'healthy', message: 'Worker has completed startup and is ready to handle requests.' } }
      : { status: 503, body: { status: 'starting', message: 'Worker is still starting up.' } }))

    const metrics = this.o.metrics
    if (metrics !== undefined) {
      this.server.route('GET', '/metrics', async (_req, res) => {
        const text = renderPrometheusText(await metrics.scrape())
        if (!res.aborted) res.send(200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE }, text)
      })
    }
    this.route('GET', '/connectors', async (req) => {
      const names = this.h.connectorNames()
      const expand = req.query.getAll('expand')
      if (expand.length === 0) return { status: 200, body: names }
      const out: Record<string, Record<string, unknown>> = {}
      for (const n of names) {
        const e: Record<string, unknown> = {}
        try {
          if (expand.includes('status')) e['status'] = this.h.connectorStatus(n)
          if (expand.includes('info')) e['info'] = this.h.connectorInfo(n)
        } catch {
          continue
        }
        out[n] = e
      }
      return { status: 200, body: out }
    })

    this.route('POST', '/connectors', async (req) => {
      const body = parseJson(req) as { name?: unknown; config?: unknown; initial_state?: unknown } | undefined
      if (body === undefined || typeof body !== 'object' || body === null) throw new HerderError(400, 'Request body must be a JSON object with "name" and "config"')
      const config = stringProps(body.config ?? {}, 'config')
      const name = typeof body.name === 'string' ? body.name.trim() : config['name']?.trim()
      if (name === undefined || name === '') throw new HerderError(400, 'Connector name may not be empty')
      if (config['name'] !== undefined && config['name'] !== name) throw new HerderError(400, 'Connector name configuration (' + config['name'] + ') doesn\'t match connector name in the URL (' + name + ')')
      let initial: TargetState | null = null
      if (body.initial_state !== undefined && body.initial_state !== null) {
        const s = String(body.initial_state).toUpperCase()
        if (s === 'RUNNING') initial = 'STARTED'
        else if (s === 'PAUSED' || s === 'STOPPED') initial = s
        else throw new HerderError(400, `Invalid initial state ${String(body.initial_state)}: must be RUNNING, PAUSED or STOPPED`)
      }
      const { info } = await this.h.putConnectorConfig(name, config, false, initial)
      return { status: 201, body: info }
    }, true)

    this.route('GET', '/connectors/:connector', async (req) => ({ status: 200, body: this.h.connectorInfo(req.params['connector']!) }))
    this.route('DELETE', '/connectors/:connector', async (req) => {
      await this.h.deleteConnector(req.params['connector']!)
      return { status: 204 }
    }, true)
    this.route('GET', '/connectors/:connector/config', async (req) => ({ status: 200, body: this.h.connectorConfig(req.params['connector']!) }))
    this.route('PUT', '/connectors/:connector/config', async (req) => {
      const name = req.params['connector']!
      const config = stringProps(parseJson(req) ?? {}, 'config')
      if (config['name'] !== undefined && config['name'] !== name) throw new HerderError(400, `Connector name configuration (${config['name']}) doesn't match connector name in the URL (${name})`)
      const { created, info } = await this.h.putConnectorConfig(name, config, true)
      return { status: created ? 201 : 200, body: info }
    }, true)
    this.route('PATCH', '/connectors/:connector/config', async (req) => {
      const name = req.params['connector']!
      const patch = parseJson(req)
      if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new HerderError(400, 'Request body must be a JSON object')
      const current = this.h.connectorConfig(name)
      const next = { ...current }
      for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete next[k]
        else next[k] = String(v)
      }
      if (next['name'] !== undefined && next['name'] !== name) throw new HerderError(400, `Connector name configuration (${next['name']}) doesn't match connector name in the URL (${name})`)
      const { info } = await this.h.putConnectorConfig(name, next, true)
      return { status: 200, body: info }
    }, true)
    this.route('GET', '/connectors/:connector/status', async (req) => ({ status: 200, body: this.h.connectorStatus(req.params['connector']!) }))
    this.route('GET', '/connectors/:connector/tasks', async (req) => ({ status: 200, body: this.h.taskConfigs(req.params['connector']!) }))
    this.route('GET', '/connectors/:connector/tasks-config', async (req) => {
      const name = req.params['connector']!
      return { status: 200, body: Object.fromEntries(this.h.taskConfigs(name).map((t) => [`${name}-${t.id.task}`, t.config])) }
    })
    this.route('POST', '/connectors/:connector/tasks', async (req) => {
      // With authentication on, only workers write task configs, signed (rest-auth.ts); an authenticated
      // user's request without a signature is refused too, as Kafka's workers refuse it with session keys.
      if (this.o.auth != null) {
        const signature = req.header(SIGNATURE_HEADER.toLowerCase()) ?? ''
        if (signature === '') throw new HerderError(400, 'Internal request missing required signature.')
        if (!this.o.auth.signer.verify(req.method, req.path, req.body, signature)) throw new HerderError(403, 'Internal request contained invalid signature.')
      }
      const configs = parseJson(req)
      if (!Array.isArray(configs)) throw new HerderError(400, 'Task configs must be a JSON array of objects')
      await this.h.putTaskConfigsAsLeader(req.params['connector']!, configs.map((c, i) => stringProps(c, `task config ${i}`)))
      return { status: 204 }
    }, true)
    this.route('GET', '/connectors/:connector/tasks/:task/status', async (req) => ({ status: 200, body: this.h.taskStatus(req.params['connector']!, taskNumber(req.params['task']!)) }))
    this.route('POST', '/connectors/:connector/tasks/:task/restart', async (req) => {
      const name = req.params['connector']!
      const task = taskNumber(req.params['task']!)
      const owner = await this.h.restartTask(name, task)
      if (owner === null) return { status: 204 }
      if (req.query.get('forward') === 'false') throw new HerderError(409, `Task ${name}-${task} is not running on this worker`)
      return this.forward(req, owner)
    })
    this.route('POST', '/connectors/:connector/restart', async (req) => {
      const status = await this.h.restartConnector(req.params['connector']!, bool(req.query, 'includeTasks'), bool(req.query, 'onlyFailed'))
      return status === null ? { status: 204 } : { status: 202, body: status }
    }, true)
    this.route('PUT', '/connectors/:connector/pause', async (req) => {
      await this.h.pauseConnector(req.params['connector']!)
      return { status: 202 }
    }, true)
    this.route('PUT', '/connectors/:connector/resume', async (req) => {
      await this.h.resumeConnector(req.params['connector']!)
      return { status: 202 }
    }, true)
    this.route('PUT', '/connectors/:connector/stop', async (req) => {
      await this.h.stopConnector(req.params['connector']!)
      return { status: 204 }
    }, true)
    this.route('GET', '/connectors/:connector/topics', async (req) => {
      const name = req.params['connector']!
      return { status: 200, body: { [name]: { topics: this.h.activeTopics(name) } } }
    })
    this.route('PUT', '/connectors/:connector/topics/reset', async (req) => {
      await this.h.resetActiveTopics(req.params['connector']!)
      return { status: 204 }
    })
    this.route('GET', '/connectors/:connector/offsets', async (req) => ({ status: 200, body: await this.h.connectorOffsets(req.params['connector']!) }))
    this.route('PATCH', '/connectors/:connector/offsets', async (req) => {
      const body = parseJson(req) as { offsets?: unknown } | undefined
      if (body === undefined || !Array.isArray(body.offsets)) throw new HerderError(400, 'Request body must be {"offsets": [{"partition": {...}, "offset": {...}}, ...]}')
      const offsets = body.offsets.map((o: unknown) => {
        const e = o as { partition?: unknown; offset?: unknown }
        if (typeof e?.partition !== 'object' || e.partition === null) throw new HerderError(400, 'Each entry needs a "partition" object')
        if (e.offset !== null && (typeof e.offset !== 'object' || e.offset === undefined)) throw new HerderError(400, 'Each entry needs an "offset" object or null')
        return { partition: e.partition as Record<string, unknown>, offset: e.offset as Record<string, unknown> | null }
      })
      return { status: 200, body: { message: await this.h.modifyOffsets(req.params['connector']!, offsets) } }
    }, true)
    this.route('DELETE', '/connectors/:connector/offsets', async (req) => ({ status: 200, body: { message: await this.h.modifyOffsets(req.params['connector']!, null) } }), true)

    this.route('GET', '/connector-plugins', async (req) => {
      const onlyConnectors = req.query.get('connectorsOnly') !== 'false'
      const kinds = onlyConnectors ? ['source', 'sink'] : ['source', 'sink', 'converter', 'header_converter', 'transformation', 'predicate']
      return { status: 200, body: this.h.plugins.infos().filter((p) => kinds.includes(p.kind)).map((p) => ({ class: p.className, type: p.kind, version: p.version })) }
    })
    this.route('GET', '/connector-plugins/:plugin/config', async (req) => {
      const name = req.params['plugin']!
      const info = this.h.plugins.find(name)
      if (info === undefined) throw new HerderError(404, `Unknown plugin ${name}.`)
      let def
      try {
        const p = info.kind === 'source' || info.kind === 'sink' ? this.h.plugins.newConnector(name) : info.kind === 'transformation' ? this.h.plugins.newTransformation(name) : info.kind === 'predicate' ? this.h.plugins.newPredicate(name) : info.kind === 'converter' ? this.h.plugins.newConverter(name) : this.h.plugins.newHeaderConverter(name)
        def = p.config?.()
      } catch (err) {
        throw new HerderError(500, (err as Error).message)
      }
      return { status: 200, body: (def?.configKeys() ?? []).map(configKeyInfo) }
    })
    this.route('PUT', '/connector-plugins/:plugin/config/validate', async (req) => {
      const type = req.params['plugin']!
      const config = stringProps(parseJson(req) ?? {}, 'config')
      const included = config['connector.class']
      const norm = (s: string): string => s.replace(/Connector$/, '').split('.').pop()!
      if (included !== undefined && included !== '' && !norm(included).endsWith(norm(type))) throw new HerderError(400, `Included connector type ${included} does not match request type ${type}`)
      config['connector.class'] = included !== undefined && included !== '' ? included : type
      if (this.h.plugins.find(config['connector.class']) === undefined) throw new HerderError(400, `Failed to find any class that implements Connector and which name matches ${config['connector.class']}`)
      return { status: 200, body: await this.h.validate(config) }
    })

    this.route('GET', '/admin/loggers', async () => ({ status: 200, body: this.o.loggers.all() }))
    this.route('GET', '/admin/loggers/:logger', async (req) => {
      const name = req.params['logger']!
      const l = this.o.loggers.level(name)
      if (l === null) throw new HerderError(404, `Logger ${name} not found.`)
      return { status: 200, body: l.last_modified === null ? { level: l.level } : l }
    })
    this.route('PUT', '/admin/loggers/:logger', async (req) => {
      const name = req.params['logger']!
      const body = parseJson(req) as { level?: unknown } | undefined
      const level = typeof body?.level === 'string' ? body.level : undefined
      if (level === undefined) throw new HerderError(400, 'The request body must contain a "level" field')
      if (!isLog4jLevel(level)) throw new HerderError(404, `invalid log level '${level}'.`)
      const scope = (req.query.get('scope') ?? 'worker').toLowerCase()
      if (scope === 'cluster') {
        await this.h.setClusterLoggerLevel(name, level.toUpperCase())
        return { status: 204 }
      }
      return { status: 200, body: this.o.loggers.setLevel(name, level) }
    })
  }
}

function taskNumber(s: string): number {
  const n = Number(s)
  if (!Number.isInteger(n) || n < 0) throw new HerderError(404, `Unknown task ${s}`)
  return n
}
