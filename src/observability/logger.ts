// Structured logging (pino): one JSON line per notable event. Request-level detail is debug only, so the
// default level stays quiet under load.
import { pino, type Logger } from 'pino'

export type { Logger }

export interface LoggerOptions {
  level?: string
  /** Write to this file descriptor instead of stdout (tests pass 2 or a file). */
  destination?: number
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? process.env.SKEIN_LOG_LEVEL ?? 'info'
  return pino(
    { level, base: { service: 'skein' }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ dest: opts.destination ?? 1, sync: false }),
  )
}

/** A logger that drops everything (library users who do not want output). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' })
}
