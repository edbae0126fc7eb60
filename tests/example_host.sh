#!/usr/bin/env bash
# Installs EventForge from BUILD_DIR into a fresh prefix, builds
# examples/host_app against the installed package (find_package), and runs
# it twice on the embedded defaults: plainly, then with crash points firing
# in the relays and consumers. Each run checks its own consumer's table and
# EventForge's verifier and exits non-zero on any difference.
# Usage: tests/example_host.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The private PostgreSQL cluster runs as "postgres" when we are root: it
# must be able to reach its data directory.
chmod 755 "$work"

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/examples/host_app" -B "$work/build" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$work/build" -j "$(nproc)"

ini="$source_dir/examples/host_app/host_app.ini"
run() {
  local name=$1
  shift
  mkdir -p "$work/$name"
  chmod 755 "$work/$name"
  echo "== host_app: $name"
  (cd "$work/$name" && "$work/build/host_app" --config-file="$ini" "$@")
}
run plain
run chaos --chaos.points="relay.after_ack_before_mark,consumer.before_db_commit,consumer.after_db_before_offset" \
  --chaos.rate=0.2 --chaos.seed=7
