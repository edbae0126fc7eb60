// Compiled into every executable (eventforge, the test suites) only when
// built with -DEF_SANITIZE=ON: the options each instrumented process starts
// with, so that `ctest`, `eventforge serve` and the processes tests spawn
// need no environment to fail on the first report. An environment variable
// (ASAN_OPTIONS, ...) still overrides them.

extern "C" {

const char* __asan_default_options() {
  return "detect_leaks=1:abort_on_error=1:check_initialization_order=1";
}

const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1";
}

// Leaks in third-party code that EventForge cannot free, each narrowed to
// the function that allocates and with the reason it is not ours.
const char* __lsan_default_suppressions() {
  // libpq's PQmakeEmptyPGresult, called inside PQexecPrepared/PQexecParams
  // from pqxx::connection_base::exec_prepared (libpqxx 6.4) when the server
  // ends the connection mid-statement (backend terminated, server stopped):
  // the error result libpq builds there is never freed (432 + 4,096 bytes
  // per broken statement). No EventForge frame holds a PGresult; libpqxx's
  // result owns it through a shared_ptr, and a leak of ours would show its
  // own allocation. Seen only in the two tests that kill the database.
  return "leak:PQmakeEmptyPGresult\n";
}

} // extern "C"
