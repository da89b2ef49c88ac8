#!/bin/sh
# Runs Temporal's Java test server from the jars next to this script, with the command line the
# SDK uses for a time-skipping server: `<port> [--enable-time-skipping]`. Provisioning copies it
# into the user cache beside lib/, so it finds the jars relative to itself, wherever that is.
set -eu
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
java=java
if [ -n "${JAVA_HOME:-}" ]; then java="$JAVA_HOME/bin/java"; fi
# Short-lived and small: C1-only JIT and the serial collector leave the cores to the tests
# instead of compiler and GC threads; warnings and errors still reach stderr.
exec "$java" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -cp "$here/lib/*" io.temporal.testserver.TestServer "$@"
