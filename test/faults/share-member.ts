// One share-group member of the share fault scenario (share-scenario.ts), in a process of its own so that
// the scenario can SIGKILL it while it holds records: Skein's ShareConsumer in explicit acknowledgement
// mode. For each poll it prints every record it was given (a `got` line) before it acknowledges any, waits
// --hold-ms holding them, accepts them all and commits (commitSync); the outcome of each partition's
// acknowledgement comes from the acknowledgement commit callback as an `ack` line. Lines are JSON on
// stdout, which is a pipe and so written synchronously: a `got` is out before its acknowledgement is sent.
// SIGTERM: close (sends what is left, releases what it holds) and exit.
// Run from dist/: node dist/test/faults/share-member.js --bootstrap B --group G --topic T --name N
import { AcknowledgeType, KafkaError, ShareConsumer } from '../../src/client/index.js'

const args = new Map<string, string>()
for (let i = 2; i + 1 < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!)
const need = (k: string): string => {
  const v = args.get(k)
  if (v === undefined) throw new Error(`--${k} is required`)
  return v
}

const name = need('name')
const holdMs = Number(args.get('hold-ms') ?? 50)
const out = (o: Record<string, unknown>): void => {
  process.stdout.write(JSON.stringify({ c: name, ...o }) + '\n')
}
const describe = (err: Error): { err: string; code?: number; kind: string } => ({
  err: err.message.slice(0, 160),
  kind: err.constructor.name,
  ...(err instanceof KafkaError ? { code: err.code } : {}),
})
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

let stopping = false
process.on('SIGTERM', () => {
  stopping = true
})

const consumer = new ShareConsumer({
  bootstrapServers: need('bootstrap'),
  clientId: name,
  groupId: need('group'),
  acknowledgementMode: 'explicit',
  maxPollRecords: Number(args.get('max-poll-records') ?? 50),
  // A dead leader should cost seconds, not the default 30 s per request.
  requestTimeoutMs: 8000,
  apiTimeoutMs: 20_000,
})
consumer.setAcknowledgementCommitCallback((r) => out({ t: 'ack', p: r.partition, o: r.offsets, ...(r.error === null ? {} : describe(r.error)) }))
consumer.subscribe([need('topic')])
out({ t: 'started', pid: process.pid })

while (!stopping) {
  let records
  try {
    records = await consumer.poll(500)
  } catch (err) {
    out({ t: 'error', where: 'poll', ...describe(err as Error) })
    await sleep(200)
    continue
  }
  if (records.length === 0) continue
  for (const r of records) out({ t: 'got', p: r.partition, o: r.offset, id: r.value?.toString() ?? null, dc: r.deliveryCount })
  // Holding what it got: the scenario SIGKILLs a member after this line and before `acking`.
  out({ t: 'holding', n: records.length })
  await sleep(holdMs)
  out({ t: 'acking' })
  for (const r of records) consumer.acknowledge(r, AcknowledgeType.ACCEPT)
  try {
    await consumer.commitSync()
  } catch (err) {
    out({ t: 'error', where: 'commitSync', ...describe(err as Error) })
  }
}
await consumer.close(10_000).catch((err: Error) => out({ t: 'error', where: 'close', ...describe(err) }))
out({ t: 'closed' })
process.exit(0)
