// Error handling of records (Kafka's RetryWithToleranceOperator and its reporters, KIP-298): an
// operation of a stage (converting, transforming, producing, putting) that throws is retried while it
// throws a RetriableException, with exponential backoff up to errors.retry.delay.max.ms, for at most
// errors.retry.timeout ms (-1: no end). A failure that remains is reported (the log with
// errors.log.enable, the dead letter queue topic of a sink with errors.deadletterqueue.topic.name) and
// then either fails the task (errors.tolerance=none) or skips the record (all).
//
// A dead-letter record is the original record as consumed (key, value and headers as bytes); with
// errors.deadletterqueue.context.headers.enable it gets Kafka's error context headers, all strings:
// __connect.errors.topic / .partition / .offset, .connector.name, .task.id, .stage, .class.name,
// .exception.class.name, .exception.message, .exception.stacktrace.
import type { ConsumedRecord, Producer } from '../../client/index.js'
import { RetriableException } from '../api/plugin.js'
import type { Logger } from '../../observability/logger.js'

export type Stage = 'KEY_CONVERTER' | 'VALUE_CONVERTER' | 'HEADER_CONVERTER' | 'TRANSFORMATION' | 'TASK_PUT' | 'TASK_POLL' | 'KAFKA_PRODUCE' | 'KAFKA_CONSUME'

export const DLQ_HEADER_PREFIX = '__connect.errors.'
export const DLQ_HEADERS = {
  topic: `${DLQ_HEADER_PREFIX}topic`,
  partition: `${DLQ_HEADER_PREFIX}partition`,
  offset: `${DLQ_HEADER_PREFIX}offset`,
  connectorName: `${DLQ_HEADER_PREFIX}connector.name`,
  taskId: `${DLQ_HEADER_PREFIX}task.id`,
  stage: `${DLQ_HEADER_PREFIX}stage`,
  className: `${DLQ_HEADER_PREFIX}class.name`,
  exceptionClassName: `${DLQ_HEADER_PREFIX}exception.class.name`,
  exceptionMessage: `${DLQ_HEADER_PREFIX}exception.message`,
  exceptionStacktrace: `${DLQ_HEADER_PREFIX}exception.stacktrace`,
} as const

export class ToleranceExceededError extends Error {
  constructor(readonly stage: Stage, cause: unknown) {
    super(`Tolerance exceeded in error handler: ${(cause as Error)?.message ?? String(cause)}`, { cause })
    this.name = 'ConnectException'
  }
}

export interface ErrorContext {
  stage: Stage
  /** The plugin class that failed (converter, transform, task). */
  executingClass: string
  error: Error
  consumerRecord?: ConsumedRecord
  /** A description of the Connect record, for the log. */
  record?: unknown
}

export interface ErrorReporter {
  report(ctx: ErrorContext): Promise<void>
}

export interface ErrorHandlingConfig {
  retryTimeoutMs: number
  retryDelayMaxMs: number
  tolerance: 'none' | 'all'
  logEnable: boolean
  logIncludeMessages: boolean
}

export function errorHandlingConfig(props: Record<string, string>): ErrorHandlingConfig {
  return {
    retryTimeoutMs: Number(props['errors.retry.timeout'] ?? 0),
    retryDelayMaxMs: Number(props['errors.retry.delay.max.ms'] ?? 60000),
    tolerance: (props['errors.tolerance'] ?? 'none').toLowerCase() === 'all' ? 'all' : 'none',
    logEnable: props['errors.log.enable'] === 'true',
    logIncludeMessages: props['errors.log.include.messages'] === 'true',
  }
}

const RETRY_BASE_MS = 300

export class ErrorHandler {
  /** Records skipped so far (metrics: total-records-skipped). */
  skipped = 0
  errors = 0

  constructor(readonly config: ErrorHandlingConfig, private readonly reporters: ErrorReporter[], private readonly log: Logger, private readonly stopped: () => boolean = () => false) {}

  get tolerateAll(): boolean {
    return this.config.tolerance === 'all'
  }

  /**
   * Runs op: its value, or undefined when it failed and the failure is tolerated (skip the record).
   * Throws ToleranceExceededError when it is not.
   */
  async execute<T>(stage: Stage, executingClass: string, op: () => T | Promise<T>, context: { consumerRecord?: ConsumedRecord; record?: unknown } = {}, firstError?: { error: unknown }): Promise<{ ok: true; value: T } | { ok: false }> {
    const started = Date.now()
    for (let attempt = 0; ; attempt++) {
      try {
        if (attempt === 0 && firstError !== undefined) throw firstError.error
        return { ok: true, value: await op() }
      } catch (err) {
        const retriable = err instanceof RetriableException
        const timeout = this.config.retryTimeoutMs
        const elapsed = Date.now() - started
        if (retriable && (timeout === -1 || elapsed < timeout) && !this.stopped()) {
          let delay = Math.min(RETRY_BASE_MS * 2 ** attempt, this.config.retryDelayMaxMs)
          if (timeout !== -1) delay = Math.min(delay, Math.max(0, timeout - elapsed))
          await new Promise((r) => setTimeout(r, delay))
          continue
        }
        this.errors++
        const e = err instanceof Error ? err : new Error(String(err))
        await this.report({ stage, executingClass, error: e, ...context })
        if (!this.tolerateAll) throw new ToleranceExceededError(stage, e)
        this.skipped++
        return { ok: false }
      }
    }
  }

  /**
   * execute() without a promise when op succeeds synchronously (converters and transforms usually do):
   * the per-record path of a sink then takes no microtask per stage. A failure or a promise goes through
   * execute(), starting from that first failure (op is not run twice for it).
   */
  executeSync<T>(stage: Stage, executingClass: string, op: () => T | Promise<T>, context: { consumerRecord?: ConsumedRecord; record?: unknown } = {}): { ok: true; value: T } | Promise<{ ok: true; value: T } | { ok: false }> {
    let value: T | Promise<T>
    try {
      value = op()
    } catch (error) {
      return this.executeAfter(stage, executingClass, op, { error }, context)
    }
    if (value instanceof Promise) return this.executeAfter(stage, executingClass, op, { pending: value }, context)
    return { ok: true, value }
  }

  /**
   * execute() for an op already run once by the caller, which threw (error) or answered with a promise
   * (pending): a hot path calls its op directly, without a closure per call, and comes here only then.
   */
  executeAfter<T>(stage: Stage, executingClass: string, op: () => T | Promise<T>, first: { error: unknown } | { pending: Promise<T> }, context: { consumerRecord?: ConsumedRecord; record?: unknown } = {}): Promise<{ ok: true; value: T } | { ok: false }> {
    if ('error' in first) return this.execute(stage, executingClass, op, context, first)
    let firstCall = true
    return this.execute(stage, executingClass, () => {
      if (!firstCall) return op()
      firstCall = false
      return first.pending
    }, context)
  }

  async report(ctx: ErrorContext): Promise<void> {
    if (this.config.logEnable) {
      const detail: Record<string, unknown> = { stage: ctx.stage, class: ctx.executingClass, err: ctx.error.message }
      if (this.config.logIncludeMessages && ctx.consumerRecord !== undefined) Object.assign(detail, { topic: ctx.consumerRecord.topic, partition: ctx.consumerRecord.partition, offset: ctx.consumerRecord.offset })
      if (this.config.logIncludeMessages && ctx.record !== undefined) detail['record'] = String(ctx.record)
      this.log.error(detail, 'Error encountered in task')
    }
    for (const r of this.reporters) await r.report(ctx)
  }
}

/** Writes failed consumed records to the sink's dead letter queue topic. */
export class DeadLetterQueueReporter implements ErrorReporter {
  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    private readonly connector: string,
    private readonly taskId: number,
    private readonly contextHeaders: boolean,
  ) {}

  async report(ctx: ErrorContext): Promise<void> {
    const r = ctx.consumerRecord
    // Only records read from Kafka go to the DLQ (as in Kafka: source records have no original bytes).
    if (r === undefined) return
    const headers = r.headers.map((h) => ({ key: h.key, value: h.value }))
    if (this.contextHeaders) {
      const add = (key: string, value: string | null): void => {
        headers.push({ key, value: value === null ? null : Buffer.from(value, 'utf8') })
      }
      add(DLQ_HEADERS.topic, r.topic)
      add(DLQ_HEADERS.partition, String(r.partition))
      add(DLQ_HEADERS.offset, String(r.offset))
      add(DLQ_HEADERS.connectorName, this.connector)
      add(DLQ_HEADERS.taskId, String(this.taskId))
      add(DLQ_HEADERS.stage, ctx.stage)
      add(DLQ_HEADERS.className, ctx.executingClass)
      add(DLQ_HEADERS.exceptionClassName, javaLikeClassName(ctx.error))
      add(DLQ_HEADERS.exceptionMessage, ctx.error.message)
      add(DLQ_HEADERS.exceptionStacktrace, ctx.error.stack ?? `${ctx.error.name}: ${ctx.error.message}`)
    }
    await this.producer.send({ topic: this.topic, key: r.key, value: r.value, headers, timestamp: r.timestamp })
  }
}

/** The error's class as Kafka names its own (DataException lives in org.apache.kafka.connect.errors). */
function javaLikeClassName(e: Error): string {
  const connectErrors = new Set(['DataException', 'ConnectException', 'RetriableException', 'SchemaBuilderException', 'SchemaProjectorException'])
  if (connectErrors.has(e.name)) return `org.apache.kafka.connect.errors.${e.name}`
  if (e.name === 'ConfigException') return 'org.apache.kafka.common.config.ConfigException'
  return e.name || 'Error'
}
