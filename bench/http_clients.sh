#!/usr/bin/env bash
# Many keep-alive clients against `eventforge serve` on the embedded
# defaults: wrk with 16 and then 256 connections, POST /orders for
# DURATION seconds each (default 20). Prints orders/s, latency percentiles,
# socket errors, and checks from the database that every 2xx wrote exactly
# one order. Usage: bench/http_clients.sh [DURATION [SERVE OPTIONS...]]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-20}
shift || true   # the rest: extra serve options, e.g. --api.workers=2
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)"; exit 2; }
dir=$(mktemp -d); chmod 755 "$dir"
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
build/eventforge serve --http.port=0 --database.data-dir="$dir/pg" \
  --log.level=warn "$@" >"$dir/out" 2>"$dir/log" &
pid=$!
for _ in $(seq 1 100); do grep -q '^ready ' "$dir/out" 2>/dev/null && break; sleep 0.2; done
url=$(grep -o 'http=[^ ]*' "$dir/out" | cut -d= -f2)
dsn=$(grep -o 'database=[^ ]*' "$dir/out" | cut -d= -f2-)
for c in 16 256; do
  echo "== $c keep-alive connections, ${duration} s"
  wrk -t2 -c"$c" -d"${duration}s" --timeout 10s -s bench/orders.lua "$url" \
    | grep -E "Requests/sec|p50|errors|requests in"
done
echo "orders in the database: $(psql "$dsn" -Atc 'SELECT count(*) FROM orders')"
