// The long client quota measurements (`npm run test:quotas`): test/quota/*.long.ts, outside `npm test`.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/quota/*.long.ts'],
    pool: 'forks',
    testTimeout: 180_000,
    hookTimeout: 60_000,
  },
})
