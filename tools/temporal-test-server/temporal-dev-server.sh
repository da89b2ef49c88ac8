#!/bin/sh
# Last-resort stand-in for `temporal server start-dev` when the Temporal CLI could not be built:
# it accepts the CLI's command line (as the SDK and harness/temporal/dev-server.ts pass it) and runs
# the Java test server on the requested port with time skipping off, so it behaves like a normal
# server in real time. It has no Web UI and keeps nothing on disk; it listens on all interfaces.
set -eu
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)

if [ "${1:-}" = "--version" ]; then
  # dev-server.ts reads this line to tell the stand-in from the real CLI.
  echo "temporal-test-server (stand-in for the Temporal CLI dev server: no Web UI, no persistence)"
  exit 0
fi
if [ "${1:-}" != "server" ] || [ "${2:-}" != "start-dev" ]; then
  echo "$(basename -- "$0"): only 'server start-dev' is supported by this stand-in" >&2
  exit 2
fi
shift 2

port=7233
while [ $# -gt 0 ]; do
  case "$1" in
    -p | --port) port=$2; shift 2 ;;
    --port=*) port=${1#--port=}; shift ;;
    -f | --db-filename | --db-filename=* | --search-attribute | --search-attribute=*)
      echo "warning: the Java test server stand-in ignores $1 (no persistence, no custom search attributes)" >&2
      shift ;;
    *) shift ;;
  esac
done

exec "$here/temporal-test-server.sh" "$port"
