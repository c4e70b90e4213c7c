// A broker with the REST Proxy and Skein's web front on one HTTP server, as main.ts starts them inside a
// broker process (the broker's own metrics registry behind /metrics), all on real sockets.
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import { webFront, type WebApp } from '../../src/console/index.js'
import { silentLogger } from '../../src/observability/logger.js'
import { RestProxy } from '../../src/rest/index.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'

export interface WebFrontSetup {
  broker: TestBroker
  proxy: RestProxy
  app: WebApp
  /** http://127.0.0.1:<port> */
  base: string
  port: number
  /** What /ready reads: true once the process is stopping. */
  setStopping(v: boolean): void
  stop(): Promise<void>
  /** Stops the broker, runs between(), then starts it again on the same port and data dir. */
  restartBroker(between: () => Promise<void>): Promise<void>
}

const BROKER_OVERRIDES = ['group.initial.rebalance.delay.ms=0', 'num.partitions=1']

export async function startWebFront(opts: { settings?: Record<string, string>; brokerOverrides?: string[] } = {}): Promise<WebFrontSetup> {
  const broker = await startTestBroker(BROKER_OVERRIDES.concat(opts.brokerOverrides ?? []))
  const entries: [string, string][] = [['listeners', 'http://127.0.0.1:0'], ['bootstrap.servers', broker.bootstrap], ...Object.entries(opts.settings ?? {})]
  const settings = restSettings(parseRestProperties(entries))
  let stopping = false
  let app: WebApp | undefined
  const extend = webFront({ settings, bootstrapServers: [broker.bootstrap], log: silentLogger(), brokerMetrics: broker.broker.metrics.registry, stopping: () => stopping, onMounted: (a) => (app = a) })
  const proxy = await RestProxy.start({ settings, bootstrapServers: [broker.bootstrap], logger: silentLogger(), extend })
  const base = proxy.listeners[0]!.url
  const setup: WebFrontSetup = {
    broker,
    proxy,
    app: app!,
    base,
    port: proxy.listeners[0]!.port,
    setStopping: (v) => (stopping = v),
    async stop() {
      await proxy.stop()
      await setup.broker.stop()
    },
    async restartBroker(between) {
      const { dataDir, port } = setup.broker
      await setup.broker.broker.stop()
      try {
        await between()
      } finally {
        setup.broker = await startTestBroker(BROKER_OVERRIDES.concat(opts.brokerOverrides ?? []), { dataDir, port })
      }
    },
  }
  return setup
}

/** Polls until check returns something other than undefined, or throws after timeoutMs. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, what = 'the condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await check()
      if (v !== undefined) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
