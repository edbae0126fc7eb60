# The Debian package (`cmake --build build --target package`): the
# executable, the library package (headers, shared libraries, CMake files),
# the systemd unit, /etc/eventforge/eventforge.ini with every default
# commented out, and maintainer scripts that create the system user
# `eventforge` and /var/lib/eventforge (deploy/debian/). docs/operations.md,
# "Running as a Debian service", says how to install and run it.
#
# The service's files are installed to absolute places (/etc, /lib/systemd)
# as the component "service", which `cmake --install` leaves out unless
# asked (--component service): a plain install into a prefix never writes
# to the machine's /etc.

# /etc/eventforge/eventforge.ini, made from config/eventforge.ini.example
# (generated from config/options.cpp; a unit test keeps it current): every
# key commented out at its default, so an upgrade's new defaults apply
# unless the operator chose otherwise; one active key, the private
# cluster's data directory in the service's state directory.
set(EF_PACKAGE_INI ${CMAKE_CURRENT_BINARY_DIR}/deploy/eventforge.ini)
set(ef_ini_source ${CMAKE_CURRENT_SOURCE_DIR}/config/eventforge.ini.example)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ef_ini_source})
file(READ ${ef_ini_source} ef_ini)
string(FIND "${ef_ini}" "\n[" ef_first_section)
string(SUBSTRING "${ef_ini}" ${ef_first_section} -1 ef_ini)
string(REGEX REPLACE "\n([a-z][a-z0-9-]*=)" "\n;\\1" ef_ini "${ef_ini}")
string(FIND "${ef_ini}" "\n;data-dir=" ef_first_data_dir)
string(FIND "${ef_ini}" "\n;data-dir=" ef_last_data_dir REVERSE)
if(ef_first_data_dir EQUAL -1 OR NOT ef_first_data_dir EQUAL ef_last_data_dir)
  message(FATAL_ERROR "${ef_ini_source}: expected one data-dir key "
    "(database.data-dir), the one the package sets")
endif()
string(REGEX REPLACE "\n(;data-dir=[^\n]*)" "\n\\1\ndata-dir=\"/var/lib/eventforge/pg\""
  ef_ini "${ef_ini}")
file(WRITE ${EF_PACKAGE_INI}
"; EventForge service configuration, read by eventforge.service
; (eventforge serve --config-file=/etc/eventforge/eventforge.ini).
; Every key is listed with its default, commented out: remove the ';' to
; change one. A command-line option (--section.key=VALUE, e.g. in a
; `systemctl edit eventforge` drop-in) wins over this file. Then
; `systemctl restart eventforge`. /usr/share/doc/eventforge/config.md
; describes each key.
;
; With database.url and kafka.brokers empty the service runs a private
; PostgreSQL cluster (in database.data-dir, below) and an in-process broker;
; set both for a production deployment.
${ef_ini}")

install(FILES deploy/systemd/eventforge.service
  DESTINATION /lib/systemd/system COMPONENT service EXCLUDE_FROM_ALL)
install(FILES ${EF_PACKAGE_INI}
  DESTINATION /etc/eventforge COMPONENT service EXCLUDE_FROM_ALL)
install(FILES README.md docs/operations.md docs/config.md
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/eventforge
  COMPONENT service EXCLUDE_FROM_ALL)

if(NOT SYSTEMD_FOUND)
  return() # no package: its unit would never see READY=1 (see above)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME eventforge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "order service with a transactional outbox, Kafka and idempotent consumers")
# The extended description (CPack puts the summary above it).
# The extended description, each line indented by CPack, below the summary.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"EventForge writes each order and its event in one PostgreSQL transaction,
publishes the events to Kafka from the outbox and applies them exactly
once per consumer, on a supervised CAF actor system. This package holds
the eventforge executable with its systemd service, and the libraries,
headers and CMake package a host application links.")
set(EF_PACKAGE_MAINTAINER "EventForge maintainers <eventforge@example.org>"
  CACHE STRING "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${EF_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Debian ships binaries stripped; a crash's backtrace still names exported
# functions. Build with -DEF_FULL_DEBUG_INFO=ON and run from the build tree
# to debug.
set(CPACK_STRIP_FILES ON)
# The whole install (the library's component, "Unspecified") plus the
# service's files, in one package.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified service)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS OFF)
# Runtime dependencies from the ELF files themselves where dpkg-shlibdeps
# (dpkg-dev) is there; else the Debian 12 packages they link, by hand.
find_program(EF_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(EF_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
else()
  message(STATUS "package: dpkg-shlibdeps not found (dpkg-dev); the "
    "package's dependencies are Debian 12's library packages, listed")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, libc6, libgcc-s1, libstdc++6, \
libcaf-core0.17, libcpp-httplib0.11, libfmt9, libpq5, libpqxx-6.4, \
libprometheus-cpp-core1.0, librdkafka1, librdkafka++1, libspdlog1.10, \
libsystemd0")
endif()
# The shipped configuration runs a private PostgreSQL cluster from these
# binaries; a deployment on an external database does without them.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "postgresql-15")
# A shlibs file for packages linking libeventforge-core/-http. CPack adds
# no ldconfig call to maintainer scripts of our own: the triggers file asks
# dpkg for it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/conffiles
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/triggers
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postinst
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/prerm
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postrm)
# Scripts 0755, conffiles 0644, whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
