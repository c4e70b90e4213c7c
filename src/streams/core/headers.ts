// Record headers (Kafka's Headers): an ordered list of (key, value) pairs where a key may repeat.
// Most records have none: the list is only made on the first add (a Headers per record is the cost).
import type { Header } from '../../client/record-batches.js'

export class Headers implements Iterable<Header> {
  private list: Header[] | null

  constructor(headers: readonly Header[] = []) {
    this.list = headers.length === 0 ? null : headers.slice()
  }

  /** Appends a header (keys may repeat); returns this for chaining. */
  add(key: string, value: Buffer | string | null): this {
    ;(this.list ??= []).push({ key, value: typeof value === 'string' ? Buffer.from(value) : value })
    return this
  }

  /** Removes every header with this key. */
  remove(key: string): this {
    const list = this.list
    if (list !== null) for (let i = list.length - 1; i >= 0; i--) if (list[i]!.key === key) list.splice(i, 1)
    return this
  }

  lastHeader(key: string): Header | undefined {
    const list = this.list
    if (list !== null) for (let i = list.length - 1; i >= 0; i--) if (list[i]!.key === key) return list[i]
    return undefined
  }

  headers(key: string): Header[] {
    return this.list === null ? [] : this.list.filter((h) => h.key === key)
  }

  toArray(): Header[] {
    return this.list === null ? [] : this.list.slice()
  }

  get size(): number {
    return this.list === null ? 0 : this.list.length
  }

  [Symbol.iterator](): Iterator<Header> {
    return (this.list ?? [])[Symbol.iterator]()
  }
}
