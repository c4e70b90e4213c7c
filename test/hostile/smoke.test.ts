// The hostile-neighbour smoke (in npm test): every API the broker serves at its top version with every field
// at its maximum, the named cases, every hostile batch and broken frames, while the good pair runs.
// The full run (every version, every extreme, arrays past request.max.list.elements) is npm run test:hostile.
import { describe, expect, it } from 'vitest'
import { report, runHostile } from './scenario.js'
import { HOSTILE_BOUNDS, withinBounds } from './bounds.js'

describe('hostile neighbour (smoke)', () => {
  it('a hostile client at every API leaves the broker up, its RSS bounded and the good pair whole and on time', async () => {
    const run = await runHostile('smoke', { baselineMs: 6_000, attackTimeoutMs: 40_000 })
    console.log(report(run))
    withinBounds(run, HOSTILE_BOUNDS, expect)
  }, 90_000)
})
