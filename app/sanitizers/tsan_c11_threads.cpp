// Compiled into every executable only in the ThreadSanitizer build
// (-DEF_TSAN=ON). librdkafka creates its threads and locks its mutexes
// through C11 <threads.h> (thrd_create, mtx_lock, cnd_wait, ...), which
// glibc implements by calling its internal pthread functions directly. The
// TSan runtime of clang 14 intercepts the public pthread functions only, so
// it never learns of librdkafka's threads: their first malloc crashes inside
// TSan's allocator (a thread without TSan state), and librdkafka's locks are
// invisible to it. Defining the C11 functions here, over the public pthread
// API, routes them through TSan's interceptors: the dynamic linker binds
// librdkafka's references to the executable's definitions. glibc defines
// thrd_t as pthread_t, mtx_t and cnd_t with pthread's layout, and once_flag
// as pthread_once_t, which is what the casts rely on.

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <pthread.h>
#include <threads.h>

namespace {

int from_errno(int err) {
  switch (err) {
  case 0:
    return thrd_success;
  case EBUSY:
    return thrd_busy;
  case ETIMEDOUT:
    return thrd_timedout;
  case ENOMEM:
    return thrd_nomem;
  default:
    return thrd_error;
  }
}

struct start_args {
  thrd_start_t fn;
  void* arg;
};

void* trampoline(void* p) {
  auto args = *static_cast<start_args*>(p);
  std::free(p);
  // thrd_join reads the result back through a void*, as glibc does.
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(args.fn(args.arg)));
}

pthread_mutex_t* native(mtx_t* m) {
  return reinterpret_cast<pthread_mutex_t*>(m);
}

pthread_cond_t* native(cnd_t* c) {
  return reinterpret_cast<pthread_cond_t*>(c);
}

} // namespace

extern "C" {

int thrd_create(thrd_t* thr, thrd_start_t fn, void* arg) {
  auto* args = static_cast<start_args*>(std::malloc(sizeof(start_args)));
  if (args == nullptr)
    return thrd_nomem;
  *args = start_args{fn, arg};
  pthread_t id;
  int err = pthread_create(&id, nullptr, trampoline, args);
  if (err != 0) {
    std::free(args);
    return from_errno(err);
  }
  *thr = id;
  return thrd_success;
}

int thrd_join(thrd_t thr, int* res) {
  void* result = nullptr;
  int err = pthread_join(thr, &result);
  if (err == 0 && res != nullptr)
    *res = static_cast<int>(reinterpret_cast<std::intptr_t>(result));
  return from_errno(err);
}

int thrd_detach(thrd_t thr) {
  return from_errno(pthread_detach(thr));
}

int mtx_init(mtx_t* m, int type) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  if (type & mtx_recursive)
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  int err = pthread_mutex_init(native(m), &attr);
  pthread_mutexattr_destroy(&attr);
  return from_errno(err);
}

int mtx_lock(mtx_t* m) {
  return from_errno(pthread_mutex_lock(native(m)));
}

int mtx_trylock(mtx_t* m) {
  return from_errno(pthread_mutex_trylock(native(m)));
}

int mtx_timedlock(mtx_t* m, const struct timespec* deadline) {
  return from_errno(pthread_mutex_timedlock(native(m), deadline));
}

int mtx_unlock(mtx_t* m) {
  return from_errno(pthread_mutex_unlock(native(m)));
}

void mtx_destroy(mtx_t* m) {
  pthread_mutex_destroy(native(m));
}

int cnd_init(cnd_t* c) {
  return from_errno(pthread_cond_init(native(c), nullptr));
}

int cnd_signal(cnd_t* c) {
  return from_errno(pthread_cond_signal(native(c)));
}

int cnd_broadcast(cnd_t* c) {
  return from_errno(pthread_cond_broadcast(native(c)));
}

int cnd_wait(cnd_t* c, mtx_t* m) {
  return from_errno(pthread_cond_wait(native(c), native(m)));
}

int cnd_timedwait(cnd_t* c, mtx_t* m, const struct timespec* deadline) {
  return from_errno(pthread_cond_timedwait(native(c), native(m), deadline));
}

void cnd_destroy(cnd_t* c) {
  pthread_cond_destroy(native(c));
}

void call_once(once_flag* flag, void (*fn)(void)) {
  pthread_once(reinterpret_cast<pthread_once_t*>(flag), fn);
}

} // extern "C"
