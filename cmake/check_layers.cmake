# Checks that every layer includes only the layers it depends on.
#   cmake -DROOT=<source dir> "-DRULES=|dir=allowed,dirs|..." -P check_layers.cmake
# RULES comes from ef_layer() in CMakeLists.txt: for each layer folder, the
# folders its files may include (itself and the layers it depends on,
# transitively). A quoted include "a/b/c.hpp" belongs to the layer whose
# folder is its longest prefix; an include of another layer's header that
# is not allowed fails, naming the file, the line and what is allowed.
# Includes of files outside every layer (system headers, tests) are not
# checked. The files of a layer are those directly in its folder.
cmake_minimum_required(VERSION 3.22)

string(REPLACE "|" ";" rules "${RULES}")
set(dirs "")
foreach(rule IN LISTS rules)
  if(rule STREQUAL "")
    continue()
  endif()
  string(FIND "${rule}" "=" eq)
  string(SUBSTRING "${rule}" 0 ${eq} dir)
  math(EXPR from "${eq} + 1")
  string(SUBSTRING "${rule}" ${from} -1 allowed)
  string(REPLACE "," ";" allowed "${allowed}")
  list(APPEND dirs "${dir}")
  set("allowed_${dir}" "${allowed}")
endforeach()

# The layer of an include path: the longest layer folder that prefixes it.
function(layer_of path out)
  set(best "")
  string(LENGTH "" best_len)
  foreach(dir IN LISTS dirs)
    string(LENGTH "${dir}/" n)
    string(LENGTH "${path}" plen)
    if(plen GREATER n)
      string(SUBSTRING "${path}" 0 ${n} head)
      if(head STREQUAL "${dir}/" AND n GREATER best_len)
        # Only files directly in the folder belong to it.
        string(SUBSTRING "${path}" ${n} -1 tail)
        string(FIND "${tail}" "/" slash)
        if(slash EQUAL -1)
          set(best "${dir}")
          set(best_len ${n})
        endif()
      endif()
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

set(violations "")
foreach(dir IN LISTS dirs)
  file(GLOB sources "${ROOT}/${dir}/*.cpp" "${ROOT}/${dir}/*.hpp")
  foreach(source IN LISTS sources)
    file(STRINGS "${source}" lines)
    set(number 0)
    foreach(line IN LISTS lines)
      math(EXPR number "${number} + 1")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\"")
        set(included "${CMAKE_MATCH_1}")
        layer_of("${included}" target)
        if(target STREQUAL "")
          continue()
        endif()
        list(FIND "allowed_${dir}" "${target}" ok)
        if(ok EQUAL -1)
          file(RELATIVE_PATH rel "${ROOT}" "${source}")
          string(REPLACE ";" ", " may "${allowed_${dir}}")
          string(APPEND violations
                 "  ${rel}:${number} includes \"${included}\" (layer "
                 "${target}/), but ${dir}/ may include only: ${may}\n")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

if(NOT violations STREQUAL "")
  message(FATAL_ERROR "layer check failed: a layer includes a layer it does "
                      "not depend on (CMakeLists.txt, ef_layer):\n"
                      "${violations}")
endif()
