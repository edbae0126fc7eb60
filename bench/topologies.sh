#!/usr/bin/env bash
# `eventforge bench` on both topologies, one after the other on this
# machine, then their figures side by side:
#   embedded  the defaults: a private PostgreSQL cluster and the in-process
#             broker, started by the bench itself;
#   external  a deployment's shape: a PostgreSQL server and `eventforge
#             broker` in processes of their own, given by database.url and
#             kafka.brokers. The broker's CPU is then outside the bench's
#             process: "pipeline" figures leave it out, where the embedded
#             run counts the in-process broker in.
# Both servers run with the embedded cluster's settings (durable,
# track_commit_timestamp, pg_stat_statements). Every argument goes to both
# runs, e.g.
#   bench/topologies.sh --seconds 10 --backlog 0 --cost-rates 100,400
# The reports and logs stay in the directory printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_dir.sh
bin=$build_dir/eventforge
[ -x "$bin" ] || { echo "no $bin: run scripts/setup.sh first" >&2; exit 2; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
dir=$(mktemp -d)
chmod 755 "$dir"
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  # initdb refuses root; Debian's postgresql package made this account.
  chown postgres "$dir"
  as_pg=(runuser -u postgres --)
fi
broker_pid=""
cleanup() {
  [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
  [ -f "$dir/pg/postmaster.pid" ] &&
    "${as_pg[@]}" "$pgbin/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null 2>&1
  echo "reports and logs: $dir"
}
trap cleanup EXIT

echo "== embedded: private PostgreSQL and in-process broker"
(cd "$dir" && "$OLDPWD/$bin" bench "$@" --report "$dir/embedded.json" \
  >"$dir/embedded.txt" 2>"$dir/embedded.log")

echo "== external: a PostgreSQL server and eventforge broker"
port=55432
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
"${as_pg[@]}" "$pgbin/initdb" -D "$dir/pg" -U postgres -A trust >/dev/null
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w -o \
  "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='' \
   -c max_connections=200 -c track_commit_timestamp=on \
   -c shared_preload_libraries=pg_stat_statements" start >/dev/null
# The broker reads fault commands on stdin: a FIFO held open keeps it up.
mkfifo "$dir/broker.in"
"$bin" broker <"$dir/broker.in" >"$dir/broker.out" 2>"$dir/broker.log" &
broker_pid=$!
exec 3>"$dir/broker.in"
for _ in $(seq 1 100); do
  grep -q '^ready ' "$dir/broker.out" 2>/dev/null && break
  sleep 0.2
done
brokers=$(grep -o 'kafka=[^ ]*' "$dir/broker.out" | cut -d= -f2)
[ -n "$brokers" ] || { echo "eventforge broker did not start" >&2; exit 1; }
(cd "$dir" && "$OLDPWD/$bin" bench "$@" \
  --database.url="postgresql://postgres@127.0.0.1:$port/postgres" \
  --kafka.brokers="$brokers" --report "$dir/external.json" \
  >"$dir/external.txt" 2>"$dir/external.log")

echo
"$bin" bench --compare "embedded=$dir/embedded.json,external=$dir/external.json"
