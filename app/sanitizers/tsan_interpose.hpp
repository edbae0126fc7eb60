#pragma once

// TSan builds only: what the interposers of CAF member functions share
// (app/sanitizers/tsan_caf_mailbox.cpp, app/sanitizers/tsan_caf_logger.cpp).

#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ef::tsan {

/// libcaf_core's definition of the member function `mangled`, as a
/// pointer to member (Itanium ABI: the address and a zero this-adjustment).
template <class MemberPointer>
inline MemberPointer library_member(const char* mangled) {
  void* address = dlsym(RTLD_NEXT, mangled);
  if (address == nullptr) {
    std::fprintf(stderr, "tsan interposer: %s not found in libcaf_core\n",
                 mangled);
    std::abort();
  }
  struct {
    void* address;
    std::ptrdiff_t adjustment;
  } raw{address, 0};
  static_assert(sizeof(raw) == sizeof(MemberPointer));
  MemberPointer result;
  std::memcpy(&result, &raw, sizeof(result));
  return result;
}

} // namespace ef::tsan
