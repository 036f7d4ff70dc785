# The Debian package (issue 32, part 2): install rules and CPack's DEB
# generator. Included from CMakeLists.txt; after a build,
#
#   cd build && cpack -G DEB          # or: cmake --build build --target deb
#
# writes hyperfed_<version>_amd64.deb. It holds hyperfedd, hyperfedctl and
# hyperfed-sim in /usr/bin, their man pages (made from --help by help2man),
# the hardened systemd unit of deploy/systemd with /usr/bin paths, the
# example configs in /usr/share/doc/hyperfed/examples, and scripts/gen-certs,
# the simulator's trace and the Slurm sites' job_submit.lua in
# /usr/share/hyperfed. postinst makes the
# system user hyperfed, /var/lib/hyperfed (0700) and /etc/hyperfed (0750,
# group hyperfed), and leaves the unit disabled: it needs the site's config
# and certificates first (docs/operations.md, "Install from the Debian
# package"). The dependencies are Debian 12's package names, found by
# dpkg-shlibdeps from the binaries' libraries. tests/package/debian-package
# (ctest debian_package) installs the package in a fresh Debian 12 container.

include(GNUInstallDirs)

# `cpack` and `make install` install what is built; they do not build every
# target (the tests) first. The `deb` target below builds what the package holds.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)
# Folders the install makes are 0755 whatever the umask of whoever builds.
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
    WORLD_READ WORLD_EXECUTE)

set(HYPERFED_PACKAGING_DIR ${CMAKE_SOURCE_DIR}/packaging)
set(HYPERFED_PACKAGING_OUT ${CMAKE_BINARY_DIR}/packaging)
file(MAKE_DIRECTORY ${HYPERFED_PACKAGING_OUT}/man)

# --- binaries ---------------------------------------------------------------
install(TARGETS hyperfedd hyperfedctl hyperfed-sim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# A stripped install (cpack: CPACK_STRIP_FILES; cmake --install --strip) also
# drops the sections dh_strip drops, which plain `strip` keeps.
install(CODE "
  if(CMAKE_INSTALL_DO_STRIP)
    foreach(b hyperfedd hyperfedctl hyperfed-sim)
      execute_process(COMMAND \"${CMAKE_STRIP}\" --remove-section=.comment --remove-section=.note --strip-unneeded
                              \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/\${b}\")
    endforeach()
  endif()")

# --- man pages --------------------------------------------------------------
# help2man runs each installed binary's --help at install time (so a plain
# `cpack` after a build has them, and the build itself needs no help2man);
# packaging/man/<binary>.h2m adds what --help does not say. gzip -n: no
# time stamp, so the package is the same for the same binaries.
find_program(HYPERFED_HELP2MAN help2man)
find_program(HYPERFED_GZIP gzip)
set(HYPERFED_MAN_PAGES)
foreach(bin hyperfedd hyperfedctl hyperfed-sim)
  set(page ${HYPERFED_PACKAGING_OUT}/man/${bin}.1)
  list(APPEND HYPERFED_MAN_PAGES ${page}.gz)
  if(HYPERFED_HELP2MAN AND HYPERFED_GZIP)
    install(CODE "
      execute_process(COMMAND \"${HYPERFED_HELP2MAN}\" --no-info --no-discard-stderr
                              --version-string=${PROJECT_VERSION}
                              --include=${HYPERFED_PACKAGING_DIR}/man/${bin}.h2m
                              --output=${page} \"$<TARGET_FILE:${bin}>\"
                      RESULT_VARIABLE rc ERROR_VARIABLE err)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR \"help2man ${bin} failed: \${err}\")
      endif()
      execute_process(COMMAND \"${HYPERFED_GZIP}\" -9nf ${page} RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR \"gzip ${page} failed\")
      endif()")
  else()
    install(CODE "message(FATAL_ERROR \"the package's man pages need help2man and gzip: \"
                                       \"apt-get install help2man (scripts/setup installs it)\")")
  endif()
endforeach()
install(FILES ${HYPERFED_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# --- the systemd unit ---------------------------------------------------------
# deploy/systemd/hyperfedd.service, made and installed at install time by
# packaging/unit.cmake with the binary where this install puts it: the
# package's (prefix /usr) in /lib/systemd/system, starting /usr/bin/hyperfedd;
# a plain `cmake --install` (prefix /usr/local) in
# /usr/local/lib/systemd/system, starting /usr/local/bin/hyperfedd.
install(CODE "set(HYPERFED_UNIT_SRC \"${CMAKE_SOURCE_DIR}/deploy/systemd/hyperfedd.service\")
              set(HYPERFED_UNIT_OUT \"${HYPERFED_PACKAGING_OUT}/hyperfedd.service\")
              set(HYPERFED_UNIT_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
              include(\"${HYPERFED_PACKAGING_DIR}/unit.cmake\")")

# --- documentation, examples, certificates for trials --------------------------
set(HYPERFED_DOCDIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/hyperfed)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/config/examples/ DESTINATION ${HYPERFED_DOCDIR}/examples
        PATTERN certs EXCLUDE PATTERN state EXCLUDE PATTERN .gitignore EXCLUDE)
install(FILES ${HYPERFED_PACKAGING_DIR}/copyright ${HYPERFED_PACKAGING_DIR}/README.Debian
        DESTINATION ${HYPERFED_DOCDIR})
# A native package's changelog (its version filled in), compressed.
configure_file(${HYPERFED_PACKAGING_DIR}/changelog.in ${HYPERFED_PACKAGING_OUT}/changelog @ONLY)
install(CODE "execute_process(COMMAND \"${HYPERFED_GZIP}\" -9nkf ${HYPERFED_PACKAGING_OUT}/changelog)")
install(FILES ${HYPERFED_PACKAGING_OUT}/changelog.gz DESTINATION ${HYPERFED_DOCDIR})
# scripts/gen-certs: a test CA and site certificates (docs/operations.md,
# "Secure"); README.Debian names it.
install(PROGRAMS ${CMAKE_SOURCE_DIR}/scripts/gen-certs DESTINATION ${CMAKE_INSTALL_DATADIR}/hyperfed)
# hyperfed-sim paper sharcnet reads it from $HYPERFED_TRACE_DIR (its built-in
# default is the source tree's sim/traces).
install(FILES ${CMAKE_SOURCE_DIR}/sim/traces/lublin_256.swf DESTINATION ${CMAKE_INSTALL_DATADIR}/hyperfed/traces)
install(FILES ${CMAKE_SOURCE_DIR}/sim/traces/README.md DESTINATION ${HYPERFED_DOCDIR}/traces)
# A Slurm site's placement window: job_submit.lua, for the operator to copy or
# link next to slurm.conf (docs/adapters.md, "Placement at arrival
# (job_submit.lua)"; README.Debian names it). Not in /etc/slurm: that folder
# is Slurm's packages' and the site's.
install(FILES ${CMAKE_SOURCE_DIR}/deploy/slurm/job_submit.lua DESTINATION ${CMAKE_INSTALL_DATADIR}/hyperfed/slurm)
# lintian's false positives, each with its reason.
install(FILES ${HYPERFED_PACKAGING_DIR}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME hyperfed)

# --- CPack ---------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hyperfed)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hyperfed maintainers <maintainers@users.noreply.a-seed-3f41405d.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # hyperfed_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "federation daemon that balances batch jobs across clusters")
# The extended description; CPack puts the summary above it and a " ." for
# the empty line.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "hyperfed balances pending batch jobs across a federation of computing
clusters (sites). Each site's master node runs hyperfedd; the daemons form
a logical hypercube over mutual TLS, exchange load and capacity, and move
pending jobs between the sites' schedulers (Slurm, or any scheduler through
the exec adapter) exactly once.

This package holds hyperfedd, its systemd unit, the operator's CLI
hyperfedctl and the offline simulator hyperfed-sim.")
# Libraries: dpkg-shlibdeps (dpkg-dev) reads the binaries. adduser: postinst.
# openssl: /usr/share/hyperfed/gen-certs.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssl")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${HYPERFED_PACKAGING_DIR}/postinst ${HYPERFED_PACKAGING_DIR}/prerm
    ${HYPERFED_PACKAGING_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)

add_custom_target(deb COMMAND ${CMAKE_CPACK_COMMAND} -G DEB --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake
                  WORKING_DIRECTORY ${CMAKE_BINARY_DIR} COMMENT "cpack -G DEB" VERBATIM)
add_dependencies(deb hyperfedd hyperfedctl hyperfed-sim)
