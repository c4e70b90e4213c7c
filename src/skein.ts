#!/usr/bin/env node
// The `skein` command (the package's bin). `skein broker` runs a broker through main.ts, loaded only for
// that command; every other subcommand is a client tool from cli/, which never imports the broker
// (ARCHITECTURE.md: client-side products see no broker internals). The client tools follow Kafka's tools
// (kafka-topics, kafka-console-producer, ...) and their flag names; each has --help, talks the Kafka
// protocol to any broker (--bootstrap-server, default 127.0.0.1:9092) and exits 0 on success, 1 with one
// line on stderr on failure.
import { tuneMallocForClient } from './addon/malloc-tuning.js'
import { runAcls } from './cli/acls.js'
import { runBench } from './cli/bench.js'
import { runCluster } from './cli/dev-cluster.js'
import { runConfigs } from './cli/configs.js'
import { runConsume } from './cli/consume.js'
import { runGroups } from './cli/groups.js'
import { runLeaderElection } from './cli/leader-election.js'
import { runPerf } from './cli/perf.js'
import { runProduce } from './cli/produce.js'
import { runReassignPartitions } from './cli/reassign-partitions.js'
import { runTopics } from './cli/topics.js'

const HELP = `Usage: skein <command> [options]

Commands:
  broker     Run a broker (what npm start runs)
  topics     Create, list, describe, alter and delete topics          (kafka-topics)
  produce    Console producer: one record per input line              (kafka-console-producer)
  consume    Console consumer                                          (kafka-console-consumer)
  groups     List, describe, reset offsets of and delete groups       (kafka-consumer-groups)
  configs    Describe and alter topic and broker configs              (kafka-configs)
  acls       Add, remove and list ACLs                                (kafka-acls)
  leader-election  Elect preferred or unclean partition leaders      (kafka-leader-election)
  reassign-partitions  Move partition replicas between brokers       (kafka-reassign-partitions)
  perf       produce | consume: throughput and latency tests          (kafka-*-perf-test)
  rest       REST Proxy (Confluent's API v2 and v3) for a cluster     (kafka-rest-start)
  connect    Kafka Connect worker: distributed | standalone           (connect-distributed, connect-standalone)
  mirror-maker  MirrorMaker 2 between clusters, dedicated mode        (connect-mirror-maker)
  schema-registry  Schema Registry (Confluent's API) on a cluster     (schema-registry-start)
  cluster    up | status | restart: a local development cluster (ZooKeeper and N brokers)
  bench      disk: the data directory's bandwidth and fsync rate;
             compression: each codec and level on your data, in Kafka batches

Run 'skein <command> --help' for a command's options.`

/** The broker entry, loaded only when asked for: client commands start without the broker's modules. */
async function runBroker(argv: readonly string[]): Promise<number> {
  const main = await import('./main.js')
  return main.runBroker(argv)
}

/** The REST Proxy, loaded only for its command (it brings the HTTP server and the schema serdes). */
async function runRest(argv: readonly string[]): Promise<number> {
  const rest = await import('./cli/rest.js')
  return rest.runRest(argv)
}

/** Kafka Connect, loaded only for its command (it brings the HTTP server, the plugins and pg). */
async function runConnect(argv: readonly string[]): Promise<number> {
  const connect = await import('./cli/connect.js')
  return connect.runConnect(argv)
}

/** MirrorMaker 2 (dedicated mode), loaded only for its command (it runs Connect herders). */
async function runMirrorMaker(argv: readonly string[]): Promise<number> {
  const mm = await import('./cli/mirror-maker.js')
  return mm.runMirrorMaker(argv)
}

/** The Schema Registry, loaded only for its command. */
async function runSchemaRegistry(argv: readonly string[]): Promise<number> {
  const registry = await import('./cli/schema-registry.js')
  return registry.runSchemaRegistry(argv)
}

const COMMANDS: Record<string, (argv: readonly string[]) => Promise<number>> = {
  broker: runBroker,
  topics: runTopics,
  produce: runProduce,
  consume: runConsume,
  groups: runGroups,
  configs: runConfigs,
  acls: runAcls,
  'leader-election': runLeaderElection,
  'reassign-partitions': runReassignPartitions,
  perf: runPerf,
  rest: runRest,
  connect: runConnect,
  'mirror-maker': runMirrorMaker,
  'schema-registry': runSchemaRegistry,
  bench: runBench,
  cluster: runCluster,
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '-h' || command === '--help') {
    process.stdout.write(HELP + '\n')
    return command === undefined ? 1 : 0
  }
  const run = COMMANDS[command]
  if (run === undefined) {
    process.stderr.write(`skein: unknown command '${command}' (see skein --help)\n`)
    return 1
  }
  // Client commands reuse freed memory (Fetch responses) instead of faulting it in again (malloc-tuning.ts).
  if (command !== 'broker') tuneMallocForClient()
  return run(rest)
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
    // Client commands are done once main resolves; a lingering socket or timer must not keep the process.
    if (process.argv[2] !== 'broker') setImmediate(() => process.exit(code)).unref()
  },
  (err: unknown) => {
    process.stderr.write(`skein: ${(err as Error).message}\n`)
    process.exitCode = 1
  },
)
