# Checks that every layer includes only the layers it depends on, and that
# public headers include only public headers.
#   cmake -DROOT=<source dir> "-DRULES=|dir=allowed,dirs|..."
#         "-DPUBLIC_DIRS=|name=dir|..." -P check_layers.cmake
# RULES comes from ef_layer() in CMakeLists.txt: for each layer folder, the
# folders its files may include (itself and the layers it depends on,
# transitively). PUBLIC_DIRS: the layer whose public headers are in
# include/eventforge/<name>/. A quoted include "a/b/c.hpp" belongs to the
# layer whose folder is its longest prefix, <eventforge/<name>/c.hpp> to the
# layer of <name>; an include of another layer's header that is not allowed
# fails, naming the file, the line and what is allowed. So does a quoted
# include of a layer's internal header in a public header: a host has only
# include/ on its path. Includes of files outside every layer (system
# headers, tests) are not checked. The files of a layer are those directly
# in its folder and in its public folder.
cmake_minimum_required(VERSION 3.22)

# "|key=value|key=value..." -> the list of keys in `keys_out`, and each
# value in the variable `<prefix><key>`.
macro(read_pairs text prefix keys_out)
  string(REPLACE "|" ";" _entries "${text}")
  set(${keys_out} "")
  foreach(_entry IN LISTS _entries)
    if(NOT _entry STREQUAL "")
      string(FIND "${_entry}" "=" _eq)
      string(SUBSTRING "${_entry}" 0 ${_eq} _key)
      math(EXPR _from "${_eq} + 1")
      string(SUBSTRING "${_entry}" ${_from} -1 _value)
      list(APPEND ${keys_out} "${_key}")
      set("${prefix}${_key}" "${_value}")
    endif()
  endforeach()
endmacro()

# Each layer folder and the folders it may include.
read_pairs("${RULES}" "allowed_" dirs)
foreach(dir IN LISTS dirs)
  string(REPLACE "," ";" "allowed_${dir}" "${allowed_${dir}}")
endforeach()
# Each public folder name and its layer folder.
read_pairs("${PUBLIC_DIRS}" "public_dir_" public_names)

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
  foreach(name IN LISTS public_names)
    if("${public_dir_${name}}" STREQUAL "${dir}")
      file(GLOB public_sources "${ROOT}/include/eventforge/${name}/*.hpp")
      list(APPEND sources ${public_sources})
    endif()
  endforeach()
  foreach(source IN LISTS sources)
    file(RELATIVE_PATH rel "${ROOT}" "${source}")
    string(FIND "${rel}" "include/" in_public)
    file(STRINGS "${source}" lines)
    set(number 0)
    foreach(line IN LISTS lines)
      math(EXPR number "${number} + 1")
      set(included "")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\"")
        set(included "${CMAKE_MATCH_1}")
        layer_of("${included}" target)
        if(NOT target STREQUAL "" AND in_public EQUAL 0)
          string(APPEND violations
                 "  ${rel}:${number} includes \"${included}\", an internal "
                 "header of ${target}/: a public header includes only "
                 "<eventforge/...> and third-party headers\n")
          continue()
        endif()
      elseif(line MATCHES
             "^[ \t]*#[ \t]*include[ \t]+<eventforge/([^/>]+)/([^>]+)>")
        set(name "${CMAKE_MATCH_1}")
        if(NOT DEFINED "public_dir_${name}")
          continue()
        endif()
        set(included "eventforge/${name}/${CMAKE_MATCH_2}")
        set(target "${public_dir_${name}}")
      endif()
      if(included STREQUAL "" OR target STREQUAL "")
        continue()
      endif()
      list(FIND "allowed_${dir}" "${target}" ok)
      if(ok EQUAL -1)
        string(REPLACE ";" ", " may "${allowed_${dir}}")
        string(APPEND violations
               "  ${rel}:${number} includes \"${included}\" (layer "
               "${target}/), but ${dir}/ may include only: ${may}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(NOT violations STREQUAL "")
  message(FATAL_ERROR "layer check failed: a layer includes a layer it does "
                      "not depend on (CMakeLists.txt, ef_layer), or a "
                      "public header an internal one:\n"
                      "${violations}")
endif()
