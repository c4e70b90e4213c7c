#!/bin/sh
# librdkafka's ACL tests (0109, 0115, 0119) run "$KAFKA_PATH/bin/kafka-acls.sh --bootstrap-server $BROKERS
# --add --deny-principal 'User:*' --operation All --deny-host '*' --topic T" and the like; `skein acls` takes
# kafka-acls' flags, so this stand-in runs it (from the checkout's dist/, built by `npx tsc`).
here=$(cd "$(dirname "$0")" && pwd)
exec node "$here/../../../../../../dist/src/skein.js" acls "$@"
