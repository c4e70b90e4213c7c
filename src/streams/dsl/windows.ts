// Windows (Kafka's TimeWindows, SlidingWindows, SessionWindows, JoinWindows), the suppression settings
// (Suppressed, BufferConfig) and the serdes of windowed keys (WindowedSerdes). Times are milliseconds.
// Grace: how long after a window's end records for it are still accepted (measured in stream time);
// a record for a window whose end + grace has passed is late and dropped.
import { Window, Windowed, readTime, writeTime } from '../state/stores.js'
import type { Serde } from '../core/serdes.js'
import { SerializationException } from '../core/errors.js'

function checkMs(what: string, ms: number, min = 0): void {
  if (!Number.isSafeInteger(ms) || ms < min) throw new RangeError(`${what} must be an integer of at least ${min} ms, not ${ms}`)
}

/** Tumbling (advance = size) and hopping (advance < size) windows, aligned to the epoch: [start, start + size). */
export class TimeWindows {
  private constructor(
    readonly sizeMs: number,
    readonly advanceMs: number,
    readonly graceMs: number,
  ) {}

  static ofSizeWithNoGrace(sizeMs: number): TimeWindows {
    checkMs('window size', sizeMs, 1)
    return new TimeWindows(sizeMs, sizeMs, 0)
  }

  static ofSizeAndGrace(sizeMs: number, graceMs: number): TimeWindows {
    checkMs('window size', sizeMs, 1)
    checkMs('grace period', graceMs)
    return new TimeWindows(sizeMs, sizeMs, graceMs)
  }

  /** Hopping windows: a new window every advanceMs. */
  advanceBy(advanceMs: number): TimeWindows {
    checkMs('advance', advanceMs, 1)
    if (advanceMs > this.sizeMs) throw new RangeError(`advance (${advanceMs} ms) must not exceed the window size (${this.sizeMs} ms)`)
    return new TimeWindows(this.sizeMs, advanceMs, this.graceMs)
  }

  /** The windows that contain timestamp ts, oldest first. */
  windowsFor(ts: number): Window[] {
    const out: Window[] = []
    let start = Math.max(0, ts - this.sizeMs + this.advanceMs)
    start -= start % this.advanceMs
    for (; start <= ts; start += this.advanceMs) if (start + this.sizeMs > ts) out.push(new Window(start, start + this.sizeMs))
    return out
  }

  size(): number {
    return this.sizeMs
  }
}

/** Sliding windows (KIP-450): every window of timeDifference that holds a distinct set of records, end inclusive. */
export class SlidingWindows {
  private constructor(
    readonly timeDifferenceMs: number,
    readonly graceMs: number,
  ) {}

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): SlidingWindows {
    checkMs('time difference', timeDifferenceMs, 1)
    return new SlidingWindows(timeDifferenceMs, 0)
  }

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): SlidingWindows {
    checkMs('time difference', timeDifferenceMs, 1)
    checkMs('grace period', graceMs)
    return new SlidingWindows(timeDifferenceMs, graceMs)
  }
}

/** Session windows: records of a key less than inactivityGap apart belong to one session. */
export class SessionWindows {
  private constructor(
    readonly inactivityGapMs: number,
    readonly graceMs: number,
  ) {}

  static ofInactivityGapWithNoGrace(gapMs: number): SessionWindows {
    checkMs('inactivity gap', gapMs, 1)
    return new SessionWindows(gapMs, 0)
  }

  static ofInactivityGapAndGrace(gapMs: number, graceMs: number): SessionWindows {
    checkMs('inactivity gap', gapMs, 1)
    checkMs('grace period', graceMs)
    return new SessionWindows(gapMs, graceMs)
  }
}

/** Stream-stream join windows: a record joins the other side's records within [ts - before, ts + after]. */
export class JoinWindows {
  private constructor(
    readonly beforeMs: number,
    readonly afterMs: number,
    readonly graceMs: number,
  ) {}

  static ofTimeDifferenceWithNoGrace(timeDifferenceMs: number): JoinWindows {
    checkMs('time difference', timeDifferenceMs)
    return new JoinWindows(timeDifferenceMs, timeDifferenceMs, 0)
  }

  static ofTimeDifferenceAndGrace(timeDifferenceMs: number, graceMs: number): JoinWindows {
    checkMs('time difference', timeDifferenceMs)
    checkMs('grace period', graceMs)
    return new JoinWindows(timeDifferenceMs, timeDifferenceMs, graceMs)
  }

  before(beforeMs: number): JoinWindows {
    checkMs('before', beforeMs)
    return new JoinWindows(beforeMs, this.afterMs, this.graceMs)
  }

  after(afterMs: number): JoinWindows {
    checkMs('after', afterMs)
    return new JoinWindows(this.beforeMs, afterMs, this.graceMs)
  }

  size(): number {
    return this.beforeMs + this.afterMs
  }
}

export class BufferConfig {
  private constructor(
    readonly maxRecords: number,
    readonly whenFull: 'emitEarly' | 'shutDown',
  ) {}

  static unbounded(): BufferConfig {
    return new BufferConfig(Infinity, 'shutDown')
  }

  static maxRecords(n: number): BufferConfig {
    checkMs('max records', n, 1)
    return new BufferConfig(n, 'shutDown')
  }

  emitEarlyWhenFull(): BufferConfig {
    return new BufferConfig(this.maxRecords, 'emitEarly')
  }

  shutDownWhenFull(): BufferConfig {
    return new BufferConfig(this.maxRecords, 'shutDown')
  }
}

/** How KTable.suppress holds back updates (Kafka's Suppressed). */
export class Suppressed {
  private constructor(
    readonly mode: 'untilWindowCloses' | 'untilTimeLimit',
    readonly timeLimitMs: number,
    readonly buffer: BufferConfig,
    readonly name?: string,
  ) {}

  /** Only the final result of each window, once stream time passes its end plus grace. */
  static untilWindowCloses(buffer: BufferConfig): Suppressed {
    if (buffer.whenFull === 'emitEarly' && buffer.maxRecords !== Infinity) throw new RangeError('untilWindowCloses needs a buffer that never emits early (final results only): use shutDownWhenFull()')
    return new Suppressed('untilWindowCloses', 0, buffer)
  }

  /** Each key's latest value at most once per timeLimit of stream time. */
  static untilTimeLimit(timeLimitMs: number, buffer: BufferConfig): Suppressed {
    checkMs('time limit', timeLimitMs)
    return new Suppressed('untilTimeLimit', timeLimitMs, buffer)
  }

  withName(name: string): Suppressed {
    return new Suppressed(this.mode, this.timeLimitMs, this.buffer, name)
  }
}

/** Serdes of windowed keys, in Kafka's layouts: time windows [key][start int64], sessions [key][end int64][start int64]. */
export const WindowedSerdes = {
  timeWindowedSerdeFrom<K>(inner: Serde<K>, windowSizeMs: number): Serde<Windowed<K>> {
    return {
      name: `TimeWindowed(${inner.name ?? 'serde'})`,
      serializer: {
        serialize(topic, data) {
          if (data === null) return null
          const k = inner.serializer.serialize(topic, data.key) ?? Buffer.alloc(0)
          const out = Buffer.allocUnsafe(k.length + 8)
          k.copy(out, 0)
          writeTime(out, k.length, data.window.start)
          return out
        },
      },
      deserializer: {
        deserialize(topic, data) {
          if (data === null) return null
          if (data.length < 8) throw new SerializationException('a time-windowed key needs at least 8 bytes')
          const start = readTime(data, data.length - 8)
          return new Windowed(inner.deserializer.deserialize(topic, data.subarray(0, data.length - 8)) as K, new Window(start, start + windowSizeMs))
        },
      },
    }
  },
  sessionWindowedSerdeFrom<K>(inner: Serde<K>): Serde<Windowed<K>> {
    return {
      name: `SessionWindowed(${inner.name ?? 'serde'})`,
      serializer: {
        serialize(topic, data) {
          if (data === null) return null
          const k = inner.serializer.serialize(topic, data.key) ?? Buffer.alloc(0)
          const out = Buffer.allocUnsafe(k.length + 16)
          k.copy(out, 0)
          writeTime(out, k.length, data.window.end)
          writeTime(out, k.length + 8, data.window.start)
          return out
        },
      },
      deserializer: {
        deserialize(topic, data) {
          if (data === null) return null
          if (data.length < 16) throw new SerializationException('a session-windowed key needs at least 16 bytes')
          const end = readTime(data, data.length - 16)
          const start = readTime(data, data.length - 8)
          return new Windowed(inner.deserializer.deserialize(topic, data.subarray(0, data.length - 16)) as K, new Window(start, end))
        },
      },
    }
  },
}
