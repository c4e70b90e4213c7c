#!/bin/sh
# librdkafka's test suite runs "$KAFKA_PATH/bin/kafka-topics.sh --bootstrap-server $BROKERS ..." to create,
# alter and delete topics with configs; Skein's own `skein topics` takes kafka-topics' flags, so this
# stand-in runs it (from the checkout's dist/, built by `npx tsc`).
here=$(cd "$(dirname "$0")" && pwd)
exec node "$here/../../../../../../dist/src/skein.js" topics "$@"
