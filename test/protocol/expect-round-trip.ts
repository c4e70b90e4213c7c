// The round-trip check the codec tests share: decode gives back the message and reads every byte, and
// encoding what was decoded gives the same bytes.
import { expect } from 'vitest'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'

export interface Codec<M> {
  encode(w: Writer, msg: M, version: number): void
  decode(r: Reader, version: number): M
}

/** Asserts that msg round-trips at version; answers its bytes. */
export function expectRoundTrip<M>(c: Codec<M>, msg: M, version: number): Buffer {
  const w = new Writer(16)
  c.encode(w, msg, version)
  const bytes = w.toBuffer()
  expect(bytes.length).toBe(w.length)
  const r = new Reader(bytes)
  const decoded = c.decode(r, version)
  expect(r.remaining).toBe(0)
  expect(decoded).toEqual(msg)
  const again = new Writer()
  c.encode(again, decoded, version)
  expect(again.toBuffer().equals(bytes)).toBe(true)
  return bytes
}
