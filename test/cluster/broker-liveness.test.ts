// The controller's failure detection rules (src/cluster/controller/broker-liveness.ts) over probe links
// that a test double plays (a unit test: the real links, and what the controller does with the verdicts,
// are tested against broker processes in failure-detection.test.ts).
import { afterEach, describe, expect, it } from 'vitest'
import { BrokerLivenessMonitor, type ProbeLink, type ProbeLinkFactory } from '../../src/cluster/controller/broker-liveness.js'
import type { RegisteredBroker } from '../../src/cluster/metadata-store.js'
import { silentLogger } from '../../src/observability/logger.js'

type Mode = 'answer' | 'silent' | 'refuse'

/** Brokers whose behaviour the test sets: answering pings, silent (pings hang), or refusing connections. */
class FakeBrokers {
  readonly modes = new Map<number, Mode>()
  readonly #links = new Map<number, Set<{ close(): void }>>()

  factory: ProbeLinkFactory = async ({ port }) => {
    const id = port
    if (this.modes.get(id) === 'refuse') throw Object.assign(new Error('connection refused'), { refused: true })
    const listeners: (() => void)[] = []
    let closed = false
    const link: ProbeLink & { close(): void } = {
      ping: () =>
        new Promise((resolve, reject) => {
          if (closed) return reject(new Error('closed'))
          if (this.modes.get(id) === 'answer') return resolve()
          // Silent: never answers (a paused process); the link's close rejects it.
          listeners.push(() => reject(new Error('closed')))
        }),
      onClose: (l) => listeners.push(l),
      close: () => {
        if (closed) return
        closed = true
        this.#links.get(id)?.delete(link)
        for (const l of listeners.splice(0)) l()
      },
    }
    let set = this.#links.get(id)
    if (set === undefined) this.#links.set(id, (set = new Set()))
    set.add(link)
    return link
  }

  /** The process dies: its connections close, its port refuses. */
  kill(id: number): void {
    this.modes.set(id, 'refuse')
    for (const l of [...(this.#links.get(id) ?? [])]) l.close()
  }
}

const broker = (id: number, epoch = 100n + BigInt(id)): RegisteredBroker => ({
  id,
  epoch,
  rack: null,
  endpoints: [{ listenerName: 'PLAINTEXT', securityProtocol: 'PLAINTEXT', host: '127.0.0.1', port: id }],
} as unknown as RegisteredBroker)

const settings = { intervalMs: 20, sessionTimeoutMs: 300 }

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('broker liveness (the controller pinging brokers)', () => {
  let monitor: BrokerLivenessMonitor | undefined
  afterEach(() => monitor?.stop())

  function start(brokers: FakeBrokers, events: string[], lastHeardFrom?: (id: number) => number | undefined): BrokerLivenessMonitor {
    monitor = new BrokerLivenessMonitor({
      localBrokerId: 1,
      connect: brokers.factory,
      interBrokerListener: 'PLAINTEXT',
      settings,
      onUnreachable: (id, epoch, reason) => events.push(`down ${id}@${epoch} ${reason}`),
      onReachable: (id, epoch) => events.push(`up ${id}@${epoch}`),
      lastHeardFrom,
      log: silentLogger(),
    })
    return monitor
  }

  it('calls a killed broker unreachable from its closed connection and refused port, and never takes that registration back', async () => {
    const brokers = new FakeBrokers()
    for (const id of [2, 3]) brokers.modes.set(id, 'answer')
    const events: string[] = []
    const m = start(brokers, events)
    m.add(broker(2))
    m.add(broker(3))
    await new Promise((r) => setTimeout(r, 100))
    expect(events).toEqual([])
    brokers.kill(3)
    await until('broker 3 down', () => events.length > 0)
    expect(events).toEqual(['down 3@103 its port refuses connections'])
    // A new process on the port answers: not this registration (it comes back registered anew).
    brokers.modes.set(3, 'answer')
    await new Promise((r) => setTimeout(r, settings.sessionTimeoutMs * 2))
    expect(events).toEqual(['down 3@103 its port refuses connections'])
    m.add(broker(3, 999n))
    await new Promise((r) => setTimeout(r, settings.sessionTimeoutMs * 2))
    expect(events).toEqual(['down 3@103 its port refuses connections'])
  })

  it('fences a broker silent after it spoke, only while another answers, and takes it back once it answers again', async () => {
    const brokers = new FakeBrokers()
    brokers.modes.set(2, 'answer')
    brokers.modes.set(3, 'silent')
    const events: string[] = []
    const m = start(brokers, events)
    m.add(broker(2))
    m.add(broker(3))
    // Silent from the start: it never spoke, so it is left to its session.
    await new Promise((r) => setTimeout(r, settings.sessionTimeoutMs * 3))
    expect(events).toEqual([])
    brokers.modes.set(3, 'answer')
    await new Promise((r) => setTimeout(r, settings.intervalMs * 5))
    brokers.modes.set(3, 'silent')
    await until('broker 3 down', () => events.length > 0)
    expect(events[0]).toMatch(/^down 3@103 no answer for \d+ ms$/)
    expect(events).toHaveLength(1)
    brokers.modes.set(3, 'answer')
    await until('broker 3 up', () => events.length > 1)
    expect(events.slice(1)).toEqual(['up 3@103'])
  })

  it("leaves the controller's own stalls out of a broker's silence (no ping went out while it was held)", async () => {
    const brokers = new FakeBrokers()
    brokers.modes.set(2, 'answer')
    brokers.modes.set(3, 'answer')
    const events: string[] = []
    const m = start(brokers, events)
    m.add(broker(2))
    m.add(broker(3))
    await new Promise((r) => setTimeout(r, settings.intervalMs * 5))
    brokers.modes.set(3, 'silent')
    const silentAt = performance.now()
    // Two stalls of this process, each over a heartbeat interval and under the restart-every-clock length.
    for (let i = 0; i < 2; i++) {
      const until = performance.now() + 120
      while (performance.now() < until) {
        // held, as by a long synchronous step
      }
      await new Promise((r) => setTimeout(r, 30))
    }
    await until('broker 3 down', () => events.length > 0)
    // Fenced after its silence plus the stalls (about 300 + 240 ms), not after 300 ms of which 240 were ours.
    expect(performance.now() - silentAt).toBeGreaterThanOrEqual(settings.sessionTimeoutMs + 150)
    expect(events[0]).toMatch(/^down 3@103 no answer for \d+ ms$/)
  })

  it('fences nobody for silence when no broker answers (the controller is the one cut off)', async () => {
    const brokers = new FakeBrokers()
    brokers.modes.set(2, 'silent')
    brokers.modes.set(3, 'silent')
    const events: string[] = []
    const m = start(brokers, events)
    m.add(broker(2))
    m.add(broker(3))
    await new Promise((r) => setTimeout(r, settings.sessionTimeoutMs * 4))
    expect(events).toEqual([])
    // A refused port is still decisive.
    brokers.kill(2)
    await until('broker 2 down', () => events.length > 0)
    expect(events).toEqual(['down 2@102 its port refuses connections'])
  })

  it("starts a broker out as silent as this broker's own watch last heard it, and reports refusing brokers at the first look", async () => {
    const brokers = new FakeBrokers()
    brokers.modes.set(2, 'answer')
    brokers.modes.set(3, 'silent')
    brokers.modes.set(4, 'refuse')
    const events: string[] = []
    const longAgo = performance.now() - 60_000
    const m = start(brokers, events, (id) => (id === 3 ? longAgo : undefined))
    expect(await m.refusing([broker(1), broker(2), broker(3), broker(4)], 500)).toEqual([4])
    // Broker 3 was last heard a minute ago: down at the first checks, not a session timeout later.
    await until('broker 3 down', () => events.some((e) => e.startsWith('down 3@')))
    expect(events.find((e) => e.startsWith('down 3@'))).toMatch(/no answer for \d{5} ms/)
    expect(events.filter((e) => e.startsWith('down 2@'))).toEqual([])
  })

  it('does not probe its own broker', async () => {
    const brokers = new FakeBrokers()
    const events: string[] = []
    const m = start(brokers, events)
    m.add(broker(1))
    expect(m.msSinceAnyAnswered()).toBe(0)
    await new Promise((r) => setTimeout(r, settings.sessionTimeoutMs * 2))
    expect(events).toEqual([])
  })
})
