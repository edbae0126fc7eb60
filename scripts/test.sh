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
# their own deadlines: at two per core the two cores were 44 % idle, and
# the suite took 426 s; at three per core, 337 s, every test passing
# (340 tests, 2026-12-08). EF_TEST_JOBS overrides.
ctest --test-dir "$build_dir" -j "${EF_TEST_JOBS:-$((3 * $(nproc)))}" \
  --output-on-failure "$@"
# A short, time-bounded fuzz run of the order parser (libFuzzer, clang);
# EF_FUZZ_SECONDS=0 skips it.
fuzz_seconds=${EF_FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" -gt 0 ]; then bash scripts/fuzz.sh "$fuzz_seconds"; fi
