# The build's layer check (cmake/check_layers.cmake, run by every build as
# the target ef_layer_check) on a copy of the source tree:
#   1. the tree as it is passes;
#   2. one persistence file that includes an actor header fails, naming the
#      file, the line and what persistence/ may include;
#   3. so does a persistence file that includes a consumer's public header;
#   4. a public header that includes an internal header fails, naming it.
#   cmake -DROOT=<source dir> -DWORK=<scratch dir> "-DRULES=..."
#         "-DPUBLIC_DIRS=..." -P this
cmake_minimum_required(VERSION 3.22)

function(run_check root expect_ok what)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -DROOT=${root} "-DRULES=${RULES}"
            "-DEXPORTS=${EXPORTS}" "-DFRIENDS=${FRIENDS}"
            "-DPUBLIC_DIRS=${PUBLIC_DIRS}" -P
            ${ROOT}/cmake/check_layers.cmake
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: the check failed on a clean tree:\n${err}")
  endif()
  if(NOT expect_ok AND rc EQUAL 0)
    message(FATAL_ERROR "${what}: the check passed a forbidden include")
  endif()
  set(check_output "${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
foreach(dir messages config persistence kafka consumers applier actors bench
    app include)
  file(COPY "${ROOT}/${dir}" DESTINATION "${WORK}")
endforeach()
run_check("${WORK}" TRUE "the tree as it is")

foreach(header "\"actors/supervisor.hpp\""
               "<eventforge/consumers/consumer.hpp>")
  file(READ "${ROOT}/persistence/order_store.cpp" original)
  file(WRITE "${WORK}/persistence/order_store.cpp"
       "#include ${header}\n${original}")
  run_check("${WORK}" FALSE "persistence including ${header}")
  string(REGEX REPLACE "^[<\"]|[>\"]$" "" path "${header}")
  set(expected "persistence/order_store.cpp:1 includes \"${path}\"")
  string(FIND "${check_output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the check did not name the file and line "
                        "(${expected}):\n${check_output}")
  endif()
  string(FIND "${check_output}" "persistence/ may include only: persistence, messages, config" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the check did not say what persistence/ may "
                        "include:\n${check_output}")
  endif()
  file(WRITE "${WORK}/persistence/order_store.cpp" "${original}")
endforeach()

set(public "include/eventforge/config/settings.hpp")
file(READ "${ROOT}/${public}" original)
file(WRITE "${WORK}/${public}" "#include \"config/backoff.hpp\"\n${original}")
run_check("${WORK}" FALSE "a public header including an internal one")
string(FIND "${check_output}"
       "${public}:1 includes \"config/backoff.hpp\", an internal header" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the check did not name the public header that "
                      "includes an internal one:\n${check_output}")
endif()
file(WRITE "${WORK}/${public}" "${original}")

# `line` planted at the top of `file` (created if missing) must fail the
# check with `expected` in its message.
function(expect_refused file line expected)
  set(path "${WORK}/${file}")
  set(original "")
  if(EXISTS "${path}")
    file(READ "${path}" original)
  endif()
  file(WRITE "${path}" "${line}\n${original}")
  run_check("${WORK}" FALSE "${file} with ${line}")
  string(FIND "${check_output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${file} with ${line}: the check did not say "
                        "\"${expected}\":\n${check_output}")
  endif()
  if(original STREQUAL "")
    file(REMOVE "${path}")
  else()
    file(WRITE "${path}" "${original}")
  endif()
endfunction()

# Spellings that passed the first version of the check.
expect_refused(persistence/order_store.cpp "#include <actors/supervisor.hpp>"
  "persistence/order_store.cpp:1 includes \"actors/supervisor.hpp\" (layer actors/)")
expect_refused(persistence/order_store.cpp "#include \"../actors/supervisor.hpp\""
  "persistence/order_store.cpp:1 includes \"../actors/supervisor.hpp\": a relative include")
expect_refused(persistence/more/helper.cpp "#include \"actors/supervisor.hpp\""
  "persistence/more/helper.cpp:1 includes \"actors/supervisor.hpp\" (layer actors/)")
expect_refused(include/eventforge/eventforge.hpp "#include \"actors/supervisor.hpp\""
  "include/eventforge/eventforge.hpp:1 includes \"actors/supervisor.hpp\", an internal header")
# A layer's private headers, one it exports only to some layers (friends),
# and an exported header that needs a private one.
expect_refused(actors/relay_shard.cpp "#include \"persistence/connection.hpp\""
  "actors/relay_shard.cpp:1 includes \"persistence/connection.hpp\", a header persistence/ exports only to: applier, bench")
expect_refused(actors/relay_shard.cpp "#include \"persistence/order_rows.hpp\""
  "actors/relay_shard.cpp:1 includes \"persistence/order_rows.hpp\", a header private to persistence/")
expect_refused(actors/chaos.hpp "#include \"actors/context.hpp\""
  "actors/chaos.hpp:1 includes \"actors/context.hpp\": an exported header includes only exported ones")
message(STATUS "the layer check passes the tree and refuses every planted include")
