// The seed walkthrough of the design articles, as one user would type it: create a topic, list topics,
// produce lines, consume them from the beginning. Every step is a `skein` subprocess against a broker.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { skein } from './helpers.js'

let tb: TestBroker
beforeAll(async () => {
  tb = await startTestBroker(['auto.create.topics.enable=false'])
})
afterAll(async () => {
  await tb?.stop()
})

it('create topic -> list -> produce lines -> consume them from the beginning', async () => {
  const b = ['--bootstrap-server', tb.bootstrap]
  const created = await skein(['topics', ...b, '--create', '--topic', 'quickstart-events', '--partitions', '1', '--replication-factor', '1'])
  expect(created.stderr).toBe('')
  expect(created.code).toBe(0)
  expect(created.out).toBe('Created topic quickstart-events.\n')

  const listed = await skein(['topics', ...b, '--list'])
  expect(listed.code).toBe(0)
  expect(listed.out.split('\n')).toContain('quickstart-events')

  const lines = ['This is my first event', 'This is my second event', 'And a third, with unicode: é ✓']
  const produced = await skein(['produce', ...b, '--topic', 'quickstart-events'], { input: lines.join('\n') + '\n' })
  expect(produced.code).toBe(0)
  expect(produced.stderr).toBe('Produced 3 records to topic quickstart-events (partition 0: 3).\n')

  const consumed = await skein(['consume', ...b, '--topic', 'quickstart-events', '--from-beginning', '--max-messages', '3'])
  expect(consumed.code).toBe(0)
  expect(consumed.out).toBe(lines.join('\n') + '\n')
  expect(consumed.stderr).toBe('Processed a total of 3 messages\n')
})
