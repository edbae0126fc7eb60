# The source shape check (source_shape.cpp) checked itself, on a scratch
# tree written here, so it does not depend on the state of the real one:
#   1. a tree of functions of 80 lines (declaration to closing brace) and an
#      app source of 300 lines passes, braces in comments, strings, raw
#      strings and character literals notwithstanding;
#   2. one line more in a function fails, naming the file, the line the
#      declaration starts on, the function and its length;
#   3. one line more in an app source fails, naming the file;
#   4. an exception that no longer matches an offence fails.
#   cmake -DCHECKER=<source_shape binary> -DWORK=<scratch dir> -P this
cmake_minimum_required(VERSION 3.22)

function(run_check expect_ok what)
  execute_process(COMMAND ${CHECKER} ${WORK}/tree ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_ok AND NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: the check failed:\n${out}${err}")
  endif()
  if(NOT expect_ok AND NOT rc EQUAL 1)
    message(FATAL_ERROR "${what}: expected a failure (1), got ${rc}:\n${out}")
  endif()
  set(check_output "${out}" PARENT_SCOPE)
endfunction()

function(expect_in text what)
  string(FIND "${check_output}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: the output lacks \"${text}\":\n${check_output}")
  endif()
endfunction()

# `n` lines of a function's inside, which hold what must not count as
# braces: comments, strings, raw strings, character literals, digit
# separators, and blocks and lambdas that count toward the function.
function(body n out)
  set(lines "")
  set(have 0)
  while(have LESS n)
    math(EXPR kind "${have} % 5")
    math(EXPR left "${n} - ${have}")
    if(kind EQUAL 0)
      string(APPEND lines "  auto s${have} = \"{ not a brace\"; // nor { this\n")
    elseif(kind EQUAL 1 AND left GREATER 1)
      string(APPEND lines "  auto r${have} = R\"x({ )\" }\n  still raw {)x\"; /* { */\n")
      math(EXPR have "${have} + 1")
    elseif(kind EQUAL 2)
      string(APPEND lines "  char c${have} = '{'; int n${have} = 1'000;\n")
    elseif(kind EQUAL 3)
      string(APPEND lines "  if (s${have}.empty()) { return; }\n")
    else()
      string(APPEND lines "  auto l${have} = [&](int x) { return x; };\n")
    endif()
    math(EXPR have "${have} + 1")
  endwhile()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# A source with a constructor (with an initializer list), a const member
# function with a trailing return type and a lambda in a table, each of
# `length` lines from its declaration to its closing brace. The constructor
# starts on line 10, the member function on line 10 + length, the lambda on
# line 12 + 2 * length.
function(write_source path length)
  math(EXPR inner "${length} - 2")
  body(${inner} b)
  file(WRITE "${path}"
    "#include <string>\n"
    "#define OPEN {\n"
    "namespace ef::shape {\n"
    "struct widget {\n"
    "  widget(int a, int b);\n"
    "  auto size() const -> int;\n"
    "  int a_{0}, b_{0};\n"
    "};\n"
    "\n"
    "widget::widget(int a, int b) : a_{a}, b_(b) {\n${b}}\n"
    "auto widget::size() const -> int {\n${b}}\n"
    "struct route { const char* path; void (*handle)(std::string&); };\n"
    "const route routes[] = {\n  {\"/x\", [](std::string& s) {\n${b}  }},\n};\n"
    "} // namespace ef::shape\n")
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/tree/app" "${WORK}/tree/persistence")
write_source("${WORK}/tree/app/widget.cpp" 80)
file(STRINGS "${WORK}/tree/app/widget.cpp" lines)
list(LENGTH lines n)
math(EXPR pad "300 - ${n}")
string(REPEAT "//\n" ${pad} tail)
file(APPEND "${WORK}/tree/app/widget.cpp" "${tail}")
file(WRITE "${WORK}/tree/persistence/long.cpp" "// no limit on length here\n")
string(REPEAT "//\n" 400 filler)
file(APPEND "${WORK}/tree/persistence/long.cpp" "${filler}")
run_check(TRUE "functions of 80 lines in a 300-line app source")

# One line more in each of them.
write_source("${WORK}/tree/persistence/planted.cpp" 81)
run_check(FALSE "a planted 81-line constructor")
expect_in("persistence/planted.cpp:10: function widget::widget is 81 lines (limit 80)"
          "the planted constructor")
expect_in("persistence/planted.cpp:91: function widget::size is 81 lines (limit 80)"
          "the planted member function")
expect_in("persistence/planted.cpp:174: function lambda is 81 lines (limit 80)"
          "the planted lambda in a table")
file(REMOVE "${WORK}/tree/persistence/planted.cpp")

file(APPEND "${WORK}/tree/app/widget.cpp" "//\n")
run_check(FALSE "a 301-line app source")
expect_in("app/widget.cpp: 301 lines (limit 300)" "the long app source")

file(WRITE "${WORK}/exceptions.txt"
  "app/widget.cpp file a planted exception\n"
  "app/widget.cpp widget::size a stale exception\n")
run_check(FALSE "a stale exception" ${WORK}/exceptions.txt)
expect_in("exceptions.txt:2: app/widget.cpp widget::size is within its limit now"
          "the stale exception")
string(FIND "${check_output}" "app/widget.cpp: 301" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "a declared exception was reported:\n${check_output}")
endif()
message(STATUS "the shape check passes 80 and 300 lines and refuses one more")
