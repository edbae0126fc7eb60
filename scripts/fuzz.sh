#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + ASan + UBSan) into
# build-fuzz/ and runs the order parser's target for a bounded time on a
# copy of the seed corpus (tests/fuzz/corpus). Usage: scripts/fuzz.sh [SECONDS]
# Prints libFuzzer's final stats; exits non-zero if it found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake -S tests/fuzz -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j "$(nproc)" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/* "$work/" 2>/dev/null || true
status=0
build-fuzz/order_request_fuzz "$work" -max_total_time="$seconds" \
  -max_len=4096 -timeout=5 -print_final_stats=1 -artifact_prefix=build-fuzz/ \
  >"$work.log" 2>&1 || status=$?
grep -E "^(stat::|Done|==|SUMMARY)" "$work.log" || true
[ "$status" -eq 0 ] || tail -40 "$work.log"
rm -f "$work.log"
echo "fuzz: corpus now $(ls "$work" | wc -l) inputs (seed: $(ls tests/fuzz/corpus | wc -l))"
exit "$status"
