#!/usr/bin/env bash
# Installs EventForge from BUILD_DIR into a fresh prefix and checks what a
# host gets: only <prefix>/include/eventforge/ (no EventForge folder at the
# top of its include path), a package that searches for nothing but what the
# public headers need, and headers that compile in a host whose own config/,
# app/ and persistence/ folders are on its include path, at -std=c++17 and
# at the compiler's default. Then builds examples/own_http (its own HTTP
# server, eventforge::core only) and runs its self-test, and builds
# examples/host_app against the package (find_package ... COMPONENTS core)
# and runs it twice on the embedded defaults: plainly, then with crash points firing in the relays
# and consumers. Each run checks its own consumer's table and EventForge's
# verifier and exits non-zero on any difference.
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
prefix=$work/prefix

echo "== the installed headers"
top=$(cd "$prefix/include" && ls)
if [ "$top" != "eventforge" ]; then
  echo "FAIL: <prefix>/include holds more than eventforge/: $top" >&2
  exit 1
fi
if grep -rqE '#include "' "$prefix/include"; then
  echo "FAIL: an installed header includes a file by a quoted path:" >&2
  grep -rnE '#include "' "$prefix/include" >&2
  exit 1
fi
echo "== the package searches only for what the public headers need"
# (comment lines aside)
named=$(grep -rniE 'boost|httplib|cli11|prometheus|rdkafka' \
  "$prefix/lib/cmake/eventforge" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true)
if [ -n "$named" ]; then
  echo "FAIL: the package names a dependency a host does not need:" >&2
  echo "$named" >&2
  exit 1
fi

echo "== a host with its own config/, app/ and persistence/ folders"
shadow=$work/shadow
mkdir -p "$shadow/config" "$shadow/app/embedded" "$shadow/persistence" "$shadow/messages"
for h in config/settings.hpp config/options.hpp app/embedded/runtime.hpp \
         persistence/invariant_queries.hpp messages/events.hpp; do
  echo '#error "the host'"'"'s own header was pulled into EventForge'"'"'s"' >"$shadow/$h"
done
cat >"$shadow/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(shadow_host LANGUAGES CXX)
find_package(eventforge 1.1 CONFIG REQUIRED COMPONENTS core)
add_executable(shadow_default main.cpp)
add_executable(shadow_17 main.cpp)
set_target_properties(shadow_17 PROPERTIES CXX_STANDARD 17 CXX_EXTENSIONS OFF)
foreach(t shadow_default shadow_17)
  target_include_directories(${t} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(${t} PRIVATE -Wall -Wextra -Werror)
  target_link_libraries(${t} PRIVATE eventforge::core)
endforeach()
CMAKE
cat >"$shadow/main.cpp" <<'CPP'
#include <eventforge/eventforge.hpp>
#include <iostream>
int main() { std::cout << "eventforge " << ef::version() << "\n"; }
CPP
# Boost, CLI11, prometheus-cpp and cpp-httplib made unfindable: core needs
# none of them.
cmake -S "$shadow" -B "$work/shadow-build" -DCMAKE_PREFIX_PATH="$prefix" --no-warn-unused-cli \
  -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON >/dev/null
cmake --build "$work/shadow-build" -j "$(nproc)"
LD_BIND_NOW=1 LD_LIBRARY_PATH="$prefix/lib" "$work/shadow-build/shadow_17"
LD_LIBRARY_PATH="$prefix/lib" "$work/shadow-build/shadow_default"

echo "== a host that takes the HTTP front too (COMPONENTS core http)"
with_http=$work/with-http
mkdir -p "$with_http"
cat >"$with_http/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(http_host LANGUAGES CXX)
find_package(eventforge 1.1 CONFIG REQUIRED COMPONENTS core http)
add_executable(http_host main.cpp)
target_compile_options(http_host PRIVATE -Wall -Wextra -Werror)
target_link_libraries(http_host PRIVATE eventforge::http)
CMAKE
cat >"$with_http/main.cpp" <<'CPP'
#include <eventforge/eventforge.hpp>
#include <eventforge/http/frontend.hpp>
#include <iostream>
int main() {
  // Links the front's code (not only its header) from libeventforge-http.
  auto start = &ef::app::http_frontend::start;
  std::cout << "eventforge " << ef::version() << " with its HTTP front "
            << (start != nullptr ? "linked" : "missing") << "\n";
}
CPP
cmake -S "$with_http" -B "$work/with-http-build" -DCMAKE_PREFIX_PATH="$prefix" \
  >/dev/null
cmake --build "$work/with-http-build" -j "$(nproc)"
# Every symbol of both libraries resolved at load, not at first call.
LD_BIND_NOW=1 "$work/with-http-build/http_host"

cmake -S "$source_dir/examples/host_app" -B "$work/build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$work/build" -j "$(nproc)"
echo "== host_app: $(stat -c %s "$work/build/host_app") bytes, libeventforge-core: $(stat -L -c %s "$prefix"/lib/libeventforge-core.so) bytes"

echo "== own_http: a host with its own HTTP server, no eventforge::http"
cmake -S "$source_dir/examples/own_http" -B "$work/own-build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$work/own-build" -j "$(nproc)"
if ldd "$work/own-build/own_http" | grep -q eventforge-http; then
  echo "FAIL: own_http links libeventforge-http" >&2
  exit 1
fi
mkdir -p "$work/own"
chmod 755 "$work/own"
(cd "$work/own" && "$work/own-build/own_http" \
  --config-file="$source_dir/examples/own_http/own_http.ini")

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
