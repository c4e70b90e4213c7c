// The full hostile-neighbour run (npm run test:hostile): every API the broker serves at every version it serves,
// each with every field at its maximum, at its minimum, and with its first array one past
// request.max.list.elements; at the top version every array (nested ones too) at the limit; a lying array
// length per version; the named cases at two sizes; every hostile batch; broken frames.
import { describe, expect, it } from 'vitest'
import { HOSTILE_BOUNDS, withinBounds } from './bounds.js'
import { report, runHostile } from './scenario.js'

describe('hostile neighbour (full)', () => {
  it('every API at every version and extreme leaves the broker up, its RSS bounded and the good pair whole and on time', async () => {
    const run = await runHostile('full', { baselineMs: 15_000, attackTimeoutMs: 8 * 60_000 })
    console.log(report(run))
    withinBounds(run, HOSTILE_BOUNDS, expect)
  }, 10 * 60_000)
})
