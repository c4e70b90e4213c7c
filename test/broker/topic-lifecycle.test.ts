// The life of a topic's directories on one broker.
// Creation is all-or-nothing (CreateTopics and CreatePartitions): a partition that cannot be created
// makes the whole request fail with one error and one log line, and leaves nothing behind, in
// cluster-metadata.json or on disk. The broker starts whatever its metadata holds.
// Deletion renames each partition directory with Kafka's scheme (`<topic shortened>-<p>.<uuid>-delete`,
// within 255 bytes), fsyncs the data directory before answering, and removes the directories in the
// background and, if cut short, at the next start. Directories the metadata does not list are never
// served again: they are moved aside as `...-stray`.
import { spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { loadBrokerConfig } from '../../src/config/broker-config.js'
import * as CreatePartitions from '../../src/protocol/messages/37-create-partitions.gen.js'
import * as DeleteTopics from '../../src/protocol/messages/20-delete-topics.gen.js'
import { Broker } from '../../src/broker/broker.js'
import { DELETE_DIR_PATTERN, STRAY_DIR_PATTERN, logDirNameWithSuffix } from '../../src/storage/partition-names.js'
import { ensureDataDirectory, partitionsThatFit } from '../../src/storage/index.js'
import { MAIN_JS, RawClient, batchOf, decodeBatches, recordsBuffer, startBrokerProcess, tempDataDir } from '../harness/index.js'

const KAFKA_STORAGE_ERROR = 56

interface LoggedBroker {
  broker: Broker
  client: RawClient
  lines: Record<string, unknown>[]
  stop(): Promise<void>
}

/** An in-process broker whose log lines are kept (level 50 = error). */
async function start(dataDir: string): Promise<LoggedBroker> {
  const lines: Record<string, unknown>[] = []
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) })
  const config = loadBrokerConfig({ overrides: ['listeners=PLAINTEXT://127.0.0.1:0', `log.dirs=${dataDir}`, 'io.threads=1'] })
  const broker = await Broker.start(config, { logger, shutdownGraceMs: 2000 })
  const e = broker.endpointFor()
  const client = await RawClient.connect(e.host, e.port, 60_000)
  return {
    broker,
    client,
    lines,
    async stop() {
      client.close()
      await broker.stop()
    },
  }
}

function errorLines(lines: Record<string, unknown>[]): Record<string, unknown>[] {
  return lines.filter((l) => (l.level as number) >= 50)
}

function partitionDirs(dataDir: string, topic: string): string[] {
  return readdirSync(dataDir).filter((n) => n.startsWith(`${topic}-`) && !n.includes('.'))
}

function storedTopics(dataDir: string): string[] {
  return (JSON.parse(readFileSync(join(dataDir, 'cluster-metadata.json'), 'utf8')) as { topics: { name: string; partitions: number[][] }[] }).topics.map((t) => `${t.name}:${t.partitions.length}`)
}

async function deleteTopic(c: RawClient, topic: string): Promise<DeleteTopics.DeletableTopicResult> {
  const req = DeleteTopics.createDeleteTopicsRequest({ timeoutMs: 60_000, topicNames: [topic] })
  const res = await c.call(20, 3, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, req, 3), DeleteTopics.decodeDeleteTopicsResponse)
  return res.responses[0]!
}

async function values(c: RawClient, topic: string, partition: number): Promise<string[]> {
  const p = await c.fetch(topic, partition, 0)
  expect(p.errorCode).toBe(0)
  return decodeBatches(recordsBuffer(p)).flatMap((b) => b.records.map((r) => r.value!.toString()))
}

async function eventually(check: () => boolean, ms = 20_000): Promise<void> {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not reached')
    await new Promise((r) => setTimeout(r, 20))
  }
}

async function createPartitions(c: RawClient, topic: string, count: number): Promise<CreatePartitions.CreatePartitionsTopicResult> {
  const req = CreatePartitions.createCreatePartitionsRequest({
    timeoutMs: 60_000,
    validateOnly: false,
    topics: [CreatePartitions.createCreatePartitionsTopic({ name: topic, count, assignments: null })],
  })
  const res = await c.call(37, 1, (w) => CreatePartitions.encodeCreatePartitionsRequest(w, req, 1), CreatePartitions.decodeCreatePartitionsResponse)
  return res.results[0]!
}

describe('topic creation, all or nothing', () => {
  let dataDir = ''
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }))

  it('CreateTopics: a partition that cannot be created fails the request whole, leaves no trace, logs one line', async () => {
    dataDir = tempDataDir('all-or-nothing')
    // A file where partition 700's directory must go: a real failure half way through the request.
    writeFileSync(join(dataDir, 'huge-700'), 'not a partition')
    let b = await start(dataDir)
    try {
      const r = await b.client.createTopic('huge', 1000)
      expect(r.errorCode).toBe(KAFKA_STORAGE_ERROR)
      expect(r.errorMessage).toMatch(/1 of 1000 partitions of topic 'huge' could not be created, none was kept \(partition 700: /)
      expect(partitionDirs(dataDir, 'huge')).toEqual(['huge-700'])
      // The partitions it created were renamed for deletion before the answer and are removed soon after.
      await eventually(() => readdirSync(dataDir).filter((n) => n.startsWith('huge')).length === 1)
      expect(readFileSync(join(dataDir, 'huge-700'), 'utf8')).toBe('not a partition')
      expect(storedTopics(dataDir)).toEqual([])
      expect((await b.client.metadata(['huge'])).topics[0]!.errorCode).toBe(3) // UNKNOWN_TOPIC_OR_PARTITION
      const errors = errorLines(b.lines)
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatchObject({ topic: 'huge', partitions: 1000, msg: 'cannot create topic: nothing was kept' })
      await b.stop()

      // Nothing comes back at a restart; once the obstacle is gone the same request succeeds.
      b = await start(dataDir)
      expect((await b.client.metadata(['huge'])).topics[0]!.errorCode).toBe(3)
      expect(errorLines(b.lines)).toEqual([])
      rmSync(join(dataDir, 'huge-700'))
      expect((await b.client.createTopic('huge', 1000)).errorCode).toBe(0)
      expect(partitionDirs(dataDir, 'huge')).toHaveLength(1000)
      expect((await b.client.produce('huge', 700, batchOf([{ value: Buffer.from('x') }]))).errorCode).toBe(0)
    } finally {
      await b.stop()
    }
  }, 120_000)

  it('CreatePartitions: a new partition that cannot be created keeps the old count, and no new directory', async () => {
    dataDir = tempDataDir('all-or-nothing')
    const b = await start(dataDir)
    try {
      expect((await b.client.createTopic('t', 2)).errorCode).toBe(0)
      writeFileSync(join(dataDir, 't-7'), 'in the way')
      const r = await createPartitions(b.client, 't', 10)
      expect(r.errorCode).toBe(KAFKA_STORAGE_ERROR)
      expect(r.errorMessage).toMatch(/1 of 8 partitions of topic 't' could not be created, none was kept \(partition 7: /)
      expect(partitionDirs(dataDir, 't').sort()).toEqual(['t-0', 't-1', 't-7'])
      expect(storedTopics(dataDir)).toEqual(['t:2'])
      expect((await b.client.metadata(['t'])).topics[0]!.partitions).toHaveLength(2)
      expect(errorLines(b.lines)).toHaveLength(1)
      rmSync(join(dataDir, 't-7'))
      expect((await createPartitions(b.client, 't', 10)).errorCode).toBe(0)
      expect((await b.client.metadata(['t'])).topics[0]!.partitions).toHaveLength(10)
    } finally {
      await b.stop()
    }
  }, 60_000)

  it('the broker starts whatever its metadata holds: a partition it cannot open is one log line, the rest is served', async () => {
    dataDir = tempDataDir('all-or-nothing')
    let b = await start(dataDir)
    expect((await b.client.createTopic('ok', 4)).errorCode).toBe(0)
    expect((await b.client.produce('ok', 2, batchOf([{ value: Buffer.from('kept') }]))).errorCode).toBe(0)
    await b.stop()
    // The directories of partitions 1 and 3 replaced by files while the broker was down.
    for (const p of [1, 3]) {
      rmSync(join(dataDir, `ok-${p}`), { recursive: true })
      writeFileSync(join(dataDir, `ok-${p}`), '')
    }
    b = await start(dataDir)
    try {
      const errors = errorLines(b.lines)
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatchObject({ topic: 'ok', failed: 2, partitions: [1, 3], msg: 'cannot open partitions: offline on this broker' })
      const p2 = await b.client.fetch('ok', 2, 0)
      expect(p2.errorCode).toBe(0)
      expect((await b.client.produce('ok', 0, batchOf([{ value: Buffer.from('new') }]))).errorCode).toBe(0)
      // The replica it could not open is offline: Kafka's answer for a log it cannot use.
      expect((await b.client.produce('ok', 1, batchOf([{ value: Buffer.from('new') }]))).errorCode).toBe(KAFKA_STORAGE_ERROR)
    } finally {
      await b.stop()
    }
  }, 60_000)

  it('two requests creating the same topic at once: one creates it, the other is TOPIC_ALREADY_EXISTS, the logs stay', async () => {
    dataDir = tempDataDir('all-or-nothing')
    const b = await start(dataDir)
    const e = b.broker.endpointFor()
    const others = await Promise.all([1, 2, 3].map(() => RawClient.connect(e.host, e.port, 60_000)))
    try {
      const answers = await Promise.all([b.client, ...others].map((c) => c.createTopic('race', 8)))
      expect(answers.map((a) => a.errorCode).sort()).toEqual([0, 36, 36, 36])
      for (let p = 0; p < 8; p++) expect((await b.client.produce('race', p, batchOf([{ value: Buffer.from(`v${p}`) }]))).errorCode).toBe(0)
      for (let p = 0; p < 8; p++) expect(await values(b.client, 'race', p)).toEqual([`v${p}`])
      expect(errorLines(b.lines)).toEqual([])
    } finally {
      for (const c of others) c.close()
      await b.stop()
    }
  }, 60_000)

  it('refuses a request for more partitions than the filesystem has inodes and blocks for, before creating any', () => {
    const fs = statfsSync(tempDataDir('statfs'))
    const room = partitionsThatFit(fs)
    expect(room).toBeGreaterThan(0)
    expect(room).toBeLessThanOrEqual(Number(fs.bavail))
    if (Number(fs.files) > 0) expect(room).toBeLessThanOrEqual(Number(fs.ffree) / 2)
    // Each new partition takes two inodes (directory, .log) and a directory block.
    expect(partitionsThatFit({ bavail: 1000, files: 100, ffree: 41 })).toBe(20)
    expect(partitionsThatFit({ bavail: 15, files: 100, ffree: 41 })).toBe(15)
    expect(partitionsThatFit({ bavail: 15, files: 0, ffree: 0 })).toBe(15)
  })
})

describe('topic deletion', () => {
  let dataDir = ''
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }))

  it("names the folders of a deleted partition with Kafka's scheme, within 255 bytes", () => {
    const longest = 'x'.repeat(249)
    for (const [topic, partition] of [[longest, 99999], [longest, 0], ['t', 3], ['a.b_c-d', 2147483647]] as const) {
      for (const suffix of ['-delete', '-stray'] as const) {
        const name = logDirNameWithSuffix(topic, partition, suffix)
        expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255)
        const m = new RegExp(`^([a-zA-Z0-9._-]+)-${partition}\\.([0-9a-f]{32})${suffix}$`).exec(name)
        expect(m, name).not.toBeNull()
        expect(topic.startsWith(m![1]!)).toBe(true)
        expect((suffix === '-delete' ? DELETE_DIR_PATTERN : STRAY_DIR_PATTERN).test(name)).toBe(true)
      }
    }
    expect(logDirNameWithSuffix('t', 3, '-delete')).toMatch(/^t-3\.[0-9a-f]{32}-delete$/)
    expect(logDirNameWithSuffix(longest, 7, '-delete')).toHaveLength(255)
  })

  it('a topic with a 249-character name is deleted for good: gone from disk, not back after a restart', async () => {
    dataDir = tempDataDir('delete')
    const topic = 'l'.repeat(249)
    let b = await start(dataDir)
    try {
      expect((await b.client.createTopic(topic, 3)).errorCode).toBe(0)
      expect((await b.client.produce(topic, 1, batchOf([{ value: Buffer.from('old') }]))).errorCode).toBe(0)
      const r = await deleteTopic(b.client, topic)
      expect(r.errorCode).toBe(0)
      // Answered: every partition directory is renamed already; the renamed ones go in the background.
      expect(readdirSync(dataDir).filter((n) => n.startsWith(topic))).toEqual([])
      await eventually(() => readdirSync(dataDir).every((n) => !DELETE_DIR_PATTERN.test(n)))
      expect(errorLines(b.lines)).toEqual([])
      await b.stop()

      b = await start(dataDir)
      expect((await b.client.metadata([topic])).topics[0]!.errorCode).toBe(3)
      expect(readdirSync(dataDir).filter((n) => n.startsWith('l'))).toEqual([])
      expect(b.lines.filter((l) => (l.level as number) >= 40)).toEqual([])
      // The name is free again, for a new and empty topic.
      expect((await b.client.createTopic(topic, 2)).errorCode).toBe(0)
      expect(await values(b.client, topic, 1)).toEqual([])
    } finally {
      await b.stop()
    }
  }, 60_000)

  it('a topic whose directories were removed by hand is still deleted, at once and without errors', async () => {
    dataDir = tempDataDir('delete')
    const b = await start(dataDir)
    try {
      expect((await b.client.createTopic('hand', 3)).errorCode).toBe(0)
      for (let p = 0; p < 3; p++) rmSync(join(dataDir, `hand-${p}`), { recursive: true })
      expect((await deleteTopic(b.client, 'hand')).errorCode).toBe(0)
      expect((await b.client.metadata(['hand'])).topics[0]!.errorCode).toBe(3)
      expect(errorLines(b.lines)).toEqual([])
      expect((await b.client.createTopic('hand', 1)).errorCode).toBe(0)
    } finally {
      await b.stop()
    }
  }, 60_000)

  it('a deletion acknowledged is not undone by a SIGKILL; leftover -delete folders are removed at the next start', async () => {
    let bp = await startBrokerProcess()
    dataDir = bp.dataDir
    try {
      const c = await RawClient.connect(bp.host, bp.port)
      expect((await c.createTopic('gone', 4)).errorCode).toBe(0)
      for (let p = 0; p < 4; p++) expect((await c.produce('gone', p, batchOf([{ value: Buffer.from(`v${p}`) }]))).errorCode).toBe(0)
      expect((await deleteTopic(c, 'gone')).errorCode).toBe(0)
      c.close()
      expect(await bp.kill('SIGKILL')).toBe('SIGKILL')
      // What a removal cut short leaves (new names, a shortened one, and the old `.<hex>-delete` form).
      const leftovers = [logDirNameWithSuffix('z'.repeat(249), 12, '-delete'), logDirNameWithSuffix('other', 0, '-delete'), 'older-3.0123456789abcdef-delete']
      for (const name of leftovers) {
        mkdirSync(join(dataDir, name))
        writeFileSync(join(dataDir, name, '00000000000000000000.log'), 'x')
      }
      bp = await startBrokerProcess({ dataDir })
      const c2 = await RawClient.connect(bp.host, bp.port)
      expect((await c2.metadata(['gone'])).topics[0]!.errorCode).toBe(3)
      c2.close()
      await eventually(() => readdirSync(dataDir).every((n) => !n.endsWith('-delete')))
      expect(readdirSync(dataDir).filter((n) => n.startsWith('gone') || n.endsWith('-stray'))).toEqual([])
      expect(bp.output().split('\n').filter((l) => /"level":(40|50|60)/.test(l))).toEqual([])
    } finally {
      await bp.kill('SIGTERM')
    }
  }, 60_000)

  it('partition folders not in cluster-metadata.json are moved aside as -stray, never adopted as topics', async () => {
    dataDir = tempDataDir('stray')
    let b = await start(dataDir)
    expect((await b.client.createTopic('ghost', 2)).errorCode).toBe(0)
    expect((await b.client.createTopic('kept', 1)).errorCode).toBe(0)
    expect((await b.client.produce('ghost', 0, batchOf([{ value: Buffer.from('haunting') }]))).errorCode).toBe(0)
    await b.stop()
    // The metadata loses the topic (an older copy of the file, or a deletion whose renames never happened).
    const metaPath = join(dataDir, 'cluster-metadata.json')
    const meta = JSON.parse(readFileSync(metaPath, 'utf8')) as { topics: { name: string }[] }
    meta.topics = meta.topics.filter((t) => t.name !== 'ghost')
    writeFileSync(metaPath, JSON.stringify(meta))
    // A partition past the topic's count is a stray too.
    mkdirSync(join(dataDir, 'kept-5'))

    b = await start(dataDir)
    try {
      expect((await b.client.metadata(['ghost'])).topics[0]!.errorCode).toBe(3)
      expect((await b.client.metadata(['kept'])).topics[0]!.partitions).toHaveLength(1)
      const strays = readdirSync(dataDir).filter((n) => STRAY_DIR_PATTERN.test(n)).sort()
      expect(strays.map((n) => n.replace(/\.[0-9a-f]{32}-stray$/, ''))).toEqual(['ghost-0', 'ghost-1', 'kept-5'])
      // Kept whole, data included.
      const ghost0 = strays.find((n) => n.startsWith('ghost-0.'))!
      expect(readFileSync(join(dataDir, ghost0, '00000000000000000000.log')).includes(Buffer.from('haunting'))).toBe(true)
      const warnings = b.lines.filter((l) => (l.level as number) >= 40)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatchObject({ level: 40, partitions: 3, topics: ['ghost', 'kept'] })
      // The name is free: a new topic starts empty.
      expect((await b.client.createTopic('ghost', 1)).errorCode).toBe(0)
      expect(await values(b.client, 'ghost', 0)).toEqual([])
      await b.stop()

      b = await start(dataDir)
      const again = b.lines.filter((l) => (l.level as number) >= 40)
      expect(again).toHaveLength(1)
      expect(again[0]).toMatchObject({ level: 40, directories: 3 })
      expect(await values(b.client, 'ghost', 0)).toEqual([])
    } finally {
      await b.stop()
    }
  }, 60_000)
})

describe('log.dirs', () => {
  it('on a pseudo-filesystem is refused at startup with one line and exit code 1', () => {
    for (const dir of ['/proc/skein-test/data', '/proc/self', '/sys/kernel/skein-data']) {
      const r = spawnSync(process.execPath, [MAIN_JS, '--override', 'listeners=PLAINTEXT://127.0.0.1:0', '--override', `log.dirs=${dir}`], { timeout: 20_000, encoding: 'utf8' })
      expect(r.error).toBeUndefined()
      expect(r.status).toBe(1)
      const lines = r.stderr.trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^skein: cannot start the broker: log directory .* is on a pseudo-filesystem \((proc|sysfs) at /)
    }
  })

  it('is created level by level on a disk, and refused when a level is a file', () => {
    const root = tempDataDir('dirs')
    try {
      expect(ensureDataDirectory(join(root, 'a', 'b', 'c'))).toBe(join(root, 'a', 'b', 'c'))
      expect(readdirSync(join(root, 'a', 'b'))).toEqual(['c'])
      writeFileSync(join(root, 'file'), '')
      expect(() => ensureDataDirectory(join(root, 'file', 'x'))).toThrow(/is a file, not a directory/)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})
