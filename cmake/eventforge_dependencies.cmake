# The libraries EventForge builds on (Debian 12 packages), as imported
# targets. Included by the build and by the installed package's
# eventforge-config.cmake, so a host finds them the same way.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
# The HTTP server: Boost.Beast on Asio (header-only), see docs/notes.
find_package(Boost 1.81 REQUIRED)
# Metrics: prometheus-cpp's registry and text exposition (the core library
# only; /metrics is served by EventForge's own HTTP server).
find_package(prometheus-cpp CONFIG REQUIRED COMPONENTS core)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka++ rdkafka)
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET libpqxx libpq)
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

# CAF 0.17 ships neither a CMake config nor a .pc file.
if(NOT TARGET CAF::core)
  find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
  find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
  add_library(CAF::core SHARED IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
