// What Produce v0-2 and Fetch v0-3 need besides the converters of protocol/records/legacy-message-set.ts:
// the topic settings they follow (max.message.bytes, message.timestamp.type, the topic's override or
// else the broker's default, as the log has them) and the reading of a fetch's file regions into
// memory, since a down-converted answer cannot be sent with sendfile.
import { read as fsRead } from 'node:fs'
import { brokerDefaultFor, topicConfigDef, validateTopicConfigs, type ConfigValue } from '../../../config/index.js'
import type { FileRegion } from '../../../domain/file-region.js'
import type { RequestContext } from './context.js'

/** A topic config's effective value: the topic's override, else the broker's default for it. */
export function topicSetting(ctx: Pick<RequestContext, 'metadata' | 'configs'>, topic: string, name: string): ConfigValue {
  const own = ctx.metadata.topic(topic)?.configs[name]
  if (own !== undefined) {
    const parsed = validateTopicConfigs({ [name]: own }).get(name)
    if (parsed !== undefined && parsed !== null) return parsed
  }
  return brokerDefaultFor(topicConfigDef(name)!, ctx.configs.broker).parsed
}

/** The bytes of file regions (and buffers), in order, read asynchronously into one buffer of their total length. */
export async function readRegionsAsync(regions: readonly (FileRegion | Buffer)[]): Promise<Buffer> {
  let total = 0
  for (const r of regions) total += r.length
  const out = Buffer.allocUnsafe(total)
  let at = 0
  for (const r of regions) {
    if (Buffer.isBuffer(r)) {
      r.copy(out, at)
      at += r.length
      continue
    }
    let filled = 0
    while (filled < r.length) {
      const n = await new Promise<number>((resolve, reject) => {
        fsRead(r.fd, out, at + filled, r.length - filled, r.position + filled, (err, bytes) => (err ? reject(err) : resolve(bytes)))
      })
      if (n === 0) throw new Error(`file region ended after ${filled} of ${r.length} bytes`)
      filled += n
    }
    at += r.length
  }
  return out
}
