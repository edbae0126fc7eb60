#!/usr/bin/env bash
# Installs the Debian 12 packages EventForge needs (only those missing) and
# builds it into build/ (build-asan/ or build-tsan/ when EF_CMAKE_ARGS asks
# for a sanitizer). Idempotent; safe to run again.
#
# EF_SETUP=serve (scripts/serve.sh) sets up only what `eventforge serve`
# needs: the libraries, PostgreSQL and the eventforge target; no test
# framework, compilers for the fuzzer, Prometheus, Chromium or node modules.
# By default (scripts/test.sh, CI) everything, tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${EF_SETUP:-all}

packages=(
  g++ make cmake ninja-build pkg-config ccache
  libcaf-dev libpqxx-dev libpq-dev librdkafka-dev
  nlohmann-json3-dev libspdlog-dev libcli11-dev libcpp-httplib-dev
  libboost1.81-dev prometheus-cpp-dev postgresql-15
  libsystemd-dev
)
if [ "$mode" != serve ]; then
  packages+=(catch2 clang clang-format libclang-rt-14-dev curl prometheus chromium)
  # The Debian package's test: dpkg-shlibdeps, systemd-analyze.
  packages+=(dpkg-dev systemd)
  # Node.js and npm for the browser test; a machine may already have them
  # from another source (e.g. a newer nodejs that bundles npm): keep those.
  command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  # libsystemd-dev requires libsystemd0 of its own version: the newest one
  # would upgrade libsystemd0 and systemd with it. At the installed
  # version, while the archive still has it, it upgrades nothing.
  for i in "${!missing[@]}"; do
    [ "${missing[$i]}" = libsystemd-dev ] || continue
    v=$(dpkg-query -W -f='${Version}' libsystemd0 2>/dev/null || true)
    if [ -n "$v" ] && apt-cache madison libsystemd-dev | grep -qF " $v "; then
      missing[i]="libsystemd-dev=$v"
    fi
  done
  # The server packages are used only as binaries (private PostgreSQL
  # clusters; promtool to check /metrics): no system service may start.
  policy=/usr/sbin/policy-rc.d
  added_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    added_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
  if [ -n "$added_policy" ]; then $sudo rm -f "$policy"; fi
fi

source scripts/build_dir.sh
build_type=${EF_BUILD_TYPE:-RelWithDebInfo}
tests=ON
[ "$mode" = serve ] && tests=OFF
# Ninja compiles every layer's objects as soon as their sources are there,
# where make waits for the layers below to be archived: the eventforge
# target from scratch on two cores takes 136 s instead of 188 s. A build
# directory made before keeps the generator it was made with.
generator=()
[ -f "$build_dir/CMakeCache.txt" ] || generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" \
  -DEF_BUILD_TESTS="$tests" "${compiler_args[@]}" ${EF_CMAKE_ARGS:-} >/dev/null
# EF_BUILD_TARGETS (space-separated) builds only those targets, e.g. CI's
# sanitizer pass over the actor tests; by default everything is built.
targets=()
[ "$mode" = serve ] && targets+=(--target eventforge)
for t in ${EF_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
[ "$mode" = serve ] && exit 0

# The browser test (tests/browser) drives Debian's chromium with playwright-core
# from package-lock.json. Playwright must never download a browser of its own:
# there is none to fetch here, and the Debian one is the one we test with.
if [ ! -d tests/browser/node_modules/playwright-core ]; then
  echo "setup: installing tests/browser node modules"
  (cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
