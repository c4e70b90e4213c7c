// The hostile client of the hostile-neighbour suite, run as its own process (`node dist/test/hostile/attacker.js
// <host> <port> <smoke|full> <good topic>`) so that building 20 MB frames never stalls the good pair's event
// loop and skews its latency. It asks the broker what it serves (ApiVersions), sends every API at its
// extremes (extreme-requests.ts), the named cases, hostile record batches and broken frames, and
// prints one JSON line of outcome counts at the end ('HOSTILE-SUMMARY {...}').
import { fileURLToPath } from 'node:url'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as ListOffsets from '../../src/protocol/messages/02-list-offsets.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import { encodeRequestFrame } from '../../src/protocol/frame.js'
import { contains } from '../../scripts/gen-protocol/model.js'
import { RawClient } from '../harness/raw-client.js'
import { hostileBatches } from '../records/hostile-batches.js'
import { apiSpec, arrayPaths, brokenFrames, extremeRequest, lyingArrayFrame, protocolModel, type ExtremeOptions } from './extreme-requests.js'
import { runHttpAttack, type HttpAttackSummary } from './http-attack.js'

export type AttackPlan = 'smoke' | 'full'

export interface AttackSummary {
  plan: AttackPlan
  /** Requests sent, by outcome: a response came back, the broker closed the connection, or nothing within the wait. */
  answered: number
  closed: number
  silent: number
  /** Requests the generated encoder refused to build (values no client can put on the wire). */
  unencodable: number
  apis: number
  /** The silent ones by name (a hang candidate unless the request asked to wait, e.g. Fetch maxWaitMs). */
  silentNames: string[]
  /** Frames that were not attempted because the spec folder is missing. */
  specsMissing: boolean
  seconds: number
  /** The HTTP half (http-attack.ts), when the broker runs its REST Proxy and registry. */
  http?: HttpAttackSummary
}

/** How many spec-driven hostile requests are in flight at once, each on its own connection (in API order). */
const LANES = 6

/** Runs jobs with at most `lanes` at a time. */
async function inLanes(jobs: readonly (() => Promise<void>)[], lanes: number): Promise<void> {
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < jobs.length) await jobs[next++]!()
  }
  await Promise.all(Array.from({ length: Math.min(lanes, jobs.length) }, lane))
}

/** Kafka's request.max.list.elements default; the broker under attack runs with it. */
const LIST_LIMIT = 100_000

class Attacker {
  private client: RawClient | undefined
  private correlationId = 1
  private readonly startedAt = Date.now()
  readonly summary: AttackSummary

  constructor(
    private readonly host: string,
    private readonly port: number,
    plan: AttackPlan,
    private readonly waitMs: number,
  ) {
    this.summary = { plan, answered: 0, closed: 0, silent: 0, unencodable: 0, apis: 0, silentNames: [], specsMissing: false, seconds: 0 }
  }

  nextId(): number {
    return this.correlationId++
  }

  private async connection(): Promise<RawClient> {
    if (this.client === undefined || this.client.closed) this.client = await RawClient.connect(this.host, this.port, 10_000)
    return this.client
  }

  /** Sends a frame whose correlation id is `id` and waits for its answer, the connection closing, or waitMs. */
  async send(name: string, bytes: Buffer, id: number): Promise<void> {
    const c = await this.connection()
    if ((await this.#exchange(c, name, bytes, id)) === 'silent') {
      // A request the broker may legitimately park (a long maxWaitMs): start afresh rather than queue behind it.
      c.close()
      await c.closedPromise
    }
  }

  /** Like send, on a connection of its own (requests run side by side in lanes). */
  async sendAlone(name: string, bytes: Buffer, id: number): Promise<void> {
    let c: RawClient
    try {
      c = await RawClient.connect(this.host, this.port, 10_000)
    } catch {
      this.summary.silent++
      this.summary.silentNames.push(`${name} (could not connect)`)
      return
    }
    await this.#exchange(c, name, bytes, id)
    c.close()
  }

  /** Writes one request on c and counts what came of it: an answer, a closed connection, or silence for waitMs. */
  async #exchange(c: RawClient, name: string, bytes: Buffer, id: number): Promise<'answered' | 'closed' | 'silent'> {
    const answer = c.waitFor(id, this.waitMs).then(
      () => 'answered' as const,
      (err: Error) => (/closed/.test(err.message) ? ('closed' as const) : ('silent' as const)),
    )
    await c.write(bytes).catch(() => undefined)
    const outcome = await answer
    this.summary[outcome]++
    if (outcome === 'silent') {
      this.summary.silentNames.push(name)
      // Written as it happens (stdout is a pipe, written synchronously): a run cut short still says where it was.
      console.log(`silent after ${this.waitMs} ms (${Math.round((Date.now() - this.startedAt) / 1000)} s into the attack): ${name}`)
    }
    return outcome
  }

  /** Writes bytes on a fresh connection and waits for the broker to answer or hang up (or waitMs). */
  async sendRaw(bytes: Buffer, thenClose: boolean): Promise<void> {
    const c = await RawClient.connect(this.host, this.port, 10_000)
    await c.write(bytes).catch(() => undefined)
    if (thenClose) {
      c.close()
      this.summary.closed++
      return
    }
    const closed = await c.waitClosed(this.waitMs)
    if (closed) this.summary.closed++
    else if (c.received.length > 0 || c.unmatched.length > 0) this.summary.answered++
    else this.summary.silent++
    c.close()
  }

  close(): void {
    this.client?.close()
  }
}

/** The whole attack against one broker; resolves its summary. */
export async function runAttack(host: string, port: number, plan: AttackPlan, goodTopic: string): Promise<AttackSummary> {
  const started = Date.now()
  const a = new Attacker(host, port, plan, plan === 'smoke' ? 2_000 : 4_000)
  const probe = await RawClient.connect(host, port)
  const served = (await probe.apiVersions(3)).apiKeys
  await probe.createTopic('hostile-target', 1).catch(() => undefined)
  a.summary.apis = served.length

  const model = protocolModel()
  if (model === undefined) a.summary.specsMissing = true
  else {
    const jobs: (() => Promise<void>)[] = []
    for (const range of served) {
      const spec = apiSpec(model, range.apiKey)
      if (spec === undefined) continue
      const top = Math.min(range.maxVersion, spec.request.validVersions.max)
      const versions = plan === 'smoke' ? [top] : Array.from({ length: top - range.minVersion + 1 }, (_, i) => range.minVersion + i)
      for (const version of versions) {
        const cases: ExtremeOptions[] = plan === 'smoke' ? [{ extreme: 'max', batchIndex: range.apiKey }] : [
          { extreme: 'max', batchIndex: version },
          { extreme: 'min' },
          // The first array one element past request.max.list.elements (CreateTopics stays small: not this suite's).
          { extreme: 'wide', width: range.apiKey === 19 ? 100 : LIST_LIMIT + 1 },
        ]
        if (plan === 'full' && version === top && range.apiKey !== 19) {
          // At the top version every array, nested ones too, at exactly the limit.
          for (const path of arrayPaths(spec.request.root, version)) cases.push({ extreme: 'wide', width: LIST_LIMIT, arrayPath: path })
        }
        for (const o of cases) {
          jobs.push(async () => {
            // Built when its lane is free, so only a few large frames exist at once.
            const id = a.nextId()
            const req = extremeRequest(model, range.apiKey, version, o, id)
            if (req === undefined) a.summary.unencodable++
            else await a.sendAlone(req.name, req.bytes, id)
          })
        }
        // An array length claiming 2^31-1 elements with nothing behind it.
        jobs.push(async () => {
          const id = a.nextId()
          await a.sendAlone(`${spec.name} v${version} lying array length`, lyingArrayFrame(range.apiKey, version, contains(spec.request.flexibleVersions, version), 0x7fffffff - 1, id), id)
        })
      }
    }
    await inLanes(jobs, LANES)
    console.log(`spec-driven requests done after ${Math.round((Date.now() - started) / 1000)} s`)
  }

  // The named cases: a ListOffsets of millions of partitions, a Fetch naming one partition thousands of times.
  for (const count of plan === 'smoke' ? [2_000_000] : [LIST_LIMIT, 2_000_000]) {
    const partitions = Array.from({ length: count }, (_, i) => ListOffsets.createListOffsetsPartition({ partitionIndex: i % 3 === 0 ? 0 : i, timestamp: -1n }))
    const req = ListOffsets.createListOffsetsRequest({ replicaId: -1, topics: [ListOffsets.createListOffsetsTopic({ name: goodTopic, partitions })] })
    const id = a.nextId()
    await a.send(`ListOffsets v7 x${count} partitions`, encodeRequestFrame({ requestApiKey: 2, requestApiVersion: 7, correlationId: id, clientId: 'hostile' }, (w) => ListOffsets.encodeListOffsetsRequest(w, req, 7)), id)
  }
  for (const repeats of plan === 'smoke' ? [5_000] : [5_000, LIST_LIMIT]) {
    const one = Fetch.createFetchPartition({ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1024 * 1024 })
    const req = Fetch.createFetchRequest({ maxWaitMs: 0, minBytes: 0, maxBytes: 50 * 1024 * 1024, topics: [Fetch.createFetchTopic({ topic: goodTopic, partitions: new Array(repeats).fill(one) })] })
    const id = a.nextId()
    await a.send(`Fetch v12 one partition x${repeats}`, encodeRequestFrame({ requestApiKey: 1, requestApiVersion: 12, correlationId: id, clientId: 'hostile' }, (w) => Fetch.encodeFetchRequest(w, req, 12)), id)
  }

  // Every hostile batch (zip bombs, nested and compressed record sets) produced with acks=1 to a topic of its own.
  let producer = await RawClient.connect(host, port, 30_000)
  for (const [name, batch] of Object.entries(hostileBatches())) {
    if (producer.closed) producer = await RawClient.connect(host, port, 30_000)
    try {
      await producer.produce('hostile-target', 0, batch, 1, 9)
      a.summary.answered++
    } catch (err) {
      if (/closed/.test((err as Error).message)) a.summary.closed++
      else {
        a.summary.silent++
        a.summary.silentNames.push(`Produce v9 ${name}`)
        producer.close()
      }
    }
  }
  producer.close()

  // Frames that lie about their shape, each on a connection of its own.
  const metadata = Metadata.createMetadataRequest({ topics: [Metadata.createMetadataRequestTopic({ name: goodTopic })] })
  const good = encodeRequestFrame({ requestApiKey: 3, requestApiVersion: 12, correlationId: 1, clientId: 'hostile' }, (w) => Metadata.encodeMetadataRequest(w, metadata, 12))
  for (const f of brokenFrames(good)) await a.sendRaw(f.bytes, f.thenClose)

  probe.close()
  a.close()
  a.summary.seconds = Math.round((Date.now() - started) / 100) / 10
  return a.summary
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [host, port, plan, topic, restBase, registryBase] = process.argv.slice(2)
  const attackPlan = (plan ?? 'smoke') as AttackPlan
  Promise.all([
    runAttack(host!, Number(port), attackPlan, topic ?? 'good'),
    restBase === undefined ? Promise.resolve(undefined) : runHttpAttack(restBase, registryBase!, attackPlan),
  ]).then(
    ([s, http]) => {
      if (http !== undefined) s.http = http
      console.log(`HOSTILE-SUMMARY ${JSON.stringify(s)}`)
      process.exit(0)
    },
    (err: unknown) => {
      console.error(err)
      process.exit(1)
    },
  )
}
