#include "app/shutdown_signals.hpp"

#include <pthread.h>

namespace ef::app {

sigset_t block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int wait_for_shutdown(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

} // namespace ef::app
