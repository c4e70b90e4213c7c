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
#   SUITE_CACHE   where the Debian source is fetched and built (default .librdkafka-suite/ in the checkout)
#   OUT_DIR       broker data, broker logs, logs/NNNN-SCENARIO.log per test, progress.txt and
#                 results.tsv (test name, scenario, PASSED/FAILED/SKIPPED/TIMEOUT, seconds)
#                 (default $SUITE_CACHE/run-<date>)
#   TEST_KAFKA_VERSION (default 4.0.0), PER_TEST_TIMEOUT seconds (default 900: 0113_cooperative_rebalance alone takes over 600 s),
#   PORT (default 47392; PORT+1 serves the "noautocreate" scenario), RUNNER_ARGS (extra test-runner
#   flags, e.g. -Q for the quick mode of the suite's `make broker`, which skips every non-quick sub-test).
#
# The brokers get what librdkafka's trivup clusters configure (tests/scenarios/*.json and trivup's
# server.properties template): num.partitions=4, auto.create.topics.enable (true, false for
# "noautocreate"), delete.topic.enable=true, default.replication.factor=1 (one broker),
# log.retention.bytes=1000000000, broker.rack, and an ACL authorizer that allows what no ACL matches (the
# suite's ACL tests create and delete ACLs); everything else keeps Kafka's defaults.
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

if [ -n "${RDKAFKA_DIR:-}" ]; then
  rdkafka=$(cd "$RDKAFKA_DIR" && pwd)
else
  obtain_suite
  rdkafka=$(cat "$src_dir/tree")
fi
echo "suite: $rdkafka"
out=${OUT_DIR:-$cache/run-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
port=${PORT:-47392}
kafka_version=${TEST_KAFKA_VERSION:-4.0.0}
per_test_timeout=${PER_TEST_TIMEOUT:-900}
runner_args=${RUNNER_ARGS:-}

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

start_broker() { # scenario port auto_create
  local scenario=$1 p=$2 auto=$3
  mkdir -p "$out/broker-$scenario"
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p is already in use: choose another with PORT=" >&2
    return 1
  fi
  node "$skein_root/dist/src/main.js" \
    --override "listeners=PLAINTEXT://127.0.0.1:$p" \
    --override "log.dirs=$out/broker-$scenario/data" \
    --override num.partitions=4 \
    --override "auto.create.topics.enable=$auto" \
    --override delete.topic.enable=true \
    --override default.replication.factor=1 \
    --override log.retention.bytes=1000000000 \
    --override broker.rack=RACK1 \
    --override authorizer.class.name=kafka.security.authorizer.AclAuthorizer \
    --override allow.everyone.if.no.acl.found=true \
    >> "$out/broker-$scenario/broker.log" 2>&1 &
  broker_pid[$scenario]=$!
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "broker for scenario $scenario did not start, see $out/broker-$scenario/broker.log" >&2
  return 1
}

ensure_broker() { # scenario port auto_create
  local pid=${broker_pid[$1]:-}
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then return 0; fi
  if [ -n "$pid" ]; then echo "$(date +%T) broker for scenario $1 had exited; restarting" | tee -a "$out/broker-restarts.txt"; fi
  start_broker "$@"
}

stop_brokers() {
  for s in "${!broker_pid[@]}"; do kill "${broker_pid[$s]}" 2>/dev/null; done
  wait 2>/dev/null
}
trap stop_brokers EXIT

write_conf() { # scenario port
  printf 'bootstrap.servers=127.0.0.1:%s\n' "$2" > "$out/test-$1.conf"
}

run_one() { # number scenario port
  local n=$1 scenario=$2 p=$3 log="$out/logs/$1-$2.log" started rc
  write_conf "$scenario" "$p"
  started=$(date +%s)
  (cd "$rdkafka/tests" &&
    LD_LIBRARY_PATH="../src:../src-cpp" TESTS="$n" SUBTESTS="${SUBTESTS:-}" TEST_SCENARIO="$scenario" \
    TEST_KAFKA_VERSION="$kafka_version" RDKAFKA_TEST_CONF="$out/test-$scenario.conf" \
    KAFKA_PATH="$here/kafka-path" BROKERS="127.0.0.1:$p" \
    timeout -k 15 "$per_test_timeout" ./test-runner -L -p1 $runner_args) > "$log" 2>&1
  rc=$?
  echo "$(date +%T) $n $scenario rc=$rc $(( $(date +%s) - started ))s" | tee -a "$out/progress.txt"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "TIMEOUT after ${per_test_timeout}s" >> "$log"; fi
}

for n in $tests; do
  ensure_broker default "$port" true || exit 1
  run_one "$n" default "$port"
  if [[ $noautocreate_tests == *" $n "* ]]; then
    ensure_broker noautocreate $((port + 1)) false || exit 1
    run_one "$n" noautocreate $((port + 1))
  fi
done

node "$here/summarize.mjs" "$out"
