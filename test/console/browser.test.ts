// The web console end to end in a real browser: Debian's Chromium, headless, started by this test on a
// free --remote-debugging-port and driven over the DevTools protocol (playwright-core's connectOverCDP),
// against a real broker process serving the console on rest.listeners (`node dist/src/main.js`, as
// `npm start` does). Every page loads with no console error; a topic created in the UI is listed by
// `skein topics --list`; a record produced by a Kafka client appears in the browser's live tail (over
// the WebSocket) within a second; screenshots of each page go to tmp/console-screenshots/.
// Needs `npx tsc -p tsconfig.json` first (the broker and skein run from dist/) and the chromium package.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Consumer, Producer, ShareConsumer } from '../../src/client/index.js'
import { skein } from '../cli/helpers.js'
import { freePort, REPO_ROOT, startBrokerProcess, type BrokerProcess } from '../harness/broker.js'

const CHROMIUM = '/usr/bin/chromium'
const SCREENSHOTS = join(REPO_ROOT, 'tmp', 'console-screenshots')

let broker: BrokerProcess
let base: string
let chrome: ChildProcess
let profileDir: string
let browser: Browser
let page: Page
/** Console errors and uncaught exceptions of the page, with the page they happened on. */
const errors: string[] = []

async function startChromium(): Promise<{ child: ChildProcess; endpoint: string }> {
  const port = await freePort()
  profileDir = mkdtempSync(join(tmpdir(), 'skein-chromium-'))
  const child = spawn(
    CHROMIUM,
    ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check', '--remote-debugging-address=127.0.0.1', `--remote-debugging-port=${port}`, `--user-data-dir=${profileDir}`, '--window-size=1280,900', 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)))
  const endpoint = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 20_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`chromium exited with ${child.exitCode}:\n${stderr}`)
    try {
      const r = await fetch(`${endpoint}/json/version`)
      if (r.ok) return { child, endpoint }
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`chromium's DevTools endpoint did not answer:\n${stderr}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Stops the browser this test started, by its pid: SIGTERM, then SIGKILL if it lingers. */
async function stopChromium(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  process.kill(child.pid, 'SIGTERM')
  const killed = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))])
  if (!killed && child.exitCode === null) {
    process.kill(child.pid, 'SIGKILL')
    await exited
  }
}

/** A page expression (run in the browser, hence a string): the element with this id shows the text. */
const textIn = (id: string, text: string): string => `document.getElementById(${JSON.stringify(id)})?.textContent?.includes(${JSON.stringify(text)}) === true`

async function show(hash: string, ready: string, shot: string): Promise<void> {
  const before = errors.length
  await page.goto(`${base}/console/${hash}`)
  await page.waitForSelector(ready, { timeout: 15_000 })
  await page.screenshot({ path: join(SCREENSHOTS, `${shot}.png`), fullPage: true })
  expect(errors.slice(before), `console errors on ${hash}`).toEqual([])
}

beforeAll(async () => {
  expect(existsSync(CHROMIUM), 'Debian chromium is installed (apt-get install chromium)').toBe(true)
  mkdirSync(SCREENSHOTS, { recursive: true })
  const restPort = await freePort()
  broker = await startBrokerProcess({ overrides: [`rest.listeners=http://127.0.0.1:${restPort}`, 'group.initial.rebalance.delay.ms=0'] })
  base = `http://127.0.0.1:${restPort}`
  const deadline = Date.now() + 15_000
  while (!broker.output().includes('REST Proxy listening') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  const started = await startChromium()
  chrome = started.child
  browser = await chromium.connectOverCDP(started.endpoint)
  const context = browser.contexts()[0] ?? (await browser.newContext())
  page = await context.newPage()
  await page.setViewportSize({ width: 1280, height: 900 })
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${page.url()}: ${m.text()}`)
  })
  page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`))
}, 60_000)

afterAll(async () => {
  await browser?.close().catch(() => {})
  await stopChromium(chrome)
  // Chromium's helper processes (crashpad, GPU) may still write to the profile for a moment after the
  // browser process exited: removing it then meets ENOTEMPTY, so it is retried for up to a second.
  // A profile a late helper process still writes to is left in the temp folder rather than failing the
  // file's tests after they passed (ENOTEMPTY once in a fresh-clone run); the broker is stopped either way.
  try {
    if (profileDir !== undefined) rmSync(profileDir, { recursive: true, force: true, maxRetries: 30, retryDelay: 100 })
  } catch (err) {
    console.warn(`left Chromium's profile ${profileDir}: ${(err as Error).message}`)
  } finally {
    await broker?.kill('SIGTERM')
  }
})

describe('web console in headless Chromium', () => {
  it('the overview shows the cluster and its broker as controller, and the throughput charts', async () => {
    await show('', '#brokers tbody tr', 'overview')
    const row = await page.textContent('#brokers tbody tr')
    expect(row).toContain(`127.0.0.1:${broker.port}`)
    expect(row).toContain('controller')
    expect(row).toContain('up')
    expect(await page.isVisible('#chart-records')).toBe(true)
    // The charts sample every second: after two samples the rate is a number.
    await page.waitForFunction(`document.getElementById('rate-records')?.textContent?.endsWith('/s')`, undefined, { timeout: 10_000 })
  })

  it('a topic created in the UI is listed by skein topics --list', async () => {
    await show('#/topics', '#create-topic', 'topics-before')
    await page.fill('#create-topic input[name=name]', 'ui-made')
    await page.fill('#create-topic input[name=partitions]', '3')
    await page.fill('#create-topic input[name=configs]', 'retention.ms=3600000')
    await page.click('#create-topic button[type=submit]')
    await page.waitForSelector('tr[data-topic="ui-made"]', { timeout: 15_000 })
    await page.screenshot({ path: join(SCREENSHOTS, 'topics-after-create.png'), fullPage: true })
    expect(errors).toEqual([])
    const listed = await skein(['topics', '--bootstrap-server', broker.bootstrap, '--list'])
    expect(listed.code, listed.stderr.toString()).toBe(0)
    expect(listed.out.split('\n')).toContain('ui-made')
    const described = await skein(['topics', '--bootstrap-server', broker.bootstrap, '--describe', '--topic', 'ui-made'])
    expect(described.out).toContain('PartitionCount: 3')
    expect(described.out).toContain('retention.ms=3600000')
  })

  it('topic pages: partitions and configs', async () => {
    await show('#/topics/ui-made', '#partitions tbody tr', 'topic-partitions')
    expect(await page.locator('#partitions tbody tr').count()).toBe(3)
    await show('#/topics/ui-made/configs', '#configs tbody tr', 'topic-configs')
    expect(await page.textContent('#configs')).toContain('3600000')
  })

  it('a record produced by a Kafka client appears in the live tail within a second', async () => {
    await show('#/topics/ui-made/messages', '#tail tbody[data-ready="1"]', 'messages-live-before')
    const producer = new Producer({ bootstrapServers: broker.bootstrap, lingerMs: 0 })
    try {
      const value = `live tail check ${Date.now()}`
      const sent = Date.now()
      await producer.send({ topic: 'ui-made', partition: 1, key: 'tail-key', value, headers: { origin: 'test' } })
      await page.waitForFunction(textIn('tail', value), undefined, { timeout: 5000, polling: 20 })
      const elapsed = Date.now() - sent
      await page.screenshot({ path: join(SCREENSHOTS, 'messages-live-after.png'), fullPage: true })
      expect(elapsed, `the record took ${elapsed} ms to show`).toBeLessThan(1000)
      const row = await page.textContent('#tail tbody tr')
      expect(row).toContain('tail-key')
      expect(row).toContain('origin=test')

      // The browser: partition 1 from offset 0 shows the same record.
      await page.selectOption('#browse select[name=partition]', '1')
      await page.fill('#browse input[name=at]', '0')
      await page.click('#browse button[type=submit]')
      await page.waitForFunction(textIn('records', value), undefined, { timeout: 10_000 })
      await page.screenshot({ path: join(SCREENSHOTS, 'messages-browser.png'), fullPage: true })
    } finally {
      await producer.close()
    }
    expect(errors).toEqual([])
  })

  it('consumer groups: the list and a group with its lag per partition and the lag chart', async () => {
    const producer = new Producer({ bootstrapServers: broker.bootstrap, lingerMs: 0 })
    await producer.sendBatch(Array.from({ length: 6 }, (_, i) => ({ topic: 'ui-made', partition: i % 3, value: `g${i}` })))
    await producer.close()
    const consumer = new Consumer({ bootstrapServers: broker.bootstrap, groupId: 'ui-group', enableAutoCommit: false, autoOffsetReset: 'earliest' })
    consumer.subscribe(['ui-made'])
    try {
      let got = 0
      const deadline = Date.now() + 15_000
      while (got < 7 && Date.now() < deadline) got += (await consumer.poll(300)).length
      await consumer.commit([{ topic: 'ui-made', partition: 0, offset: 1 }])
      await show('#/groups', '#groups tbody tr', 'groups')
      expect(await page.textContent('#groups')).toContain('ui-group')
      await show('#/groups/ui-group', '#lag tbody tr', 'group')
      const lagTable = await page.textContent('#lag')
      expect(lagTable).toContain('ui-made')
      expect(await page.isVisible('#lag-chart')).toBe(true)
    } finally {
      await consumer.close()
    }
  })

  it('share groups (KIP-932): listed with the consumer groups, a group with its start offset, lag and records in flight per share-partition', async () => {
    const producer = new Producer({ bootstrapServers: broker.bootstrap, lingerMs: 0 })
    await producer.sendBatch(Array.from({ length: 4 }, (_, i) => ({ topic: 'ui-made', partition: 0, value: `s${i}` })))
    await producer.close()
    expect((await skein(['configs', '--bootstrap-server', broker.bootstrap, '--entity-type', 'groups', '--entity-name', 'ui-share', '--alter', '--add-config', 'share.auto.offset.reset=earliest'])).code).toBe(0)
    const worker = new ShareConsumer({ bootstrapServers: broker.bootstrap, groupId: 'ui-share', clientId: 'ui-worker' })
    worker.subscribe(['ui-made'])
    try {
      const deadline = Date.now() + 15_000
      let held = 0
      while ((held = (await worker.poll(300)).length) === 0 && Date.now() < deadline);
      expect(held).toBeGreaterThan(0)
      // Held, not yet acknowledged: the records are in flight, on the list and on the group's page.
      await show('#/groups', '#groups tbody tr', 'groups-share')
      const list = await page.textContent('#groups')
      expect(list).toContain('ui-share')
      expect(list).toContain('share')
      expect(list).toContain('In flight')
      const row = await page.textContent('#groups tbody tr:has(a[href="#/groups/ui-share"])')
      expect(row?.trim().endsWith(String(held))).toBe(true)
      await show('#/groups/ui-share', '#lag tbody tr', 'share-group')
      expect(await page.textContent('#lag')).toContain('Start offset')
      expect(await page.textContent('#lag')).toContain('In flight')
      expect(await page.textContent('#lag')).toContain('ui-made')
      expect(await page.textContent('#lag tbody')).toContain('ui-worker')
      expect(await page.textContent('#total-in-flight')).toBe(String(held))
      expect(await page.textContent('#members')).toContain('ui-worker')
      await worker.commitSync()
      await page.waitForFunction("document.getElementById('total-in-flight')?.textContent === '0'", undefined, { timeout: 10_000 })
    } finally {
      await worker.close()
    }
  })

  it('deleting a topic in the UI removes it from the cluster', async () => {
    await show('#/topics', 'tr[data-topic="ui-made"]', 'topics-before-delete')
    await page.click('[data-delete="ui-made"]')
    await page.click('[data-delete="ui-made"]')
    await page.waitForSelector('tr[data-topic="ui-made"]', { state: 'detached', timeout: 15_000 })
    const listed = await skein(['topics', '--bootstrap-server', broker.bootstrap, '--list'])
    expect(listed.out.split('\n')).not.toContain('ui-made')
    expect(errors).toEqual([])
  })
})
