#!/usr/bin/env node
// The `skein` command (the package's bin). `skein broker` runs a broker through main.ts, loaded only for
// that command; every other subcommand is a client tool from cli/, which never imports the broker
// (ARCHITECTURE.md: client-side products see no broker internals). The client tools follow Kafka's tools
// (kafka-topics, kafka-console-producer, ...) and their flag names; each has --help, talks the Kafka
// protocol to any broker (--bootstrap-server, default 127.0.0.1:9092) and exits 0 on success, 1 with one
// line on stderr on failure.
import { tuneMallocForClient } from './addon/malloc-tuning.js'

const HELP = `Usage: skein <command> [options]

Commands:
  broker     Run a broker (what npm start runs)
  topics     Create, list, describe, alter and delete topics          (kafka-topics)
  produce    Console producer: one record per input line              (kafka-console-producer)
  consume    Console consumer                                          (kafka-console-consumer)
  groups     List, describe, reset offsets of and delete groups       (kafka-consumer-groups)
  share-groups  List, describe, reset offsets of and delete share groups (kafka-share-groups)
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

// Each command's module is loaded only when that command runs: a tool starts without the others' modules
// (all of them at once cost about 0.3 s of CPU at every start), and `skein broker` is the only command
// that loads the broker (main.ts).
const COMMANDS: Record<string, (argv: readonly string[]) => Promise<number>> = {
  broker: async (argv) => (await import('./main.js')).runBroker(argv),
  topics: async (argv) => (await import('./cli/topics.js')).runTopics(argv),
  produce: async (argv) => (await import('./cli/produce.js')).runProduce(argv),
  consume: async (argv) => (await import('./cli/consume.js')).runConsume(argv),
  groups: async (argv) => (await import('./cli/groups.js')).runGroups(argv),
  'share-groups': async (argv) => (await import('./cli/share-groups.js')).runShareGroups(argv),
  configs: async (argv) => (await import('./cli/configs.js')).runConfigs(argv),
  acls: async (argv) => (await import('./cli/acls.js')).runAcls(argv),
  'leader-election': async (argv) => (await import('./cli/leader-election.js')).runLeaderElection(argv),
  'reassign-partitions': async (argv) => (await import('./cli/reassign-partitions.js')).runReassignPartitions(argv),
  perf: async (argv) => (await import('./cli/perf.js')).runPerf(argv),
  // The REST Proxy, Connect, MirrorMaker and the Schema Registry bring the HTTP server, plugins and pg.
  rest: async (argv) => (await import('./cli/rest.js')).runRest(argv),
  connect: async (argv) => (await import('./cli/connect.js')).runConnect(argv),
  'mirror-maker': async (argv) => (await import('./cli/mirror-maker.js')).runMirrorMaker(argv),
  'schema-registry': async (argv) => (await import('./cli/schema-registry.js')).runSchemaRegistry(argv),
  bench: async (argv) => (await import('./cli/bench.js')).runBench(argv),
  cluster: async (argv) => (await import('./cli/dev-cluster.js')).runCluster(argv),
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === '-h' || command === '--help') {
    process.stdout.write(HELP + '\n')
    return command === undefined ? 1 : 0
  }
  // Own keys only: `skein constructor` is an unknown command, not Object's constructor.
  const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined
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
