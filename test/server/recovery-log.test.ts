// Log recovery is logged as Kafka logs it: after a crash, one INFO line per partition whose log was
// re-validated or repaired (from which offset, how many bytes, what was truncated), and one summary line
// of the whole data directory; a clean restart logs the summary only.
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { RawClient, batchOf, startBrokerProcess } from '../harness/index.js'

interface Line {
  level: number
  msg: string
  [field: string]: unknown
}

function lines(output: string): Line[] {
  return output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line)
}

it('after a crash, each recovered partition gets one INFO line with what was re-validated and truncated, plus a summary', async () => {
  let b = await startBrokerProcess()
  const dataDir = b.dataDir
  try {
    const c = await RawClient.connect(b.host, b.port)
    expect((await c.createTopic('r', 3)).errorCode).toBe(0)
    for (let i = 0; i < 5; i++) {
      for (const p of [0, 1]) expect((await c.produce('r', p, batchOf([{ value: Buffer.from(`v${i}`) }]))).errorCode).toBe(0)
    }
    c.close()
    expect(await b.kill('SIGKILL')).toBe('SIGKILL')
    // A torn write at the end of partition 1's log.
    appendFileSync(join(dataDir, 'r-1', '00000000000000000000.log'), Buffer.alloc(37, 7))

    b = await startBrokerProcess({ dataDir })
    let out = lines(b.output())
    const recovered = out.filter((l) => /^recovered /.test(l.msg))
    expect(recovered.map((l) => l.msg.split(':')[0]).sort()).toEqual(['recovered r-0', 'recovered r-1'])
    const r1 = recovered.find((l) => l.partition === 1)!
    expect(r1).toMatchObject({ level: 30, topic: 'r', recoveredFrom: 0, bytesTruncated: 37, logEndOffset: 5 })
    expect(r1.msg).toMatch(/^recovered r-1: 1 segment\(s\) re-validated from offset 0 \(\d+ bytes\); 37 bytes of a torn or corrupt tail truncated; log end offset 5$/)
    expect(recovered.find((l) => l.partition === 0)).toMatchObject({ level: 30, recoveredFrom: 0, bytesTruncated: 0, logEndOffset: 5 })
    const summary = out.filter((l) => /^loaded \d+ partitions/.test(l.msg))
    expect(summary).toHaveLength(1)
    expect(summary[0]).toMatchObject({ level: 30, cleanShutdown: false, partitions: 3, recovered: 2, bytesTruncated: 37 })
    expect(summary[0]!.msg).toMatch(/^loaded 3 partitions in \d+ ms after an unclean shutdown .*; 2 recovered, 37 bytes truncated, 0 segments dropped$/)
    // The summary comes before the ready line.
    expect(out.findIndex((l) => l === summary[0])).toBeLessThan(out.findIndex((l) => /ready/.test(l.msg)))
    // Served, then stopped cleanly (a signal during start-up waits until the broker can stop cleanly).
    const c2 = await RawClient.connect(b.host, b.port)
    expect((await c2.metadata(['r'])).topics[0]!.partitions).toHaveLength(3)
    c2.close()
    expect(await b.kill('SIGTERM')).toBe(0)

    b = await startBrokerProcess({ dataDir })
    out = lines(b.output())
    expect(out.filter((l) => /^recovered /.test(l.msg))).toEqual([])
    expect(out.filter((l) => /^loaded \d+ partitions/.test(l.msg))).toEqual([
      expect.objectContaining({ cleanShutdown: true, partitions: 3, recovered: 0, msg: expect.stringMatching(/^loaded 3 partitions in \d+ ms after a clean shutdown$/) }),
    ])
  } finally {
    await b.kill('SIGTERM')
  }
}, 60_000)
