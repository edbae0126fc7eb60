// Compiled into every executable (eventforge, the test suites) only when
// built with -DEF_SANITIZE=ON or -DEF_TSAN=ON: the options each instrumented
// process starts with, so that `ctest`, `eventforge serve` and the processes
// tests spawn need no environment to fail on the first report. An environment
// variable (ASAN_OPTIONS, ...) still overrides them.

extern "C" {

#if defined(EF_TSAN_BUILD)

const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:history_size=4";
}

// Races TSan reports only because CAF 0.17 (libcaf_core) and librdkafka
// are not instrumented: they order these accesses with atomics TSan cannot
// see. Each pattern names a third-party function or library, never an
// EventForge one; docs/sanitizers.md says what this leaves unchecked.
const char* __tsan_default_suppressions() {
  return
    // An actor's state, or a message's shared contents, is destroyed by
    // whichever thread drops the last reference to it; CAF's atomic
    // reference count orders that after every earlier use, as it does for
    // an exiting actor's group subscriptions.
    "race:caf::intrusive_ptr_release\n"
    "race:caf::message::~message\n"
    "race:block_dtor\n"
    "race:caf::mixin::subscriber*cleanup\n"
    "race:std::_Hashtable<caf::group\n"
    // Shutting the actor system down: the main thread destroys CAF's own
    // actors, links and registry entries once CAF's atomic count of
    // running actors says they are done.
    "race:caf::actor_registry::erase\n"
    "race:caf::monitorable_actor::cleanup\n"
    "race:caf::scoped_actor::~scoped_actor\n"
    "race:caf::scheduled_actor::~scheduled_actor\n"
    // Memory librdkafka frees on its own threads, ordered by its own
    // reference counts (a record's headers, a message's payload). Not
    // libcaf_core: that would also hide the mutexes TSan needs from it.
    "called_from_lib:librdkafka.so\n"
    // librdkafka initialises a mutex and hands it to a thread it starts
    // through its own atomics (only our C11 shim's mtx_init names it).
    "race:mtx_init\n"
    // cpp-httplib, the HTTP client of the tests and `eventforge chaos`:
    // its function-local static std::regex objects are published by the
    // inline fast path of C++ static initialisation, compiled into the
    // uninstrumented library.
    "race:libcpp-httplib.so\n";
}

#else

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

#endif

} // extern "C"
