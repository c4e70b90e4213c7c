// StallWatch: a main thread held past the threshold is logged once, with how long it was held; ordinary
// turns are not.
import { describe, expect, it } from 'vitest'
import { StallWatch } from '../../src/observability/stall-watch.js'
import type { Logger } from '../../src/observability/logger.js'

function capturingLogger(): { log: Logger; warnings: { fields: Record<string, unknown>; msg: string }[] } {
  const warnings: { fields: Record<string, unknown>; msg: string }[] = []
  const log = { warn: (fields: Record<string, unknown>, msg: string) => void warnings.push({ fields, msg }) } as unknown as Logger
  return { log, warnings }
}

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

describe('StallWatch', () => {
  it('logs a stall of the main thread over its threshold, with its length, and nothing for a loop that turns', async () => {
    const { log, warnings } = capturingLogger()
    const watch = new StallWatch(log, 400)
    watch.start()
    try {
      await wait(350)
      expect(warnings).toEqual([])
      const until = performance.now() + 900
      while (performance.now() < until) {
        // holds the event loop, as a long synchronous step would
      }
      await wait(250)
      expect(watch.stalls).toBe(1)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]!.fields.stalledMs).toBeGreaterThanOrEqual(400)
      expect(warnings[0]!.fields.stalledMs).toBeLessThan(3000)
      expect(warnings[0]!.msg).toMatch(/the main thread was held for \d+ ms/)
    } finally {
      watch.stop()
    }
  })
})
