// Several log.dirs on one broker (Kafka's JBOD): partitions spread over the directories by count, each
// directory with its own meta.properties; DescribeLogDirs lists each; AlterReplicaLogDirs moves a
// partition between them (through a -future copy) without losing a record, also across a restart; a
// directory removed under the broker goes offline (KAFKA_STORAGE_ERROR for its partitions, an error for
// it in DescribeLogDirs) while the other keeps serving.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/index.js'
import { readMetaProperties } from '../../src/storage/meta-properties.js'
import { batchOf, decodeBatches, RawClient, recordsBuffer, startTestBroker, type TestBroker } from '../harness/index.js'

const KAFKA_STORAGE_ERROR = 56
const LOG_DIR_NOT_FOUND = 57

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

async function readAll(c: RawClient, topic: string, partition: number): Promise<string[]> {
  const p = await c.fetch(topic, partition, 0, { maxBytes: 1 << 20, partitionMaxBytes: 1 << 20 })
  expect(p.errorCode).toBe(0)
  return decodeBatches(recordsBuffer(p)).flatMap((b) => b.records.map((r) => r.value!.toString()))
}

describe('several log.dirs on one broker', () => {
  let root: string
  let dirA: string
  let dirB: string
  let tb: TestBroker
  let client: RawClient
  let admin: Admin
  const overrides = (): string[] => [`log.dirs=${dirA},${dirB}`, 'io.threads=2', 'log.dir.probe.interval.ms=200']

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'skein-jbod-'))
    dirA = join(root, 'a')
    dirB = join(root, 'b')
    tb = await startTestBroker(overrides(), { dataDir: dirA })
    client = await RawClient.connect(tb.host, tb.port)
    admin = new Admin({ bootstrapServers: tb.bootstrap })
  })

  afterAll(async () => {
    await admin?.close().catch(() => {})
    client?.close()
    await tb?.stop({ keepData: true }).catch(() => {})
    rmSync(root, { recursive: true, force: true })
  })

  it('spreads partitions over the directories, each with its own meta.properties, and lists both', async () => {
    expect((await client.createTopic('spread', 4)).errorCode).toBe(0)
    for (let p = 0; p < 4; p++) expect((await client.produce('spread', p, batchOf([{ value: Buffer.from(`v${p}`) }]))).errorCode).toBe(0)
    const inA = readdirSync(dirA).filter((n) => n.startsWith('spread-'))
    const inB = readdirSync(dirB).filter((n) => n.startsWith('spread-'))
    expect(inA.length).toBe(2)
    expect(inB.length).toBe(2)
    const metaA = readMetaProperties(dirA)!
    const metaB = readMetaProperties(dirB)!
    expect(metaA.clusterId).toBe(metaB.clusterId)
    expect(metaA.nodeId).toBe(metaB.nodeId)
    expect(metaA.directoryId).not.toBe(metaB.directoryId)
    const dirs = await admin.describeLogDirs([{ topic: 'spread', partitions: [0, 1, 2, 3] }])
    expect(dirs.map((d) => d.logDir).sort()).toEqual([dirA, dirB].sort())
    for (const d of dirs) {
      expect(d.errorCode).toBe(0)
      expect(d.partitions.length).toBe(2)
      expect(d.totalBytes).toBeGreaterThan(0)
    }
  })

  it('moves a partition to the other directory with AlterReplicaLogDirs, keeping its records', async () => {
    const inA = readdirSync(dirA).find((n) => n.startsWith('spread-'))!
    const partition = Number(inA.slice('spread-'.length))
    for (let i = 0; i < 50; i++) expect((await client.produce('spread', partition, batchOf([{ value: Buffer.from(`m${i}`) }]))).errorCode).toBe(0)
    const before = await readAll(client, 'spread', partition)
    const answers = await admin.alterReplicaLogDirs(tb.broker.nodeId, [
      { topic: 'spread', partition, logDir: dirB },
      { topic: 'spread', partition: 1 - (partition % 2) + 2 * Math.floor(partition / 2), logDir: join(root, 'nowhere') },
    ])
    expect(answers.find((a) => a.partition === partition)!.errorCode).toBe(0)
    expect(answers.find((a) => a.partition !== partition)!.errorCode).toBe(LOG_DIR_NOT_FOUND)
    await until('the move to finish', async () => (existsSync(join(dirB, `spread-${partition}`)) && !existsSync(join(dirA, `spread-${partition}`)) ? true : undefined))
    const dirs = await admin.describeLogDirs([{ topic: 'spread', partitions: [partition] }])
    expect(dirs.find((d) => d.logDir === dirB)!.partitions).toEqual([expect.objectContaining({ partition, isFuture: false })])
    expect(dirs.find((d) => d.logDir === dirA)!.partitions).toEqual([])
    expect(await readAll(client, 'spread', partition)).toEqual(before)
    expect((await client.produce('spread', partition, batchOf([{ value: Buffer.from('after') }]))).errorCode).toBe(0)
    // The moved partition is found in its new directory after a restart.
    client.close()
    tb = await tb.restart()
    client = await RawClient.connect(tb.host, tb.port)
    expect(await readAll(client, 'spread', partition)).toEqual([...before, 'after'])
  })

  it('takes a removed directory offline and keeps serving the other', async () => {
    const inB = readdirSync(dirB).filter((n) => n.startsWith('spread-')).map((n) => Number(n.slice('spread-'.length)))
    const inA = readdirSync(dirA).filter((n) => n.startsWith('spread-')).map((n) => Number(n.slice('spread-'.length)))
    expect(inA.length).toBeGreaterThan(0)
    rmSync(dirB, { recursive: true, force: true })
    await until('dir b offline', async () => (tb.broker.router.offlineDirs.has(dirB) ? true : undefined))
    for (const p of inB) expect((await client.produce('spread', p, batchOf([{ value: Buffer.from('lost') }]))).errorCode).toBe(KAFKA_STORAGE_ERROR)
    for (const p of inA) expect((await client.produce('spread', p, batchOf([{ value: Buffer.from('kept') }]))).errorCode).toBe(0)
    const dirs = await admin.describeLogDirs()
    expect(dirs.find((d) => d.logDir === dirB)!.errorCode).toBe(KAFKA_STORAGE_ERROR)
    expect(dirs.find((d) => d.logDir === dirA)!.errorCode).toBe(0)
  })
})
