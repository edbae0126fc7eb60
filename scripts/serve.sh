#!/usr/bin/env bash
# Sets everything up, then runs `eventforge serve` on the embedded defaults:
# a private PostgreSQL cluster in var/pg and an in-process Kafka broker.
# Extra arguments go to `eventforge serve` (e.g. --http.port=9090).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
data_dir=var/pg
# As root, PostgreSQL runs as user postgres, which must reach the data dir.
if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$PWD" 2>/dev/null; then
  data_dir=/var/lib/eventforge/pg
  echo "serve: $PWD is not reachable by user postgres; using $data_dir"
fi
exec build/eventforge serve --database.data-dir="$data_dir" "$@"
