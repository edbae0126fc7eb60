#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite through ctest. Every
# test starts its own private PostgreSQL cluster and Kafka-protocol broker,
# so no service needs to be running.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/build_dir.sh
ctest --test-dir "$build_dir" -j "$(nproc)" --output-on-failure "$@"
# A short, time-bounded fuzz run of the order parser (libFuzzer, clang);
# EF_FUZZ_SECONDS=0 skips it.
fuzz_seconds=${EF_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then bash scripts/fuzz.sh "$fuzz_seconds"; fi
