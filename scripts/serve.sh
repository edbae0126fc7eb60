#!/usr/bin/env bash
# Sets up what `serve` needs (packages, the eventforge target; not the tests),
# then runs `eventforge serve` on the embedded defaults:
# a private PostgreSQL cluster in var/pg and an in-process Kafka broker.
# Extra arguments go to `eventforge serve` (e.g. --http.port=9090).
# The recovery page at http://127.0.0.1:8080/ may run its failure scenarios
# (demo.enabled=true). The configuration check itself refuses demo mode on
# an address other than loopback, so this script turns it on only when no
# argument (and no config file) chooses the address.
set -euo pipefail
cd "$(dirname "$0")/.."
EF_SETUP=serve bash scripts/setup.sh
data_dir=var/pg
# As root, PostgreSQL runs as user postgres, which must reach the data dir.
if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$PWD" 2>/dev/null; then
  data_dir=/var/lib/eventforge/pg
  echo "serve: $PWD is not reachable by user postgres; using $data_dir"
fi
demo=--demo.enabled=true
for arg in "$@"; do
  case "$arg" in
    *http.host* | *config-file* | *demo.enabled*) demo="" ;;
  esac
done
exec build/eventforge serve --database.data-dir="$data_dir" ${demo:+"$demo"} "$@"
