// Log levels by logger name for /admin/loggers (KIP-495): the root logger and named loggers (one per
// connector and task, plus the runtime's own), with log4j's level names. Setting a level on a name sets
// it on every logger whose name starts with it (a namespace), as Kafka's Loggers does.
import type { Logger } from '../../observability/logger.js'

export const LOG4J_LEVELS = ['OFF', 'FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE'] as const
export type Log4jLevel = (typeof LOG4J_LEVELS)[number]

const TO_PINO: Record<Log4jLevel, string> = { OFF: 'silent', FATAL: 'fatal', ERROR: 'error', WARN: 'warn', INFO: 'info', DEBUG: 'debug', TRACE: 'trace' }
const FROM_PINO: Record<string, Log4jLevel> = { silent: 'OFF', fatal: 'FATAL', error: 'ERROR', warn: 'WARN', info: 'INFO', debug: 'DEBUG', trace: 'TRACE' }

export class Loggers {
  private readonly named = new Map<string, { logger: Logger; lastModified: number | null }>()
  private rootModified: number | null = null

  constructor(private readonly root: Logger) {}

  /** A child logger under a name (e.g. skein.connect.WorkerSinkTask or a connector's name). */
  get(name: string): Logger {
    let e = this.named.get(name)
    if (e === undefined) {
      e = { logger: this.root.child({ logger: name }), lastModified: null }
      this.named.set(name, e)
    }
    return e.logger
  }

  /** Every logger with its level (GET /admin/loggers). */
  all(): Record<string, { level: Log4jLevel; last_modified?: number }> {
    const out: Record<string, { level: Log4jLevel; last_modified?: number }> = { root: this.entry(this.root, this.rootModified) }
    for (const [name, e] of [...this.named].sort(([a], [b]) => a.localeCompare(b))) out[name] = this.entry(e.logger, e.lastModified)
    return out
  }

  private entry(l: Logger, lastModified: number | null): { level: Log4jLevel; last_modified?: number } {
    const level = FROM_PINO[l.level] ?? 'INFO'
    return lastModified === null ? { level } : { level, last_modified: lastModified }
  }

  level(name: string): { level: Log4jLevel; last_modified: number | null } | null {
    if (name === 'root') return { level: FROM_PINO[this.root.level] ?? 'INFO', last_modified: this.rootModified }
    const e = this.named.get(name)
    if (e === undefined) return null
    return { level: FROM_PINO[e.logger.level] ?? 'INFO', last_modified: e.lastModified }
  }

  /** Sets the level of a namespace; returns the names of the loggers changed. */
  setLevel(namespace: string, level: string): string[] {
    const l = level.toUpperCase() as Log4jLevel
    if (!LOG4J_LEVELS.includes(l)) throw new Error(`Invalid log level '${level}'.`)
    const now = Date.now()
    const changed: string[] = []
    if (namespace === 'root') {
      this.root.level = TO_PINO[l]
      this.rootModified = now
      changed.push('root')
      for (const [name, e] of this.named) {
        e.logger.level = TO_PINO[l]
        e.lastModified = now
        changed.push(name)
      }
      return changed
    }
    if (!this.named.has(namespace)) this.get(namespace)
    for (const [name, e] of this.named) {
      if (name === namespace || name.startsWith(`${namespace}.`)) {
        e.logger.level = TO_PINO[l]
        e.lastModified = now
        changed.push(name)
      }
    }
    return changed.sort()
  }
}

export function isLog4jLevel(s: string): boolean {
  return (LOG4J_LEVELS as readonly string[]).includes(s.toUpperCase())
}
