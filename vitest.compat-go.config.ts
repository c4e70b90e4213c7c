import { defineConfig } from 'vitest/config'

// The Go clients' compatibility suite (npm run test:compat-go): sarama, kafka-go and confluent-kafka-go
// (Debian's packages, built with Debian's Go) and Burrow against three brokers and a ZooKeeper. Its
// smoke (test/compat/go/go-smoke.test.ts) is in npm test; this file pattern (*.compat.ts) is not.
export default defineConfig({
  test: {
    include: ['test/compat/go/**/*.compat.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 10 * 60_000,
    hookTimeout: 180_000,
    reporters: ['default'],
  },
})
