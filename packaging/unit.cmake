# Installs the systemd unit (packaging/package.cmake runs it at install
# time, where CMAKE_INSTALL_PREFIX is this install's): HYPERFED_UNIT_SRC,
# deploy/systemd/hyperfedd.service, with its ExecStart= binary in
# HYPERFED_UNIT_BINDIR and Documentation=man:hyperfedd(1), written to
# HYPERFED_UNIT_OUT and installed where systemd reads units for that prefix:
# /lib/systemd/system for /usr (Debian 12 keeps units there), else
# PREFIX/lib/systemd/system (systemd reads /usr/local/lib/systemd/system).
file(READ "${HYPERFED_UNIT_SRC}" unit)
string(FIND "${unit}" "\nExecStart=/usr/local/bin/hyperfedd " at)
if(at EQUAL -1)
  message(FATAL_ERROR "${HYPERFED_UNIT_SRC}: no ExecStart=/usr/local/bin/hyperfedd to point at ${HYPERFED_UNIT_BINDIR}")
endif()
string(REPLACE "/usr/local/bin/" "${HYPERFED_UNIT_BINDIR}/" unit "${unit}")
string(REGEX REPLACE "\nDescription=([^\n]*)\n" "\nDescription=\\1\nDocumentation=man:hyperfedd(1)\n" unit "${unit}")
file(WRITE "${HYPERFED_UNIT_OUT}" "${unit}")

if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(dir /lib/systemd/system)
else()
  set(dir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
# file(INSTALL) puts $DESTDIR in front itself (cpack installs with
# DESTDIR and prefix /usr).
file(INSTALL DESTINATION "${dir}" TYPE FILE FILES "${HYPERFED_UNIT_OUT}")
