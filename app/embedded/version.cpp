#include <eventforge/embedded/version.hpp>

namespace ef {

std::string version() {
  return EF_VERSION;
}

} // namespace ef
