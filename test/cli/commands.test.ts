// Every `skein` command run as a subprocess against a real broker: output in the layout of Kafka's tools,
// exit codes, and one-line errors for unknown topics, a broker that is down and bad flags.
import { spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startTestBroker, tempDataDir, type TestBroker } from '../harness/index.js'
import { oneLine, skein, SKEIN_JS } from './helpers.js'

let tb: TestBroker
let b: string[]
beforeAll(async () => {
  tb = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'num.partitions=2'])
  b = ['--bootstrap-server', tb.bootstrap]
})
afterAll(async () => {
  await tb?.stop()
})

describe('skein topics', () => {
  it('describes partitions, leader, replicas, ISR and the topic configs as kafka-topics does', async () => {
    const c = await skein(['topics', ...b, '--create', '--topic', 'described', '--partitions', '3', '--replication-factor', '1', '--config', 'retention.ms=3600000', '--config', 'cleanup.policy=compact'])
    expect(c.code).toBe(0)
    const d = await skein(['topics', ...b, '--describe', '--topic', 'described'])
    expect(d.code).toBe(0)
    const lines = d.out.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^Topic: described\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: (cleanup.policy=compact,retention.ms=3600000|retention.ms=3600000,cleanup.policy=compact)$/)
    expect(lines.slice(1)).toEqual([0, 1, 2].map((p) => `\tTopic: described\tPartition: ${p}\tLeader: 0\tReplicas: 0\tIsr: 0`))
  })

  it('alters the partition count, deletes, and honours --if-not-exists / --if-exists', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'grown', '--partitions', '1'])).code).toBe(0)
    const again = await skein(['topics', ...b, '--create', '--topic', 'grown', '--partitions', '1'])
    expect(again.code).toBe(1)
    expect(oneLine(again.stderr)).toMatch(/^skein topics: .*TOPIC_ALREADY_EXISTS/)
    expect((await skein(['topics', ...b, '--create', '--topic', 'grown', '--partitions', '1', '--if-not-exists'])).code).toBe(0)
    const alter = await skein(['topics', ...b, '--alter', '--topic', 'grown', '--partitions', '4'])
    expect(alter.code).toBe(0)
    expect((await skein(['topics', ...b, '--describe', '--topic', 'grown'])).out).toContain('PartitionCount: 4')
    const shrink = await skein(['topics', ...b, '--alter', '--topic', 'grown', '--partitions', '2'])
    expect(shrink.code).toBe(1)
    expect(oneLine(shrink.stderr)).toContain('INVALID_PARTITIONS')
    expect((await skein(['topics', ...b, '--delete', '--topic', 'grown'])).code).toBe(0)
    expect((await skein(['topics', ...b, '--list'])).out.split('\n')).not.toContain('grown')
    const gone = await skein(['topics', ...b, '--delete', '--topic', 'grown'])
    expect(gone.code).toBe(1)
    expect(oneLine(gone.stderr)).toContain('UNKNOWN_TOPIC_OR_PARTITION')
    expect((await skein(['topics', ...b, '--delete', '--topic', 'grown', '--if-exists'])).code).toBe(0)
  })

  it('lists with a --topic regular expression', async () => {
    for (const t of ['rx-a', 'rx-b', 'other-rx']) expect((await skein(['topics', ...b, '--create', '--topic', t, '--partitions', '1'])).code).toBe(0)
    const l = await skein(['topics', ...b, '--list', '--topic', 'rx-.*'])
    expect(l.out).toBe('rx-a\nrx-b\n')
  })

  it('an unknown topic is one clear line and exit 1', async () => {
    const d = await skein(['topics', ...b, '--describe', '--topic', 'no-such-topic'])
    expect(d.code).toBe(1)
    expect(d.out).toBe('')
    expect(oneLine(d.stderr)).toBe("skein topics: topic 'no-such-topic' does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
  })
})

describe('skein produce and consume', () => {
  it('parses keys and headers, prints them with the formatter properties', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'kv', '--partitions', '1'])).code).toBe(0)
    const input = 'h1:x,h2:y\tk1:v1\n\tk2:v2\nh3:z\tnullkey:NULL\n'
    const p = await skein(['produce', ...b, '--topic', 'kv', '--property', 'parse.key=true', '--property', 'key.separator=:', '--property', 'parse.headers=true', '--property', 'null.marker=NULL'], { input })
    expect(p.code).toBe(0)
    const c = await skein(['consume', ...b, '--topic', 'kv', '--from-beginning', '--max-messages', '3', '--property', 'print.key=true', '--property', 'print.offset=true', '--property', 'print.partition=true', '--property', 'print.headers=true', '--property', 'print.timestamp=true'])
    expect(c.code).toBe(0)
    const lines = c.out.trimEnd().split('\n').map((l) => l.replace(/^CreateTime:\d+\t/, 'TS\t'))
    expect(lines).toEqual(['TS\tPartition:0\tOffset:0\th1:x,h2:y\tk1\tv1', 'TS\tPartition:0\tOffset:1\tNO_HEADERS\tk2\tv2', 'TS\tPartition:0\tOffset:2\th3:z\tnullkey\tnull'])
  })

  it('writes to --partition with each codec and --acks, reads --partition --offset and JSON output', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'codecs', '--partitions', '3'])).code).toBe(0)
    const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd']
    for (const [i, codec] of codecs.entries()) {
      const p = await skein(['produce', ...b, '--topic', 'codecs', '--partition', '2', '--compression-type', codec, '--acks', i % 2 === 0 ? 'all' : '1'], { input: `${codec}-a\n${codec}-b\n` })
      expect(p.code, p.stderr).toBe(0)
      expect(p.stderr).toBe('Produced 2 records to topic codecs (partition 2: 2).\n')
    }
    const c = await skein(['consume', ...b, '--topic', 'codecs', '--partition', '2', '--offset', '4', '--max-messages', '3', '--formatter', 'json'])
    expect(c.code).toBe(0)
    const recs = c.out.trimEnd().split('\n').map((l) => JSON.parse(l) as { partition: number; offset: number; value: string; key: null; timestampType: string })
    expect(recs.map((r) => [r.partition, r.offset, r.value, r.key])).toEqual([
      [2, 4, 'snappy-a', null],
      [2, 5, 'snappy-b', null],
      [2, 6, 'lz4-a', null],
    ])
    expect(recs[0]!.timestampType).toBe('CreateTime')
  })

  it('--offset past the log end (or before its start) says where it starts instead of printing nothing', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'seeks', '--partitions', '1'])).code).toBe(0)
    expect((await skein(['produce', ...b, '--topic', 'seeks'], { input: 'r0\nr1\nr2\n' })).code).toBe(0)
    // Past the end: it says so, starts at the log end and prints what arrives there.
    const child = spawn(process.execPath, [SKEIN_JS, 'consume', ...b, '--topic', 'seeks', '--partition', '0', '--offset', '100', '--max-messages', '1'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      const deadline = Date.now() + 20000
      while (!err.includes('starting at')) {
        if (Date.now() > deadline) throw new Error(`the consumer said ${err}`)
        await new Promise((r) => setTimeout(r, 50))
      }
      expect(err).toBe('skein consume: offset 100 is past the end of partition seeks-0 (log end 3); starting at 3\n')
      expect((await skein(['produce', ...b, '--topic', 'seeks'], { input: 'r3\n' })).code).toBe(0)
      expect(await exited).toBe(0)
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
    expect(out).toBe('r3\n')
    expect(err).toBe('skein consume: offset 100 is past the end of partition seeks-0 (log end 3); starting at 3\nProcessed a total of 1 messages\n')

    // Before the log start (records deleted): it starts at the log start.
    const kafka = new Kafka({ brokers: [tb.bootstrap], logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    await admin.connect()
    try {
      await admin.fetchTopicOffsets('seeks') // kafkajs deletes records only of topics whose metadata it has
      await admin.deleteTopicRecords({ topic: 'seeks', partitions: [{ partition: 0, offset: '2' }] })
    } finally {
      await admin.disconnect()
    }
    const early = await skein(['consume', ...b, '--topic', 'seeks', '--partition', '0', '--offset', '0', '--max-messages', '2'])
    expect(early.code).toBe(0)
    expect(early.out).toBe('r2\nr3\n')
    expect(early.stderr).toBe('skein consume: offset 0 is before the start of partition seeks-0 (log start 2); starting at 2\nProcessed a total of 2 messages\n')
    // Inside the log: nothing is said.
    const inside = await skein(['consume', ...b, '--topic', 'seeks', '--partition', '0', '--offset', '3', '--max-messages', '1'])
    expect([inside.out, inside.stderr]).toEqual(['r3\n', 'Processed a total of 1 messages\n'])
  })

  it('reads --file, and keyed records land on the murmur2 partition', async () => {
    const dir = tempDataDir('cli-file')
    const file = join(dir, 'lines.txt')
    const { writeFileSync } = await import('node:fs')
    writeFileSync(file, Array.from({ length: 20 }, (_, i) => `key-${i}=value-${i}`).join('\n') + '\n')
    expect((await skein(['topics', ...b, '--create', '--topic', 'fromfile', '--partitions', '4'])).code).toBe(0)
    const p = await skein(['produce', ...b, '--topic', 'fromfile', '--file', file, '--property', 'parse.key=true', '--property', 'key.separator=='])
    rmSync(dir, { recursive: true, force: true })
    expect(p.code).toBe(0)
    expect(p.stderr).toMatch(/^Produced 20 records to topic fromfile \(/)
    const c = await skein(['consume', ...b, '--topic', 'fromfile', '--from-beginning', '--max-messages', '20', '--property', 'print.key=true', '--property', 'print.partition=true'])
    const { partitionForKey } = await import('../../src/client/murmur2.js')
    const rows = c.out.trimEnd().split('\n').map((l) => l.split('\t'))
    expect(rows).toHaveLength(20)
    for (const [part, key, value] of rows) {
      expect(part).toBe(`Partition:${partitionForKey(Buffer.from(key!), 4)}`)
      expect(value).toBe(key!.replace('key', 'value'))
    }
  })

  it('--timeout-ms ends an idle consumer; a malformed line stops the producer with exit 1', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'idle', '--partitions', '1'])).code).toBe(0)
    // Without --timeout-ms it would wait for records until killed: the run is killed (and fails the test)
    // after 30 s. (A 10 s bound on its wall time failed at load average 25.)
    const c = await skein(['consume', ...b, '--topic', 'idle', '--timeout-ms', '800'], { timeoutMs: 30_000 })
    expect(c.code).toBe(0)
    expect(c.stderr).toBe('Processed a total of 0 messages\n')
    const p = await skein(['produce', ...b, '--topic', 'idle', '--property', 'parse.key=true'], { input: 'no separator here\n' })
    expect(p.code).toBe(1)
    expect(p.stderr).toContain("skein produce: no key separator found on line 1: 'no separator here'")
  })

  it('a group consumer commits what it printed; Ctrl-C exits cleanly with offsets committed', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'grouped', '--partitions', '2'])).code).toBe(0)
    expect((await skein(['produce', ...b, '--topic', 'grouped', '--property', 'parse.key=true', '--property', 'key.separator=:'], { input: Array.from({ length: 10 }, (_, i) => `k${i}:v${i}`).join('\n') + '\n' })).code).toBe(0)
    const first = await skein(['consume', ...b, '--topic', 'grouped', '--group', 'readers', '--from-beginning', '--max-messages', '10'])
    expect(first.code).toBe(0)
    expect(first.out.trimEnd().split('\n').sort()).toEqual(Array.from({ length: 10 }, (_, i) => `v${i}`).sort())

    const desc = await skein(['groups', ...b, '--describe', '--group', 'readers'])
    expect(desc.code).toBe(0)
    expect(desc.stderr).toBe("\nConsumer group 'readers' has no active members.\n")
    const table = desc.out.trim().split('\n').slice(-3)
    expect(table[0]!.split(/\s+/)).toEqual(['GROUP', 'TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'CONSUMER-ID', 'HOST', 'CLIENT-ID'])
    const rows = table.slice(1).map((l) => l.split(/\s+/))
    expect(rows.map((r) => r[0])).toEqual(['readers', 'readers'])
    for (const r of rows) {
      expect(r[3]).toBe(r[4])
      expect(r[5]).toBe('0')
    }
    expect(rows.reduce((n, r) => n + Number(r[4]), 0)).toBe(10)

    // A live consumer shows up in --describe; SIGINT makes it commit, leave and exit 0.
    await skein(['produce', ...b, '--topic', 'grouped'], { input: 'live-1\nlive-2\n' })
    const child = spawn(process.execPath, [SKEIN_JS, 'consume', ...b, '--topic', 'grouped', '--group', 'readers'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    const deadline = Date.now() + 20000
    while (!out.includes('live-2') || !out.includes('live-1')) {
      if (Date.now() > deadline) throw new Error(`the consumer printed ${out} / ${err}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const live = await skein(['groups', ...b, '--describe', '--group', 'readers'])
    expect(live.stderr).toBe('')
    expect(live.out).toMatch(/readers\s+grouped\s+0\s+\d+\s+\d+\s+\d+\s+\S+\s+\S+\s+skein-console-consumer/)
    // Resetting a group with a live member is refused.
    const busy = await skein(['groups', ...b, '--reset-offsets', '--group', 'readers', '--topic', 'grouped', '--to-earliest', '--execute'])
    expect(busy.code).toBe(1)
    expect(oneLine(busy.stderr)).toContain('NON_EMPTY_GROUP')
    child.kill('SIGINT')
    expect(await exited).toBe(0)
    expect(err).toBe('Processed a total of 2 messages\n')
    const after = await skein(['groups', ...b, '--describe', '--group', 'readers'])
    expect(after.stderr).toContain('no active members')
    const lags = after.out.trim().split('\n').slice(-2).map((l) => l.split(/\s+/)[5])
    expect(lags).toEqual(['0', '0'])
  })
})

describe('skein groups', () => {
  it('a running member commits its positions every auto.commit.interval.ms, so --describe shows its lag', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'lagging', '--partitions', '2'])).code).toBe(0)
    expect((await skein(['produce', ...b, '--topic', 'lagging'], { input: 'old-1\nold-2\n' })).code).toBe(0)
    // A new group starts at the log end and prints nothing: its positions are committed all the same.
    const child = spawn(process.execPath, [SKEIN_JS, 'consume', ...b, '--topic', 'lagging', '--group', 'watchers', '--consumer-property', 'auto.commit.interval.ms=300'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    const rows = async (): Promise<string[][]> => {
      const d = await skein(['groups', ...b, '--describe', '--group', 'watchers'])
      return d.out.split('\n').filter((l) => l.startsWith('watchers ')).map((l) => l.split(/\s+/))
    }
    const until = async (what: string, ok: (r: string[][]) => boolean): Promise<string[][]> => {
      const deadline = Date.now() + 20000
      for (;;) {
        const r = await rows()
        if (ok(r)) return r
        if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(r)}`)
        await new Promise((res) => setTimeout(res, 200))
      }
    }
    try {
      const caughtUp = await until('committed positions of the running member', (r) => r.length === 2 && r.every((c) => c[3] !== '-' && c[6] !== '-'))
      expect(caughtUp.map((c) => c.slice(3, 6))).toEqual(caughtUp.map((c) => [c[4], c[4], '0']))
      expect(caughtUp.reduce((n, c) => n + Number(c[4]), 0)).toBe(2)
      // The member stops reading (SIGSTOP: still in the group) while records arrive: its lag shows.
      child.kill('SIGSTOP')
      expect((await skein(['produce', ...b, '--topic', 'lagging'], { input: 'n1\nn2\nn3\nn4\nn5\n' })).code).toBe(0)
      const lagging = await rows()
      expect(lagging.reduce((n, c) => n + Number(c[5]), 0)).toBe(5)
      expect(lagging.every((c) => c[6]!.startsWith('skein-console-consumer-'))).toBe(true)
      child.kill('SIGCONT')
      await until('lag back to 0 after the member read on', (r) => r.length === 2 && r.every((c) => c[5] === '0'))
      expect(out.split('\n').filter((l) => l !== '').sort()).toEqual(['n1', 'n2', 'n3', 'n4', 'n5'])
    } finally {
      child.kill('SIGCONT')
      child.kill('SIGINT')
    }
    expect(await exited).toBe(0)
  })

  it('--describe --members/--state/--offsets [--verbose] and --list --state print kafka-consumer-groups\' layout', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'layout', '--partitions', '3'])).code).toBe(0)
    expect((await skein(['produce', ...b, '--topic', 'layout', '--partition', '1'], { input: 'x\ny\n' })).code).toBe(0)
    const child = spawn(process.execPath, [SKEIN_JS, 'consume', ...b, '--topic', 'layout', '--group', 'layout-readers', '--from-beginning', '--consumer-property', 'auto.commit.interval.ms=200'], { stdio: ['ignore', 'pipe', 'pipe'] })
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    try {
      let offsets = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--offsets', '--verbose'])
      for (const deadline = Date.now() + 20000; !/layout\s+1\s+-\s+2\s+2\s+0/.test(offsets.out); ) {
        if (Date.now() > deadline) throw new Error(offsets.out)
        await new Promise((res) => setTimeout(res, 200))
        offsets = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--offsets', '--verbose'])
      }
      const member = /skein-console-consumer-[0-9a-f-]+/.exec(offsets.out)![0]
      const C = Math.max(15, member.length)
      // Kafka's format strings: "%-15s %-15s %-10s %-15s %-15s %-15s %-15s %-Cs %-15s %s", each line led by "\n".
      const offsetLine = (g: string, t: string, p: string, e: string, o: string, end: string, lag: string, c: string, h: string, cl: string): string =>
        `\n${g.padEnd(15)} ${t.padEnd(15)} ${p.padEnd(10)} ${e.padEnd(15)} ${o.padEnd(15)} ${end.padEnd(15)} ${lag.padEnd(15)} ${c.padEnd(C)} ${h.padEnd(15)} ${cl}`
      expect(offsets.out).toBe(
        offsetLine('GROUP', 'TOPIC', 'PARTITION', 'LEADER-EPOCH', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'CONSUMER-ID', 'HOST', 'CLIENT-ID') +
          offsetLine('layout-readers', 'layout', '0', '-', '0', '0', '0', member, '/127.0.0.1', 'skein-console-consumer') +
          offsetLine('layout-readers', 'layout', '1', '-', '2', '2', '0', member, '/127.0.0.1', 'skein-console-consumer') +
          offsetLine('layout-readers', 'layout', '2', '-', '0', '0', '0', member, '/127.0.0.1', 'skein-console-consumer') +
          '\n',
      )
      expect(offsets.stderr).toBe('')

      const L = 'skein-console-consumer'.length
      const memberHead = (g: string, c: string, h: string, cl: string, n: string): string => `${g.padEnd(15)} ${c.padEnd(C)} ${h.padEnd(15)} ${cl.padEnd(L)} ${n.padEnd(15)} `
      const members = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--members'])
      expect(members.out).toBe(`\n${memberHead('GROUP', 'CONSUMER-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS')}\n${memberHead('layout-readers', member, '/127.0.0.1', 'skein-console-consumer', '3')}\n`)
      const verbose = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--members', '--verbose'])
      const memberTail = (e: string, a: string, te: string, ta: string): string => `${e.padEnd(15)} ${a.padEnd(20)} ${te.padEnd(15)} ${ta.padEnd(20)}`
      expect(verbose.out).toBe(
        `\n${memberHead('GROUP', 'CONSUMER-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS')}${memberTail('CURRENT-EPOCH', 'CURRENT-ASSIGNMENT', 'TARGET-EPOCH', 'TARGET-ASSIGNMENT')}\n` +
          `${memberHead('layout-readers', member, '/127.0.0.1', 'skein-console-consumer', '3')}${memberTail('-', 'layout:0,1,2', '-', '-')}\n`,
      )

      const coordinator = `127.0.0.1:${tb.port}  (0)`
      const CO = Math.max(25, coordinator.length)
      const state = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--state'])
      const stateLine = (g: string, c: string, a: string, st: string, n: string): string => `\n${g.padEnd(15)} ${c.padEnd(CO)} ${a.padEnd(20)} ${st.padEnd(20)} ${n}`
      expect(state.out).toBe(stateLine('GROUP', 'COORDINATOR (ID)', 'ASSIGNMENT-STRATEGY', 'STATE', '#MEMBERS') + stateLine('layout-readers', coordinator, 'range', 'Stable', '1') + '\n')
      const stateVerbose = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--state', '--verbose'])
      expect(stateVerbose.out).toContain(`${'STATE'.padEnd(20)} ${'GROUP-EPOCH'.padEnd(15)} ${'TARGET-ASSIGNMENT-EPOCH'.padEnd(25)} #MEMBERS`)
      expect(stateVerbose.out).toContain(`${'Stable'.padEnd(20)} ${'-'.padEnd(15)} ${'-'.padEnd(25)} 1`)

      const listed = await skein(['groups', ...b, '--list', '--state', 'stable'])
      expect(listed.out.split('\n')[0]).toBe(`${'GROUP'.padEnd(25)} ${'STATE'.padEnd(20)}`)
      expect(listed.out.split('\n')).toContain(`${'layout-readers'.padEnd(25)} ${'Stable'.padEnd(20)}`)
      expect(listed.out).not.toMatch(/Empty/)
      const bad = await skein(['groups', ...b, '--list', '--state', 'sleepy'])
      expect(oneLine(bad.stderr)).toBe("skein groups: Invalid state list 'sleepy'. Valid states are: Stable, Empty, PreparingRebalance, CompletingRebalance, Assigning, Reconciling, Dead")
      const two = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--members', '--state'])
      expect(oneLine(two.stderr)).toBe('skein groups: --describe takes at most one of --offsets, --members, --state')
    } finally {
      child.kill('SIGINT')
    }
    expect(await exited).toBe(0)
    // An empty group: the state goes to stderr as kafka-consumer-groups does; the members table is empty.
    const empty = await skein(['groups', ...b, '--describe', '--group', 'layout-readers', '--members'])
    expect(empty.stderr).toBe("\nConsumer group 'layout-readers' has no active members.\n")
    expect(empty.out).toBe(`\n${'GROUP'.padEnd(15)} ${'CONSUMER-ID'.padEnd(15)} ${'HOST'.padEnd(15)} ${'CLIENT-ID'.padEnd(15)} ${'#PARTITIONS'.padEnd(15)} \n`)
  })

  it('lists, resets offsets (dry run, execute, shift, datetime) and deletes', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'resets', '--partitions', '1'])).code).toBe(0)
    expect((await skein(['produce', ...b, '--topic', 'resets'], { input: 'a\nb\nc\nd\n' })).code).toBe(0)
    expect((await skein(['consume', ...b, '--topic', 'resets', '--group', 'resetter', '--from-beginning', '--max-messages', '4'])).code).toBe(0)
    expect((await skein(['groups', ...b, '--list'])).out.split('\n')).toContain('resetter')

    const dry = await skein(['groups', ...b, '--reset-offsets', '--group', 'resetter', '--topic', 'resets', '--to-earliest', '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.out.trim().split('\n').map((l) => l.split(/\s+/))).toEqual([['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'], ['resetter', 'resets', '0', '0']])
    const committedAfterDry = await skein(['groups', ...b, '--describe', '--group', 'resetter'])
    expect(committedAfterDry.out).toMatch(/resetter\s+resets\s+0\s+4\s+4\s+0/)

    const shifted = await skein(['groups', ...b, '--reset-offsets', '--group', 'resetter', '--topic', 'resets', '--shift-by', '-3', '--execute'])
    expect(shifted.code).toBe(0)
    expect((await skein(['groups', ...b, '--describe', '--group', 'resetter'])).out).toMatch(/resetter\s+resets\s+0\s+1\s+4\s+3/)
    const again = await skein(['consume', ...b, '--topic', 'resets', '--group', 'resetter', '--max-messages', '3'])
    expect(again.out).toBe('b\nc\nd\n')

    const past = await skein(['groups', ...b, '--reset-offsets', '--group', 'resetter', '--topic', 'resets:0', '--to-datetime', '2000-01-01T00:00:00.000', '--execute'])
    expect(past.code).toBe(0)
    expect(past.out).toMatch(/resetter\s+resets\s+0\s+0/)
    const future = await skein(['groups', ...b, '--reset-offsets', '--group', 'resetter', '--all-topics', '--to-offset', '99', '--execute'])
    expect(future.out).toMatch(/resetter\s+resets\s+0\s+4/)

    const del = await skein(['groups', ...b, '--delete', '--group', 'resetter'])
    expect(del.code).toBe(0)
    expect(del.out).toBe("Deletion of requested consumer groups ('resetter') was successful.\n")
    const gone = await skein(['groups', ...b, '--describe', '--group', 'resetter'])
    expect(gone.code).toBe(1)
    expect(oneLine(gone.stderr)).toContain('GROUP_ID_NOT_FOUND')
  })
})

describe('skein configs', () => {
  it('describes, adds and deletes topic configs; describes broker configs', async () => {
    expect((await skein(['topics', ...b, '--create', '--topic', 'configured', '--partitions', '1'])).code).toBe(0)
    const add = await skein(['configs', ...b, '--entity-type', 'topics', '--entity-name', 'configured', '--alter', '--add-config', 'retention.ms=1234567,cleanup.policy=[compact,delete]'])
    expect(add.code).toBe(0)
    expect(add.out).toBe('Completed updating config for topic configured.\n')
    const d = await skein(['configs', ...b, '--entity-type', 'topics', '--entity-name', 'configured', '--describe'])
    expect(d.out).toBe(
      'Dynamic configs for topic configured are:\n' +
        '  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n' +
        '  retention.ms=1234567 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1234567}\n',
    )
    expect((await skein(['configs', ...b, '--entity-type', 'topics', '--entity-name', 'configured', '--alter', '--delete-config', 'cleanup.policy'])).code).toBe(0)
    const d2 = await skein(['configs', ...b, '--entity-type', 'topics', '--entity-name', 'configured', '--describe', '--all'])
    expect(d2.out).toContain('All configs for topic configured are:')
    expect(d2.out).toMatch(/\n {2}cleanup\.policy=delete sensitive=false synonyms=\{[^}]*\}\n/)
    const bad = await skein(['configs', ...b, '--entity-type', 'topics', '--entity-name', 'configured', '--alter', '--add-config', 'no.such.config=1'])
    expect(bad.code).toBe(1)
    expect(oneLine(bad.stderr)).toContain('INVALID_CONFIG')
    const broker = await skein(['configs', ...b, '--entity-type', 'brokers', '--entity-name', '0', '--describe', '--all'])
    expect(broker.code).toBe(0)
    expect(broker.out).toMatch(/^All configs for broker 0 are:\n/)
    expect(broker.out).toContain('  num.partitions=2 ')
  })
})

describe('skein perf and bench', () => {
  it('perf produce prints interval and final lines, or JSON', async () => {
    const plain = await skein(['perf', 'produce', ...b, '--topic', 'perf', '--num-records', '3000', '--record-size', '50', '--throughput', '-1', '--producer-props', 'acks=1', 'linger.ms=2'])
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.out).toMatch(/^3000 records sent, [\d.]+ records\/sec \([\d.]+ MB\/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency, [\d.]+ ms 50th, [\d.]+ ms 95th, [\d.]+ ms 99th, [\d.]+ ms 99\.9th\.\n$/m)
    const limited = await skein(['perf', 'produce', ...b, '--topic', 'perf', '--num-records', '300', '--record-size', '10', '--throughput', '200', '--reporting-interval', '500', '--json'])
    expect(limited.code).toBe(0)
    const r = JSON.parse(limited.out) as { records: number; elapsedMs: number; recordsPerSec: number; latencyMs: { p99: number; p50: number } }
    expect(r.records).toBe(300)
    // 300 records at 200/s take about 1.5 s.
    expect(r.elapsedMs).toBeGreaterThan(1300)
    expect(r.recordsPerSec).toBeLessThan(260)
    expect(r.latencyMs.p99).toBeGreaterThanOrEqual(r.latencyMs.p50)
  })

  it('perf consume reads what perf produce wrote', async () => {
    expect((await skein(['perf', 'produce', ...b, '--topic', 'perf-read', '--num-records', '2000', '--record-size', '100', '--throughput', '-1'])).code).toBe(0)
    const c = await skein(['perf', 'consume', ...b, '--topic', 'perf-read', '--messages', '2000', '--json'])
    expect(c.code, c.stderr).toBe(0)
    const r = JSON.parse(c.out) as { records: number; bytes: number }
    expect(r.records).toBe(2000)
    expect(r.bytes).toBe(200000)
  })

  it('bench disk measures a directory', async () => {
    const dir = tempDataDir('bench-disk')
    const r = await skein(['bench', 'disk', '--dir', dir, '--size-mb', '4', '--block-kb', '256', '--fsyncs', '5', '--json'])
    rmSync(dir, { recursive: true, force: true })
    expect(r.code, r.stderr).toBe(0)
    const j = JSON.parse(r.out) as { writeMBps: number; readMBps: number; fsyncsPerSec: number; readMode: string; sizeBytes: number }
    expect(j.sizeBytes).toBe(4 * 1024 * 1024)
    expect(j.writeMBps).toBeGreaterThan(0)
    expect(j.readMBps).toBeGreaterThan(0)
    expect(j.fsyncsPerSec).toBeGreaterThan(0)
    expect(['direct', 'buffered']).toContain(j.readMode)
  })
})

describe('errors and help', () => {
  it('a broker that is down: one line, exit 1, fast', async () => {
    const port = await freePort()
    // Fast: each gives up at the refused connection (0.4 s of CPU) instead of retrying until
    // default.api.timeout.ms (60 s); a run still going after FAST_MS is killed and fails the test. A bound
    // of 25 s on the four runs' total time failed on a loaded machine (29 s at load average 25).
    const FAST_MS = 30_000
    const commands = [['topics', '--list'], ['consume', '--topic', 'x'], ['groups', '--list']]
    const [results, p] = await Promise.all([
      Promise.all(commands.map((args) => skein([...args, '--bootstrap-server', `127.0.0.1:${port}`], { timeoutMs: FAST_MS }))),
      skein(['produce', '--topic', 'x', '--bootstrap-server', `127.0.0.1:${port}`], { input: 'a\n', timeoutMs: FAST_MS }),
    ])
    commands.forEach((args, i) => {
      expect(results[i]!.code).toBe(1)
      expect(oneLine(results[i]!.stderr)).toBe(`skein ${args[0]}: cannot connect to 127.0.0.1:${port}: connection refused (is a broker running there?)`)
    })
    expect(p.code).toBe(1)
    expect(p.stderr).toContain('connection refused')
  })

  it('bad flags, missing values and unknown commands', async () => {
    const cases: [string[], string][] = [
      [['topics', '--lst'], "skein topics: unknown option '--lst' (see skein topics --help)"],
      [['topics', '--create'], 'skein topics: --topic is required with --create'],
      [['topics', '--list', '--describe'], 'skein topics: give exactly one of --create, --list, --describe, --alter, --delete'],
      [['produce', '--bootstrap-server', '127.0.0.1:1', '--topic'], 'skein produce: --topic needs a value (TOPIC)'],
      [['consume', '--topic', 't', '--max-messages', 'many'], "skein consume: --max-messages needs an integer, not 'many'"],
      [['consume', '--topic', 't', '--offset', '5'], 'skein consume: --offset needs --partition'],
      [['groups', '--reset-offsets', '--group', 'g', '--topic', 't'], 'skein groups: give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by'],
      [['configs', '--describe'], 'skein configs: --entity-type topics|brokers|groups is required'],
      [['perf', 'produce', '--topic', 't'], 'skein perf produce: --num-records is required'],
      [['frobnicate'], "skein: unknown command 'frobnicate' (see skein --help)"],
    ]
    // The runs are independent: all at once.
    const results = await Promise.all(cases.map(([args]) => skein(args.includes('--bootstrap-server') ? args : [...args, '--bootstrap-server', tb.bootstrap])))
    cases.forEach(([args, message], i) => {
      expect(results[i]!.code, args.join(' ')).toBe(1)
      expect(oneLine(results[i]!.stderr)).toBe(message)
    })
  })

  it('every command has --help (exit 0)', async () => {
    const commands = [['broker'], ['topics'], ['produce'], ['consume'], ['groups'], ['configs'], ['perf', 'produce'], ['perf', 'consume'], ['bench', 'disk'], ['bench', 'compression'], []]
    const results = await Promise.all(commands.map((cmd) => skein([...cmd, '--help'])))
    commands.forEach((cmd, i) => {
      expect(results[i]!.code, cmd.join(' ')).toBe(0)
      expect(results[i]!.out).toMatch(/^Usage: skein/)
      expect(results[i]!.stderr).toBe('')
    })
  })
})
