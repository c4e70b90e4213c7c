// `skein share-groups` (kafka-share-groups) run as a subprocess against a real broker, with a share group
// made by Skein's ShareConsumer: --list (--state), --describe (offsets, --members, --state, --verbose) in
// kafka-share-groups' layout, --reset-offsets (needs --dry-run or --execute, refused while a member is in,
// then the next member gets the records again), --delete-offsets, --delete, and one-line errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Producer, ShareConsumer } from '../../src/client/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { oneLine, skein } from './helpers.js'

let tb: TestBroker
let b: string[]
let admin: Admin

async function pollCount(c: ShareConsumer, want: number, ms = 20_000): Promise<number> {
  let n = 0
  const deadline = Date.now() + ms
  while (n < want && Date.now() < deadline) n += (await c.poll(300)).length
  return n
}

beforeAll(async () => {
  tb = await startTestBroker()
  b = ['--bootstrap-server', tb.bootstrap]
  admin = new Admin({ bootstrapServers: tb.bootstrap })
  await admin.createTopics([{ name: 'jobs', numPartitions: 2, replicationFactor: 1 }])
  const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0 })
  for (let i = 0; i < 10; i++) await producer.send({ topic: 'jobs', partition: 0, value: `job-${i}` })
  await producer.close()
  await admin.alterConfigs({ type: 'group', name: 'workers' }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
})

afterAll(async () => {
  await admin?.close()
  await tb?.stop()
})

describe('skein share-groups', () => {
  it('lists, describes, resets and deletes a share group as kafka-share-groups does', async () => {
    const worker = new ShareConsumer({ bootstrapServers: tb.bootstrap, groupId: 'workers', clientId: 'worker-1' })
    try {
      worker.subscribe(['jobs'])
      expect(await pollCount(worker, 10)).toBe(10)
      await worker.commitSync()

      expect((await skein(['share-groups', ...b, '--list'])).out).toBe('workers\n')
      expect((await skein(['share-groups', ...b, '--list', '--state'])).out).toBe('GROUP           STATE\nworkers         Stable\n')
      expect((await skein(['share-groups', ...b, '--list', '--state', 'empty'])).out).toBe('GROUP           STATE\n')

      const offsets = await skein(['share-groups', ...b, '--describe', '--group', 'workers'])
      expect(offsets.code).toBe(0)
      expect(offsets.out).toBe(
        '\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG' +
          '\nworkers         jobs            0          10            0' +
          '\nworkers         jobs            1          0             0\n',
      )
      const verbose = await skein(['share-groups', ...b, '--describe', '--group', 'workers', '--offsets', '--verbose'])
      expect(verbose.out.split('\n')[1]).toBe('GROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG')
      expect(verbose.out.split('\n')[2]).toBe('workers         jobs            0          0             10            0')

      const members = await skein(['share-groups', ...b, '--describe', '--group', 'workers', '--members', '--verbose'])
      const [, header, row] = members.out.split('\n')
      expect(header).toMatch(/^GROUP {11}CONSUMER-ID +HOST +CLIENT-ID +#PARTITIONS  MEMBER-EPOCH  ASSIGNMENT$/)
      expect(row).toMatch(/^workers {9}\S{22} 127\.0\.0\.1 +worker-1 +2 +1 +jobs:0,1$/)

      const state = await skein(['share-groups', ...b, '--describe', '--group', 'workers', '--state'])
      expect(state.out).toBe(`\nGROUP           COORDINATOR (ID)          STATE           #MEMBERS\nworkers         ${`127.0.0.1:${tb.port}  (0)`.padEnd(25)} Stable          1\n`)

      // Kafka requires --dry-run or --execute; a group with a member is not reset.
      const neither = await skein(['share-groups', ...b, '--reset-offsets', '--group', 'workers', '--topic', 'jobs', '--to-earliest'])
      expect(neither.code).toBe(1)
      expect(oneLine(neither.stderr)).toBe('skein share-groups: Option [reset-offsets] takes the option: [execute] or [dry-run]')
      const busy = await skein(['share-groups', ...b, '--reset-offsets', '--group', 'workers', '--topic', 'jobs', '--to-earliest', '--execute'])
      expect(busy.code).toBe(1)
      expect(oneLine(busy.stderr)).toBe("skein share-groups: Share group 'workers' is not empty. (NON_EMPTY_GROUP)")
    } finally {
      await worker.close()
    }

    const dry = await skein(['share-groups', ...b, '--reset-offsets', '--group', 'workers', '--topic', 'jobs:0', '--to-offset', '4', '--dry-run'])
    expect(dry.out).toBe(`\n${'GROUP'.padEnd(30)} ${'TOPIC'.padEnd(30)} PARTITION  NEW-OFFSET     \n${'workers'.padEnd(30)} ${'jobs'.padEnd(30)} 0          4              \n`)
    expect((await skein(['share-groups', ...b, '--describe', '--group', 'workers'])).out).toContain('\nworkers         jobs            0          10            0')
    const reset = await skein(['share-groups', ...b, '--reset-offsets', '--group', 'workers', '--topic', 'jobs:0', '--to-offset', '4', '--execute'])
    expect(reset.code).toBe(0)
    const after = await skein(['share-groups', ...b, '--describe', '--group', 'workers'])
    expect(after.out).toContain('\nworkers         jobs            0          4             6')
    // The next member gets offsets 4-9 again.
    const again = new ShareConsumer({ bootstrapServers: tb.bootstrap, groupId: 'workers' })
    again.subscribe(['jobs'])
    expect(await pollCount(again, 6)).toBe(6)
    await again.close()

    const members = await skein(['share-groups', ...b, '--describe', '--group', 'workers', '--members'])
    expect(members.code).toBe(0)
    expect(members.stderr.trim()).toBe("Share group 'workers' has no active members.")

    const del = await skein(['share-groups', ...b, '--delete-offsets', '--group', 'workers', '--topic', 'jobs', '--topic', 'nope'])
    expect(del.code).toBe(1)
    expect(del.out).toBe('\nTOPIC           STATUS\njobs            Successful\nnope            Error: The topic does not exist. (UNKNOWN_TOPIC_OR_PARTITION)\n')
    expect((await skein(['share-groups', ...b, '--describe', '--group', 'workers'])).out).toBe("\nShare group 'workers' has no offset information.\n")

    const gone = await skein(['share-groups', ...b, '--delete', '--group', 'workers'])
    expect(gone.out).toBe("Deletion of requested share groups ('workers') was successful.\n")
    const missing = await skein(['share-groups', ...b, '--describe', '--group', 'workers'])
    expect(missing.code).toBe(1)
    expect(oneLine(missing.stderr)).toBe('skein share-groups: Group workers not found. (GROUP_ID_NOT_FOUND)')
    const notShare = await skein(['share-groups', ...b, '--delete', '--group', 'nobody'])
    expect(notShare.code).toBe(1)
    expect(notShare.out).toBe("\nError: Deletion of some share groups failed:\n* Group 'nobody' could not be deleted due to: Group 'nobody' is not a share group.\n")
  })

  it('has --help and refuses bad flags in one line', async () => {
    const help = await skein(['share-groups', '--help'])
    expect(help.code).toBe(0)
    expect(help.out).toContain('--reset-offsets')
    expect(help.out).toContain('(kafka-share-groups, KIP-932)')
    const none = await skein(['share-groups', ...b])
    expect(none.code).toBe(1)
    expect(oneLine(none.stderr)).toBe('skein share-groups: give exactly one of --list, --describe, --reset-offsets, --delete-offsets, --delete')
    const badState = await skein(['share-groups', ...b, '--list', '--state', 'rebalancing'])
    expect(oneLine(badState.stderr)).toBe("skein share-groups: Invalid state list 'rebalancing'. Valid states are: Empty, Stable, Dead")
    const top = await skein(['--help'])
    expect(top.out).toContain('share-groups')
  })
})
