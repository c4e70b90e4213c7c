// The pass conditions of the hostile-neighbour suite, stated once for the smoke and the full run (figures
// measured on a loaded 2-core machine are in docs/testing.md).
import type { HostileRun } from './scenario.js'

export interface HostileBounds {
  /** The broker's RSS may not pass this during the attack (MiB). */
  rssMiB: number
  /** The good pair's p99 under attack may be at most this many times its baseline p99 ... */
  latencyFactor: number
  /** ... or this many ms above it, whichever is larger (a 2 ms baseline times 10 is below timer noise). */
  latencySlackMs: number
}

export const HOSTILE_BOUNDS: HostileBounds = { rssMiB: 1536, latencyFactor: 10, latencySlackMs: 500 }

/** Asserts every condition of the suite on a run (vitest's expect passed in, so this file stays importable from dist). */
export function withinBounds(run: HostileRun, b: HostileBounds, expect: (v: unknown, msg?: string) => { toBe(x: unknown): void; toEqual(x: unknown): void; toBeLessThanOrEqual(x: number): void }): void {
  expect(run.brokerAlive, 'the broker process exited under attack').toBe(true)
  expect(run.summary !== undefined, `the attacker did not finish (exit ${run.attackerExit}): ${run.attackerOutput}`).toBe(true)
  expect(run.faults, 'the good pair saw faults').toEqual([])
  expect(run.consumed, 'the consumer did not read every produced record').toBe(run.produced)
  expect(run.summary?.http !== undefined, 'the HTTP half of the attack did not report').toBe(true)
  expect(run.summary?.http?.failures, 'HTTP requests that got a 500 or no answer').toEqual([])
  expect(run.httpAliveAfter, 'the REST Proxy or the registry stopped answering').toBe(true)
  expect(run.rssPeakMiB, 'broker RSS bound').toBeLessThanOrEqual(b.rssMiB)
  const allowed = (base: number): number => Math.max(base * b.latencyFactor, base + b.latencySlackMs)
  expect(run.attack.produceP99, 'produce p99 under attack').toBeLessThanOrEqual(allowed(run.baseline.produceP99))
  expect(run.attack.endToEndP99, 'end-to-end p99 under attack').toBeLessThanOrEqual(allowed(run.baseline.endToEndP99))
}
