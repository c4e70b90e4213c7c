// Structured logging (pino): one line per notable event. Request-level detail is debug only, so the
// default level stays quiet under load.
//
// Two formats, chosen by SKEIN_LOG_FORMAT=json|pretty, else by whether stdout is a terminal:
// - json (not a terminal: files, pipes, log collectors): pino's JSON lines, written asynchronously;
// - pretty (a terminal): `HH:MM:SS.mmm LEVEL message key=value ...`, levels as words, an error's stack on
//   the lines below, colours unless NO_COLOR is set. A few lines of code over pino's JSON rather than
//   pino-pretty and its dependencies: a person reading a terminal needs no more.
import { writeSync } from 'node:fs'
import { isatty } from 'node:tty'
import { pino, type DestinationStream, type Logger } from 'pino'

export type { Logger }

export type LogFormat = 'json' | 'pretty'

export interface LoggerOptions {
  level?: string
  /** Write to this file descriptor instead of stdout (tests pass 2 or a file). */
  destination?: number
  /** Default: SKEIN_LOG_FORMAT, else pretty on a terminal and json otherwise. */
  format?: LogFormat
}

/** The format SKEIN_LOG_FORMAT asks for, else pretty when fd is a terminal. */
export function logFormat(fd = 1, env: NodeJS.ProcessEnv = process.env): LogFormat {
  const asked = env.SKEIN_LOG_FORMAT?.trim().toLowerCase()
  if (asked === 'json' || asked === 'pretty') return asked
  if (asked !== undefined && asked !== '') throw new Error(`SKEIN_LOG_FORMAT must be json or pretty, not '${env.SKEIN_LOG_FORMAT}'`)
  return isatty(fd) ? 'pretty' : 'json'
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? process.env.SKEIN_LOG_LEVEL ?? 'info'
  const fd = opts.destination ?? 1
  const format = opts.format ?? logFormat(fd)
  const options = { level, base: { service: 'skein' }, timestamp: pino.stdTimeFunctions.isoTime }
  if (format === 'json') return pino(options, pino.destination({ dest: fd, sync: false }))
  return pino(options, prettyStream(fd, isatty(fd) && process.env.NO_COLOR === undefined))
}

/** A logger that drops everything (library users who do not want output). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' })
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' }
const LEVEL_COLOURS: Record<number, string> = { 10: '90', 20: '90', 30: '32', 40: '33', 50: '31', 60: '35' }
/** Fields every line has, shown in their own places or not at all. */
const FRAME_FIELDS = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname'])

/**
 * pino writes each line as JSON into this stream, which turns it into text. Writes are synchronous: a
 * terminal reads a few lines per event, and nothing is lost when the process exits right after.
 */
function prettyStream(fd: number, colour: boolean): DestinationStream {
  return {
    write(line: string): void {
      writeSync(fd, formatPretty(line, colour))
    },
  }
}

/** One JSON log line as `HH:MM:SS.mmm LEVEL message key=value ...` (local time), a stack below if any. */
export function formatPretty(jsonLine: string, colour = false): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(jsonLine) as Record<string, unknown>
  } catch {
    return jsonLine
  }
  const paint = (code: string, text: string): string => (colour ? `\u001b[${code}m${text}\u001b[0m` : text)
  const levelNumber = typeof entry.level === 'number' ? entry.level : 30
  const levelName = (LEVEL_NAMES[levelNumber] ?? String(entry.level)).padEnd(5)
  const time = typeof entry.time === 'string' || typeof entry.time === 'number' ? new Date(entry.time) : new Date()
  const clock = `${pad2(time.getHours())}:${pad2(time.getMinutes())}:${pad2(time.getSeconds())}.${String(time.getMilliseconds()).padStart(3, '0')}`
  let out = `${clock} ${paint(LEVEL_COLOURS[levelNumber] ?? '0', levelName)} ${typeof entry.msg === 'string' ? entry.msg : ''}`
  const fields: string[] = []
  const stacks: string[] = []
  for (const [key, value] of Object.entries(entry)) {
    if (FRAME_FIELDS.has(key)) continue
    if (isSerializedError(value)) {
      fields.push(`${key}=${fieldValue(value.message)}`)
      if (typeof value.stack === 'string') stacks.push(value.stack)
      continue
    }
    fields.push(`${key}=${fieldValue(value)}`)
  }
  if (fields.length > 0) out += `  ${paint('2', fields.join(' '))}`
  for (const stack of stacks) out += '\n' + stack.split('\n').map((l) => `    ${l.trim()}`).join('\n')
  return out + '\n'
}

function pad2(n: number): string {
  return String(n).padStart(2, '0')
}

function isSerializedError(v: unknown): v is { message: string; stack?: string } {
  return typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string' && ('stack' in v || 'type' in v)
}

/** Plain words as they are; text with spaces, quotes or '=' quoted; objects and lists as JSON. */
function fieldValue(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"'=]+$/.test(v) ? v : JSON.stringify(v)
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v)
  return JSON.stringify(v)
}
