// The record error handler (Kafka's RetryWithToleranceOperator): RetriableException retried with backoff
// within errors.retry.timeout (0: no retry, -1: no end), other errors not retried; what remains is
// reported, then skipped (errors.tolerance=all) or fails the task (none) with ToleranceExceededError.
import { describe, expect, test } from 'vitest'
import { RetriableException } from '../../src/connect/index.js'
import { type ErrorContext, ErrorHandler, errorHandlingConfig, ToleranceExceededError } from '../../src/connect/runtime/errors.js'
import { createLogger } from '../../src/observability/logger.js'

const log = createLogger({ level: 'silent' })

function handler(props: Record<string, string>): { h: ErrorHandler; reported: ErrorContext[] } {
  const reported: ErrorContext[] = []
  const h = new ErrorHandler(errorHandlingConfig(props), [{ report: async (ctx) => void reported.push(ctx) }], log)
  return { h, reported }
}

/** An operation that throws `failures` times (RetriableException or not), then answers 'done'. */
function flaky(failures: number, retriable: boolean): { op: () => string; calls: () => number } {
  let calls = 0
  return {
    op: () => {
      calls++
      if (calls <= failures) throw retriable ? new RetriableException(`try ${calls}`) : new Error(`broken ${calls}`)
      return 'done'
    },
    calls: () => calls,
  }
}

describe('ErrorHandler', () => {
  test('RetriableException is retried within errors.retry.timeout, and the operation then succeeds', async () => {
    const { h, reported } = handler({ 'errors.retry.timeout': '10000', 'errors.retry.delay.max.ms': '20' })
    const f = flaky(3, true)
    expect(await h.execute('TRANSFORMATION', 'Flaky', f.op)).toEqual({ ok: true, value: 'done' })
    expect(f.calls()).toBe(4)
    expect(reported).toEqual([])
  })

  test('errors.retry.timeout=0 (the default) does not retry; a non-retriable error is never retried', async () => {
    const none = handler({ 'errors.tolerance': 'all' })
    const f = flaky(1, true)
    expect(await none.h.execute('VALUE_CONVERTER', 'JsonConverter', f.op)).toEqual({ ok: false })
    expect(f.calls()).toBe(1)
    const long = handler({ 'errors.tolerance': 'all', 'errors.retry.timeout': '-1' })
    const g = flaky(5, false)
    expect(await long.h.execute('TASK_PUT', 'Sink', g.op)).toEqual({ ok: false })
    expect(g.calls()).toBe(1)
    expect(long.reported.map((r) => [r.stage, r.executingClass, r.error.message])).toEqual([['TASK_PUT', 'Sink', 'broken 1']])
  })

  test('retries stop at errors.retry.timeout; with errors.tolerance=none the failure is reported, then ToleranceExceededError', async () => {
    const { h, reported } = handler({ 'errors.retry.timeout': '300', 'errors.retry.delay.max.ms': '50' })
    const f = flaky(1000, true)
    const started = Date.now()
    await expect(h.execute('KEY_CONVERTER', 'AvroConverter', f.op)).rejects.toBeInstanceOf(ToleranceExceededError)
    const took = Date.now() - started
    expect(took).toBeGreaterThanOrEqual(290)
    expect(took).toBeLessThan(5000)
    expect(f.calls()).toBeGreaterThan(2)
    expect(reported.map((r) => r.stage)).toEqual(['KEY_CONVERTER'])
  })
})
