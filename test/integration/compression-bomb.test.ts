// Decompression bombs against the real broker process: produce requests whose batches inflate to
// hundreds of MiB or 1 GiB (gzip, zstd, lz4) or whose snappy block claims ~4 GiB, to every kind of
// topic: the broker walks every produced batch's records (issue 30), so one that keeps the producer's
// codec is no exception. Each is answered CORRUPT_MESSAGE, the child's resident memory stays bounded,
// nothing is written and the broker keeps serving.
import { rmSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { createRequire } from 'node:module'
import { compressFrameSync } from 'lz4-napi'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { ATTRIBUTES_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD } from '../../src/protocol/records/batch.js'
import { batchOf, crc32c, decodeAllRecords, hasZstdNapi, RawClient, recordsBuffer, startBrokerProcess, type BrokerProcess } from '../harness/index.js'

const require = createRequire(import.meta.url)
const MiB = 1024 * 1024
const ZSTD = hasZstdNapi()

/** A one-record producer batch whose records section is body, flagged with codec. */
function bombBatch(codec: number, body: Buffer): Buffer {
  const header = batchOf([{ key: Buffer.from('k'), value: Buffer.from('v') }]).subarray(0, RECORD_BATCH_OVERHEAD)
  const b = Buffer.concat([header, body])
  b.writeInt32BE(b.length - 12, 8)
  b.writeInt16BE(codec, ATTRIBUTES_OFFSET)
  b.writeUInt32BE(crc32c(b.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
  return b
}

function gzipBomb(): Buffer {
  const member = gzipSync(Buffer.alloc(64 * MiB), { level: 9 })
  return Buffer.concat(Array.from({ length: 16 }, () => member)) // 1 GiB of zeros in ~1 MiB
}

function zstdBomb(): Buffer {
  const binding = require('zstd-napi/binding')
  const cctx = new binding.CCtx()
  cctx.setParameter(binding.CParameter.compressionLevel, 1)
  const zeros = Buffer.alloc(MiB)
  const out = Buffer.alloc(binding.cStreamOutSize())
  const parts: Buffer[] = []
  for (let i = 0; i < 1024; i++) {
    let src = zeros
    const end = i === 1023
    for (;;) {
      const [remaining, written, consumed] = cctx.compressStream2(out, src, end ? binding.EndDirective.end : binding.EndDirective.continue)
      parts.push(Buffer.from(out.subarray(0, written)))
      src = src.subarray(consumed)
      if (src.length === 0 && (!end || remaining === 0)) break
    }
  }
  return Buffer.concat(parts) // 1 GiB of zeros streamed: no content size in the frame
}

function lz4Bomb(): Buffer {
  const one = compressFrameSync(Buffer.alloc(4 * MiB))
  const blocks = one.subarray(7, one.length - 4)
  return Buffer.concat([one.subarray(0, 7), ...Array.from({ length: 64 }, () => blocks), Buffer.alloc(4)]) // 256 MiB
}

/** A raw snappy block whose preamble claims ~4 GiB. */
const snappyLie = Buffer.concat([Buffer.from([0xf0, 0xff, 0xff, 0xff, 0x0f]), Buffer.alloc(2000, 0)])

let proc: BrokerProcess
let raw: RawClient

beforeAll(async () => {
  proc = await startBrokerProcess()
  raw = await RawClient.connect(proc.host, proc.port, 30000)
  const configs = { 'max.message.bytes': String(8 * MiB) }
  expect((await raw.createTopic('to-uncompressed', 1, { ...configs, 'compression.type': 'uncompressed' })).errorCode).toBe(0)
  expect((await raw.createTopic('compacted', 1, { ...configs, 'cleanup.policy': 'compact' })).errorCode).toBe(0)
  expect((await raw.createTopic('as-produced', 1, configs)).errorCode).toBe(0)
}, 60000)

afterAll(async () => {
  raw?.close()
  if (proc !== undefined) {
    await proc.kill('SIGTERM')
    rmSync(proc.dataDir, { recursive: true, force: true })
  }
})

describe('decompression bombs against a broker process', () => {
  const bombs: [string, number, () => Buffer, boolean][] = [
    ['gzip 1 GiB', 1, gzipBomb, true],
    ['zstd 1 GiB', 4, zstdBomb, ZSTD],
    ['lz4 256 MiB', 3, lz4Bomb, true],
    ['snappy block claiming 4 GiB', 2, () => snappyLie, true],
  ]
  for (const [name, codec, make, available] of bombs) {
    it.skipIf(!available)(`${name}: CORRUPT_MESSAGE, bounded memory, broker still serves`, async () => {
      const batch = bombBatch(codec, make())
      expect(batch.length).toBeLessThan(8 * MiB)
      const before = proc.rssKiB()
      let peak = before
      const sampler = setInterval(() => {
        peak = Math.max(peak, proc.rssKiB())
      }, 5)
      try {
        for (const topic of ['to-uncompressed', 'compacted', 'as-produced']) {
          const res = await raw.produce(topic, 0, batch, -1)
          expect(res.errorCode, `${topic}: ${res.errorMessage}`).toBe(ErrorCode.CORRUPT_MESSAGE)
        }
      } finally {
        clearInterval(sampler)
      }
      peak = Math.max(peak, proc.rssKiB())
      const growthMiB = (peak - before) / 1024
      console.info(`[compression-bomb] ${name} (${(batch.length / 1024).toFixed(0)} KiB sent three times): broker RSS ${Math.round(before / 1024)} -> peak ${Math.round(peak / 1024)} MiB (+${growthMiB.toFixed(1)})`)
      // The decoded-size bound for max.message.bytes 8 MiB is 32 MiB; 1 GiB would show.
      expect(growthMiB).toBeLessThan(160)
      for (const topic of ['to-uncompressed', 'compacted', 'as-produced']) expect(Number((await raw.fetch(topic, 0, 0)).highWatermark)).toBe(0)
    }, 60000)
  }

  it('normal batches still work on every topic afterwards', async () => {
    const ok = batchOf([{ key: Buffer.from('key'), value: Buffer.from('value') }])
    for (const topic of ['to-uncompressed', 'compacted', 'as-produced']) {
      const res = await raw.produce(topic, 0, Buffer.from(ok), -1)
      expect(res.errorCode).toBe(0)
      const got = decodeAllRecords(recordsBuffer(await raw.fetch(topic, 0, Number(res.baseOffset))))
      expect(got.map((r) => r.value?.toString())).toEqual(['value'])
    }
  }, 30000)
})
