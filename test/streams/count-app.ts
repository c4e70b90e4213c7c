// A Streams application run as its own process by the fault tests: counts the records of each key of
// an input topic (groupByKey().count()) into an output topic. Arguments: bootstrap, application id,
// input, output, state dir, processing guarantee, number of threads [, standby replicas]. It prints its
// state changes as "STATE <new>" lines and stops on SIGTERM.
import { Consumed, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder } from '../../src/streams/index.js'

const [bootstrap, appId, input, output, dir, guarantee, threads, standbys] = process.argv.slice(2)
const b = new StreamsBuilder()
b.stream(input!, Consumed.with(Serdes.String(), Serdes.String()))
  .groupByKey()
  .count(Materialized.as<string, number>('counts'))
  .toStream()
  .to(output!, Produced.with(Serdes.String(), Serdes.Long()))
const streams = new KafkaStreams(b.build(), {
  'application.id': appId,
  'bootstrap.servers': bootstrap,
  'state.dir': dir,
  'processing.guarantee': guarantee,
  'num.stream.threads': Number(threads ?? '1'),
  'num.standby.replicas': Number(standbys ?? '0'),
  'commit.interval.ms': 100,
  'session.timeout.ms': 6000,
  'heartbeat.interval.ms': 500,
  'acceptable.recovery.lag': 100,
  'probing.rebalance.interval.ms': 2000,
})
streams.setStateListener((s) => process.stdout.write(`STATE ${s}\n`))
process.on('SIGTERM', () => {
  void streams.close().then(() => process.exit(0))
})
await streams.start()
