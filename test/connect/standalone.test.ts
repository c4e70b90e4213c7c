// `skein connect standalone worker.properties source.properties sink.properties` as a real process
// against a broker: a FileStreamSource copies a file's lines into a topic and a FileStreamSink writes them
// to another file; source offsets go to offset.storage.file.filename (Kafka's key format); after SIGTERM
// and a restart the source resumes after its last committed line and the sink after its committed
// consumer offsets, so the output holds every line once. Then a sink whose converter fails with
// errors.tolerance=none: the task is FAILED with its trace, and POST /connectors/{c}/restart with
// includeTasks and onlyFailed restarts it.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Admin, Producer } from '../../src/client/index.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'
import { rest, startWorker, waitFor, type WorkerProcess } from './helpers.js'

function propsFile(dir: string, name: string, props: Record<string, string>): string {
  const file = join(dir, name)
  writeFileSync(file, Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n') + '\n')
  return file
}

const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '') : [])

describe('Connect standalone: skein connect standalone with FileStream connectors', () => {
  let broker: TestBroker
  let worker: WorkerProcess | undefined
  const dir = mkdtempSync(join(tmpdir(), 'skein-connect-standalone-'))
  const input = join(dir, 'in.txt')
  const output = join(dir, 'out.txt')
  const offsetsFile = join(dir, 'connect.offsets')
  let workerProps: Record<string, string>
  let connectorFiles: string[]

  beforeAll(async () => {
    broker = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'num.partitions=1'])
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([{ name: 'lines', numPartitions: 1, replicationFactor: 1 }, { name: 'strict', numPartitions: 1, replicationFactor: 1 }])
    await admin.close()
    workerProps = {
      'bootstrap.servers': broker.bootstrap,
      'key.converter': 'org.apache.kafka.connect.json.JsonConverter',
      'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
      'offset.storage.file.filename': offsetsFile,
      'offset.flush.interval.ms': '300',
      listeners: 'http://127.0.0.1:0',
    }
    connectorFiles = [
      propsFile(dir, 'source.properties', { name: 'lines-source', 'connector.class': 'FileStreamSource', 'tasks.max': '1', file: input, topic: 'lines' }),
      propsFile(dir, 'sink.properties', { name: 'lines-sink', 'connector.class': 'FileStreamSink', 'tasks.max': '1', file: output, topics: 'lines' }),
    ]
  }, 60000)

  afterAll(async () => {
    await worker?.kill('SIGTERM').catch(() => {})
    await broker?.stop().catch(() => {})
  }, 60000)

  test('lines flow file → topic → file; offsets in the offsets file; a restart resumes without duplicates', async () => {
    writeFileSync(input, Array.from({ length: 50 }, (_v, i) => `line ${i + 1}`).join('\n') + '\n')
    worker = await startWorker('standalone', workerProps, connectorFiles)
    const list = await rest(worker.url, 'GET', '/connectors?expand=status')
    expect(Object.keys(list.body).sort()).toEqual(['lines-sink', 'lines-source'])
    await waitFor('50 lines in the output', async () => lines(output).length >= 50)
    // The last line's end: 9 lines of 7 bytes, 41 of 8.
    const end = 9 * 7 + 41 * 8
    await waitFor('the source offset in the offsets file', async () => existsSync(offsetsFile) && readFileSync(offsetsFile, 'utf8').includes(`["lines-source",{"filename":"${input}"}]\t{"position":${end}}`))
    expect((await rest(worker.url, 'GET', '/connectors/lines-source/offsets')).body).toEqual({ offsets: [{ partition: { filename: input }, offset: { position: end } }] })
    await waitFor('the sink offsets committed', async () => {
      const o = await rest(worker!.url, 'GET', '/connectors/lines-sink/offsets')
      return o.body.offsets?.[0]?.offset.kafka_offset === 50
    }, 30000)
    await worker.kill('SIGTERM')
    expect(worker.output()).not.toMatch(/FATAL|uncaught/i)

    appendFileSync(input, Array.from({ length: 20 }, (_v, i) => `line ${i + 51}`).join('\n') + '\n')
    worker = await startWorker('standalone', workerProps, connectorFiles)
    await waitFor('70 lines in the output', async () => lines(output).length >= 70)
    await new Promise((r) => setTimeout(r, 1500))
    expect(lines(output)).toEqual(Array.from({ length: 70 }, (_v, i) => `line ${i + 1}`))

    // GET /metrics: Kafka's worker and task metrics under the JMX exporter's names, counted since this
    // (re)start: the source polled and wrote the 20 new lines, the sink read and put them.
    const metrics = await (await fetch(`${worker.url}/metrics`)).text()
    for (const line of [
      'kafka_connect_connect_worker_metrics_connector_count 2',
      'kafka_connect_connect_worker_metrics_task_count 2',
      'kafka_connect_connect_worker_metrics_connector_startup_success_total 2',
      'kafka_connect_connect_worker_metrics_task_startup_success_total 2',
      'kafka_connect_connect_worker_metrics_task_startup_failure_total 0',
      'kafka_connect_connect_worker_metrics_connector_running_task_count{connector="lines-source"} 1',
      'kafka_connect_connect_worker_metrics_connector_total_task_count{connector="lines-sink"} 1',
      'kafka_connect_source_task_metrics_source_record_poll_total{connector="lines-source",task="0"} 20',
      'kafka_connect_source_task_metrics_source_record_write_total{connector="lines-source",task="0"} 20',
      'kafka_connect_sink_task_metrics_sink_record_read_total{connector="lines-sink",task="0"} 20',
      'kafka_connect_sink_task_metrics_sink_record_send_total{connector="lines-sink",task="0"} 20',
    ]) expect(metrics.split('\n'), line).toContain(line)
  }, 120000)

  test('a failing sink with errors.tolerance=none is FAILED with its trace, and restart?includeTasks&onlyFailed restarts it', async () => {
    const w = worker!
    const out2 = join(dir, 'strict.txt')
    const res = await rest(w.url, 'PUT', '/connectors/strict-sink/config', {
      'connector.class': 'org.apache.kafka.connect.file.FileStreamSinkConnector', topics: 'strict', file: out2,
      'value.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable': 'false',
    })
    expect(res.status).toBe(201)
    const producer = new Producer({ bootstrapServers: broker.bootstrap, lingerMs: 1 })
    try {
      await producer.send({ topic: 'strict', value: '{"ok":1}' })
      // Apart, so that it is put before the bad record fails its batch (conversion precedes put).
      await waitFor('the good record in the file', async () => lines(out2).length === 1)
      await producer.send({ topic: 'strict', value: 'not json' })
    } finally {
      await producer.close()
    }
    const failed = await waitFor('strict-sink-0 FAILED', async () => {
      const s = await rest(w.url, 'GET', '/connectors/strict-sink/status')
      return s.body?.tasks?.[0]?.state === 'FAILED' ? s.body : undefined
    })
    expect(failed.connector.state).toBe('RUNNING')
    expect(failed.tasks[0].trace).toMatch(/DataException|Tolerance exceeded/)
    expect(lines(out2)).toEqual(['{"ok":1}'])
    const restart = await rest(w.url, 'POST', '/connectors/strict-sink/restart?includeTasks=true&onlyFailed=true')
    expect(restart.status).toBe(202)
    expect(restart.body.connector.state).toBe('RUNNING')
    expect(restart.body.tasks[0].state).toBe('RESTARTING')
    // The bad record is still next (nothing was committed past it): the restarted task fails on it again.
    await waitFor('strict-sink-0 failing a second time', async () => (w.output().match(/task failed/g) ?? []).length === 2)
    await waitFor('strict-sink-0 FAILED', async () => (await rest(w.url, 'GET', '/connectors/strict-sink/status')).body?.tasks?.[0]?.state === 'FAILED')
    expect(lines(out2)).toEqual(['{"ok":1}'])
    expect(w.alive()).toBe(true)
  }, 90000)
})
