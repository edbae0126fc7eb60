# Checks that every layer includes only what the layers it depends on
# export, and that public headers include only public headers.
#   cmake -DROOT=<source dir> "-DRULES=|dir=allowed,dirs|..."
#         "-DEXPORTS=|dir=a.hpp,b.hpp|..." "-DFRIENDS=|dir/c.hpp=dir,dir|..."
#         "-DPUBLIC_DIRS=|name=dir|..."
#         -P check_layers.cmake
# RULES comes from ef_layer() in CMakeLists.txt: for each layer folder, the
# folders its files may include (itself and the layers it depends on,
# transitively). EXPORTS: the headers each layer lets the layers above it
# include; FRIENDS: headers a layer exports only to the layers named.
# PUBLIC_DIRS: the layer whose public headers are in
# include/eventforge/<name>/.
#
# The compiler refuses the same includes (each layer's include roots hold
# only what it may see, CMakeLists.txt); this check runs first and says why,
# with file, line and rule:
# - an include "a/b.hpp" or <a/b.hpp> belongs to the layer whose folder is
#   its longest prefix, <eventforge/<name>/c.hpp> to the layer of <name>;
# - it must be a layer the including file's layer may include, and a header
#   that layer exports (or the including file's own layer);
# - a relative include ("../x.hpp", "./x.hpp") is refused: it would reach
#   past the include roots;
# - a public header (include/eventforge/, the umbrella header included)
#   includes only <eventforge/...> and third-party headers.
# The files of a layer are those in its folder and its subfolders that are
# not layers of their own, and those in its public folder. Includes of files
# outside every layer (system headers, tests) are not checked.
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
# Each layer folder and the headers it exports.
read_pairs("${EXPORTS}" "exports_" exporting_dirs)
foreach(dir IN LISTS exporting_dirs)
  string(REPLACE "," ";" "exports_${dir}" "${exports_${dir}}")
endforeach()
# Headers exported only to some layers: "dir/header" and those layers.
read_pairs("${FRIENDS}" "friends_" friend_headers)
foreach(header IN LISTS friend_headers)
  string(REPLACE "," ";" "friends_${header}" "${friends_${header}}")
endforeach()
# Each public folder name and its layer folder.
read_pairs("${PUBLIC_DIRS}" "public_dir_" public_names)

# The layer of a path: the longest layer folder that prefixes it.
function(layer_of path out)
  set(best "")
  set(best_len 0)
  foreach(dir IN LISTS dirs)
    string(LENGTH "${dir}/" n)
    string(LENGTH "${path}" plen)
    if(plen GREATER n AND n GREATER best_len)
      string(SUBSTRING "${path}" 0 ${n} head)
      if(head STREQUAL "${dir}/")
        set(best "${dir}")
        set(best_len ${n})
      endif()
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

set(violations "")
macro(refuse text)
  string(APPEND violations "  ${rel}:${number} " ${ARGV} "\n")
endmacro()

# One file of layer `dir` (empty for a public header outside every layer's
# public folder: the umbrella header).
function(check_file source dir)
  file(RELATIVE_PATH rel "${ROOT}" "${source}")
  string(FIND "${rel}" "include/" in_public)
  # Is this file one its layer exports?
  set(self_exported FALSE)
  if(NOT dir STREQUAL "")
    string(LENGTH "${dir}/" n)
    string(SUBSTRING "${rel}" ${n} -1 own_name)
    list(FIND "exports_${dir}" "${own_name}" at)
    if(NOT at EQUAL -1 AND rel MATCHES "^${dir}/")
      set(self_exported TRUE)
    endif()
  endif()
  file(STRINGS "${source}" lines)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT line MATCHES "^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"]+)[>\"]")
      continue()
    endif()
    set(quoted "${CMAKE_MATCH_1}")
    set(included "${CMAKE_MATCH_2}")
    if(included MATCHES "(^|/)\\.\\.?/")
      refuse("includes \"${included}\": a relative include reaches past the "
             "include roots; name the header from its layer's folder")
      continue()
    endif()
    if(included MATCHES "^eventforge/([^/]+)/")
      set(name "${CMAKE_MATCH_1}")
      if(NOT DEFINED "public_dir_${name}")
        continue()
      endif()
      set(target "${public_dir_${name}}")
      set(public_header TRUE)
    else()
      layer_of("${included}" target)
      if(target STREQUAL "")
        continue() # a system or third-party header
      endif()
      set(public_header FALSE)
      if(in_public EQUAL 0)
        refuse("includes \"${included}\", an internal header of ${target}/: "
               "a public header includes only <eventforge/...> and "
               "third-party headers")
        continue()
      endif()
    endif()
    if(dir STREQUAL "")
      continue() # the umbrella header: public headers only, checked above
    endif()
    list(FIND "allowed_${dir}" "${target}" ok)
    if(ok EQUAL -1)
      string(REPLACE ";" ", " may "${allowed_${dir}}")
      refuse("includes \"${included}\" (layer ${target}/), but ${dir}/ may "
             "include only: ${may}")
      continue()
    endif()
    if(public_header)
      continue()
    endif()
    string(LENGTH "${target}/" n)
    string(SUBSTRING "${included}" ${n} -1 header)
    list(FIND "exports_${target}" "${header}" exported)
    if(DEFINED "friends_${included}" AND NOT target STREQUAL dir)
      list(FIND "friends_${included}" "${dir}" friend)
      if(friend EQUAL -1)
        string(REPLACE ";" ", " friends "${friends_${included}}")
        refuse("includes \"${included}\", a header ${target}/ exports only "
               "to: ${friends}")
      endif()
    elseif(exported EQUAL -1 AND NOT target STREQUAL dir)
      refuse("includes \"${included}\", a header private to ${target}/: "
             "it is not in that layer's EXPORTS (CMakeLists.txt, ef_layer)")
    elseif(exported EQUAL -1 AND self_exported)
      refuse("includes \"${included}\": an exported header includes only "
             "exported ones (the layers above cannot see the others); export "
             "it too or move what they need")
    endif()
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
endfunction()

foreach(dir IN LISTS dirs)
  file(GLOB_RECURSE sources "${ROOT}/${dir}/*.cpp" "${ROOT}/${dir}/*.hpp")
  foreach(name IN LISTS public_names)
    if("${public_dir_${name}}" STREQUAL "${dir}")
      file(GLOB_RECURSE public_sources "${ROOT}/include/eventforge/${name}/*.hpp")
      list(APPEND sources ${public_sources})
    endif()
  endforeach()
  foreach(source IN LISTS sources)
    file(RELATIVE_PATH rel "${ROOT}" "${source}")
    layer_of("${rel}" owner)
    # A subfolder that is a layer of its own is checked as that layer; one
    # that is not (node_modules of a browser test, say) is none of ours.
    if(rel MATCHES "^include/" OR owner STREQUAL dir)
      check_file("${source}" "${dir}")
    endif()
  endforeach()
endforeach()
file(GLOB umbrella "${ROOT}/include/eventforge/*.hpp")
foreach(source IN LISTS umbrella)
  check_file("${source}" "")
endforeach()

if(NOT violations STREQUAL "")
  message(FATAL_ERROR "layer check failed: a layer includes a layer it does "
                      "not depend on or a header another layer keeps private "
                      "(CMakeLists.txt, ef_layer), or a public header an "
                      "internal one:\n"
                      "${violations}")
endif()
