// Record headers (Kafka's Headers): an ordered list of (key, value) pairs where a key may repeat.
import type { Header } from '../../client/records.js'

export class Headers implements Iterable<Header> {
  private readonly list: Header[]

  constructor(headers: readonly Header[] = []) {
    this.list = headers.length === 0 ? [] : headers.slice()
  }

  /** Appends a header (keys may repeat); returns this for chaining. */
  add(key: string, value: Buffer | string | null): this {
    this.list.push({ key, value: typeof value === 'string' ? Buffer.from(value) : value })
    return this
  }

  /** Removes every header with this key. */
  remove(key: string): this {
    for (let i = this.list.length - 1; i >= 0; i--) if (this.list[i]!.key === key) this.list.splice(i, 1)
    return this
  }

  lastHeader(key: string): Header | undefined {
    for (let i = this.list.length - 1; i >= 0; i--) if (this.list[i]!.key === key) return this.list[i]
    return undefined
  }

  headers(key: string): Header[] {
    return this.list.filter((h) => h.key === key)
  }

  toArray(): Header[] {
    return this.list.slice()
  }

  get size(): number {
    return this.list.length
  }

  [Symbol.iterator](): Iterator<Header> {
    return this.list[Symbol.iterator]()
  }
}
