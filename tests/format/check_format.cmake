# Every C++ source of the repository is as clang-format (.clang-format at the
# root) would write it, so a review never argues about layout and a diff
# shows only what changed.
#   cmake -DROOT=<source dir> -DCLANG_FORMAT=<clang-format> -P this
# Fails naming each file that clang-format would change; the fix is
# `clang-format -i FILE`.
cmake_minimum_required(VERSION 3.22)

if(NOT EXISTS "${CLANG_FORMAT}")
  message(FATAL_ERROR "clang-format not found (${CLANG_FORMAT}): "
                      "scripts/setup.sh installs Debian's clang-format")
endif()
set(sources "")
foreach(dir messages config persistence kafka consumers applier actors app
    bench include examples tests)
  file(GLOB_RECURSE found "${ROOT}/${dir}/*.cpp" "${ROOT}/${dir}/*.hpp")
  list(APPEND sources ${found})
endforeach()
list(FILTER sources EXCLUDE REGEX "/node_modules/")
list(LENGTH sources count)
if(count LESS 100)
  message(FATAL_ERROR "found only ${count} sources under ${ROOT}")
endif()
set(unformatted "")
foreach(source IN LISTS sources)
  execute_process(
    COMMAND "${CLANG_FORMAT}" --dry-run --Werror "${source}"
    WORKING_DIRECTORY "${ROOT}"
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 0)
    file(RELATIVE_PATH rel "${ROOT}" "${source}")
    string(APPEND unformatted "  ${rel}\n")
  endif()
endforeach()
if(NOT unformatted STREQUAL "")
  message(FATAL_ERROR "not as clang-format writes them (run clang-format -i "
                      "on each):\n${unformatted}")
endif()
message(STATUS "${count} sources, all as clang-format writes them")
