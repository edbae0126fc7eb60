# Writes a C++ source that holds the recovery page's files (app/page/) as
# string literals, so that `eventforge serve` needs nothing at run time.
# Run as: cmake -DSRC=<app/page dir> -DOUT=<file.cpp> -P embed_page.cmake
# file|path|content type (all UTF-8; a ';' would split the CMake list)
set(assets
  "index.html|/|text/html"
  "page.css|/assets/page.css|text/css"
  "page.js|/assets/page.js|text/javascript")
set(delim "ef_page_asset")
set(body "")
foreach(entry IN LISTS assets)
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 file)
  list(GET parts 1 path)
  list(GET parts 2 type)
  file(READ "${SRC}/${file}" content)
  string(FIND "${content}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the literal delimiter ${delim}")
  endif()
  string(APPEND body "    {\"${path}\", \"${type}; charset=utf-8\",\n     R\"${delim}(${content})${delim}\"},\n")
endforeach()
file(WRITE "${OUT}.tmp"
"// Generated from app/page/ by cmake/embed_page.cmake; do not edit.
#include \"app/page/assets.hpp\"

namespace ef::app {

const std::vector<page_asset>& page_assets() {
  static const std::vector<page_asset> all{
${body}  };
  return all;
}

} // namespace ef::app
")
# Only a changed file is replaced: nothing recompiles for nothing.
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
