#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite through ctest. Every
# test starts its own private PostgreSQL cluster (a copy of one initdb made
# per run, ctest's fixture setup.pg_template) and Kafka-protocol broker, so
# no service needs to be running.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/build_dir.sh
# Tests spend most of their time waiting on PostgreSQL, the broker and
# their own deadlines (the suite used about a third of two cores at -j2), so
# ctest runs two per core; EF_TEST_JOBS overrides.
ctest --test-dir "$build_dir" -j "${EF_TEST_JOBS:-$((2 * $(nproc)))}" \
  --output-on-failure "$@"
# A short, time-bounded fuzz run of the order parser (libFuzzer, clang);
# EF_FUZZ_SECONDS=0 skips it.
fuzz_seconds=${EF_FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" -gt 0 ]; then bash scripts/fuzz.sh "$fuzz_seconds"; fi
