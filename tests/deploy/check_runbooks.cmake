cmake_minimum_required(VERSION 3.22)
# cmake -DRULES=deploy/prometheus/eventforge.rules.yml -DDOC=docs/operations.md
#   -P check_runbooks.cmake
# Every alert has its runbook: a "### <AlertName>" section in the
# operations guide, which the alert's runbook annotation points at.
file(STRINGS "${RULES}" lines REGEX "^ *- alert: ")
file(READ "${DOC}" doc)
set(missing "")
foreach(line ${lines})
  string(REGEX REPLACE "^ *- alert: *" "" name "${line}")
  string(FIND "${doc}" "\n### ${name}\n" at)
  if(at EQUAL -1)
    list(APPEND missing ${name})
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "alerts without a runbook section in ${DOC}: ${missing}")
endif()
list(LENGTH lines count)
message(STATUS "runbooks: ${count} alerts, each with its section")
