// Prints one plain closing line, `vitest: N passed, N failed, N skipped`, after vitest's own summary,
// so that tools reading the last lines of `npm test` (CI) see how many tests ran.
import type { Reporter, TestModule } from 'vitest/node'

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failed++
        else skipped++
      }
      if (mod.state() === 'failed' && [...mod.children.allTests()].length === 0) failed++
    }
    failed += unhandledErrors.length
    process.stdout.write(`\nvitest: ${passed} passed, ${failed} failed, ${skipped} skipped\n`)
  }
}
