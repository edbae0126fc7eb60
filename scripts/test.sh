#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite through ctest. Every
# test starts its own private PostgreSQL cluster and Kafka-protocol broker,
# so no service needs to be running.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure "$@"
# A short, time-bounded fuzz run of the order parser (libFuzzer, clang).
bash scripts/fuzz.sh "${EF_FUZZ_SECONDS:-60}"
