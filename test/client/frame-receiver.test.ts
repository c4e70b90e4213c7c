import { describe, expect, it } from 'vitest'
import { ResponseFrameReceiver, STAGING_BYTES } from '../../src/client/frame-receiver.js'

/** Feeds bytes the way net's onread does: each read fills at most the buffer the receiver offers. */
function feed(r: ResponseFrameReceiver, stream: Buffer, readSizes: () => number): void {
  let pos = 0
  while (pos < stream.length) {
    const target = r.nextBuffer()
    const n = Math.min(target.length, stream.length - pos, Math.max(1, readSizes()))
    stream.copy(target, 0, pos, pos + n)
    pos += n
    r.onRead(n, target)
  }
}

function framed(bodies: Buffer[]): Buffer {
  return Buffer.concat(bodies.flatMap((b) => {
    const size = Buffer.alloc(4)
    size.writeInt32BE(b.length)
    return [size, b]
  }))
}

function body(length: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(length)
  for (let i = 0; i < length; i++) b[i] = (i * 31 + seed) & 0xff
  return b
}

describe('ResponseFrameReceiver', () => {
  const bodies = [body(4, 1), body(100, 2), body(STAGING_BYTES - 4, 3), body(STAGING_BYTES * 3 + 17, 4), body(9, 5), body(2 * 1024 * 1024, 6), body(5, 7)]
  const stream = framed(bodies)

  for (const [name, sizes] of [
    ['one byte per read', () => 1],
    ['7 bytes per read', () => 7],
    ['reads as large as offered', () => Number.MAX_SAFE_INTEGER],
    ['random read sizes', () => 1 + Math.floor(Math.random() * 100000)],
  ] as const) {
    it(`splits frames exactly with ${name}`, () => {
      const r = new ResponseFrameReceiver(64 * 1024 * 1024)
      const got: Buffer[] = []
      r.sink = { onFrame: (f) => got.push(Buffer.from(f)), onBadSize: (s) => { throw new Error(`bad size ${s}`) } }
      // One byte per read through 2 MiB frames would take long: that case gets the small frames only.
      const input = name === 'one byte per read' ? framed(bodies.filter((b) => b.length < 1000)) : stream
      feed(r, input, sizes)
      const want = name === 'one byte per read' ? bodies.filter((b) => b.length < 1000) : bodies
      expect(got.length).toBe(want.length)
      for (let i = 0; i < want.length; i++) expect(got[i]!.equals(want[i]!)).toBe(true)
    })
  }

  it('hands out frames that later reads do not overwrite (staging is reused)', () => {
    const r = new ResponseFrameReceiver(1024)
    const got: Buffer[] = []
    r.sink = { onFrame: (f) => got.push(f), onBadSize: () => {} }
    feed(r, framed([body(10, 1), body(10, 2)]), () => 14)
    feed(r, framed([body(10, 3)]), () => 14)
    expect(got.map((f) => f[0])).toEqual([body(10, 1)[0], body(10, 2)[0], body(10, 3)[0]])
  })

  it('reports a size prefix outside 4..max once and ignores what follows', () => {
    for (const size of [3, -1, 1025]) {
      const r = new ResponseFrameReceiver(1024)
      const bad: number[] = []
      const frames: Buffer[] = []
      r.sink = { onFrame: (f) => frames.push(f), onBadSize: (s) => bad.push(s) }
      const prefix = Buffer.alloc(4)
      prefix.writeInt32BE(size)
      feed(r, Buffer.concat([framed([body(8, 1)]), prefix, framed([body(8, 2)])]), () => 1000)
      expect(frames.length).toBe(1)
      expect(bad).toEqual([size])
    }
  })

  it('hands over the bytes from the bad size prefix on, to tell what the peer is (whole or split prefix)', () => {
    const answer = Buffer.from('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
    for (const sizes of [() => 1000, () => 2]) {
      const r = new ResponseFrameReceiver(1024)
      const starts: Buffer[] = []
      r.sink = { onFrame: () => {}, onBadSize: (_size, start) => starts.push(start) }
      feed(r, answer, sizes)
      expect(starts.length).toBe(1)
      expect(starts[0]!.toString('latin1').startsWith(sizes() === 2 ? 'HTTP' : 'HTTP/1.1 400 Bad Request')).toBe(true)
    }
  })
})
