// Topic creation is all-or-nothing (CreateTopics and CreatePartitions): a partition that cannot be
// created makes the whole request fail with one error and one log line, and leaves nothing behind, in
// cluster-metadata.json or on disk. The broker starts whatever its metadata holds.
import { readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { loadBrokerConfig } from '../../src/config/broker-config.js'
import * as CreatePartitions from '../../src/protocol/messages/37-create-partitions.gen.js'
import { Broker } from '../../src/server/broker.js'
import { partitionsThatFit } from '../../src/storage/index.js'
import { RawClient, batchOf, tempDataDir } from '../harness/index.js'

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
  return (JSON.parse(readFileSync(join(dataDir, 'cluster-metadata.json'), 'utf8')) as { topics: { name: string; partitions: number }[] }).topics.map((t) => `${t.name}:${t.partitions}`)
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
    expect((await b.client.createTopic('ok', 3)).errorCode).toBe(0)
    expect((await b.client.produce('ok', 2, batchOf([{ value: Buffer.from('kept') }]))).errorCode).toBe(0)
    await b.stop()
    // Partition 1's directory replaced by a file while the broker was down.
    rmSync(join(dataDir, 'ok-1'), { recursive: true })
    writeFileSync(join(dataDir, 'ok-1'), '')
    b = await start(dataDir)
    try {
      const errors = errorLines(b.lines)
      expect(errors).toHaveLength(1)
      expect(errors[0]).toMatchObject({ topic: 'ok', failed: 1, msg: 'cannot open partitions listed in cluster-metadata.json' })
      const p2 = await b.client.fetch('ok', 2, 0)
      expect(p2.errorCode).toBe(0)
      expect((await b.client.produce('ok', 0, batchOf([{ value: Buffer.from('new') }]))).errorCode).toBe(0)
      expect((await b.client.produce('ok', 1, batchOf([{ value: Buffer.from('new') }]))).errorCode).toBe(3)
    } finally {
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
