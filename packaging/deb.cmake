# cpack -G DEB, included from install.cmake (uses its components and APPSTORE_* variables). The packages ship the
# self-contained library as the one libappstoreserver.so.X: the system-linked one needs the Swift runtime, which no
# Debian package provides. Under /usr:
#   libappstoreserverX     lib/libappstoreserver.so.X.Y.Z + .so.X, and lib/appstoreserver/selfcontained/.so.X -> it
#   libappstoreserver-dev  header, .so links, .pc files, CMake package, ABI description (the files cmake --install
#                          writes; in the packages both flavours' names lead to the one library)
#   appstoreserver         bin/appstoreserver and completions (only when APPSTORE_TOOL / _COMPLETIONS_DIR are set)
# and in each, share/doc/<package>/copyright (machine-readable) and THIRD_PARTY_NOTICES.gz (packaging/notices.py).

# The packages' library files (components excluded from cmake --install): the self-contained library as the default
# libappstoreserver.so.X, and the self-contained directory's names leading to it.
install(FILES "${APPSTORE_DIST_LIB}" RENAME "${APPSTORE_SO_FULL}" DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        COMPONENT deb_runtime EXCLUDE_FROM_ALL)
install(FILES "${APPSTORE_PKG_BIN}/links/so_major_to_full" RENAME "${APPSTORE_SO_MAJOR}"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT deb_runtime EXCLUDE_FROM_ALL)
install(FILES "${APPSTORE_PKG_BIN}/links/sc_major_to_default" RENAME "${APPSTORE_SO_MAJOR}"
        DESTINATION "${APPSTORE_SC_LIBDIR}" COMPONENT deb_runtime EXCLUDE_FROM_ALL)
install(FILES "${APPSTORE_PKG_BIN}/links/so_to_major" RENAME libappstoreserver.so
        DESTINATION "${APPSTORE_SC_LIBDIR}" COMPONENT deb_development EXCLUDE_FROM_ALL)

# Each package's /usr/share/doc/<package>/copyright (Debian policy 12.5; machine-readable format) and
# THIRD_PARTY_NOTICES.gz, made from LICENSE and THIRD_PARTY_NOTICES when configuring.
set(APPSTORE_DEB_DOC "${APPSTORE_PKG_BIN}/debian")
set(_appstore_notices_inputs "${CMAKE_CURRENT_SOURCE_DIR}/LICENSE" "${CMAKE_CURRENT_SOURCE_DIR}/THIRD_PARTY_NOTICES"
    "${CMAKE_CURRENT_LIST_DIR}/notices.py")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_appstore_notices_inputs})
execute_process(COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/notices.py" debian "${APPSTORE_DEB_DOC}"
                RESULT_VARIABLE _appstore_rc)
if(NOT _appstore_rc EQUAL 0)
  message(FATAL_ERROR "packaging/notices.py debian ${APPSTORE_DEB_DOC} failed")
endif()
function(appstore_deb_doc package component)
  install(FILES "${APPSTORE_DEB_DOC}/copyright" "${APPSTORE_DEB_DOC}/THIRD_PARTY_NOTICES.gz"
          DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}" COMPONENT ${component} EXCLUDE_FROM_ALL)
endfunction()

set(CPACK_PACKAGE_NAME appstoreserver)
set(CPACK_PACKAGE_VENDOR "appstoreserver")
set(CPACK_PACKAGE_CONTACT "appstoreserver maintainers <maintainers@users.noreply.a-seed-c3c28c64.example>")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)      # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_COMPONENTS_ALL deb_runtime development deb_development)
set(CPACK_COMPONENT_DEB_RUNTIME_GROUP lib)
set(CPACK_COMPONENT_DEVELOPMENT_GROUP dev)
set(CPACK_COMPONENT_DEB_DEVELOPMENT_GROUP dev)

# Debian names a shared library's package after its SONAME (policy 8.1), so that a future libappstoreserver.so.1
# can be installed next to this one; the header, links, .pc and CMake files go to -dev (policy 8.4).
set(APPSTORE_DEB_LIB "libappstoreserver${PROJECT_VERSION_MAJOR}")
set(CPACK_DEBIAN_LIB_PACKAGE_NAME "${APPSTORE_DEB_LIB}")
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# Written out: the packaged library is the self-contained one, linked against glibc 2.28's symbol set with libstdc++
# and libgcc inside (scripts/check-glibc proves it), so glibc is its only dependency. Tests/consumers/run checks that
# this covers everything dpkg-shlibdeps finds.
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libc6 (>= 2.28)")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)   # DEBIAN/shlibs and the ldconfig calls (a global setting)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_LIB_DESCRIPTION "App Store server toolkit - C library
Verifies and decodes App Store signed data (notifications V2, transactions,
renewal info, app transactions), creates App Store signatures, calls the App
Store Server API, reads legacy receipts and keeps a purchase ledger. This is
the self-contained build: the Swift runtime, OpenSSL's libcrypto, SQLite,
libstdc++ and libgcc are linked in and only the appstore_* C API is exported,
so it needs only glibc: no Swift toolchain, no libssl3, no libsqlite3.")

appstore_deb_doc("${APPSTORE_DEB_LIB}" deb_runtime)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libappstoreserver-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${APPSTORE_DEB_LIB} (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION "App Store server toolkit - development files
The C header appstoreserver.h, pkg-config files (appstoreserver, appstoreserver-selfcontained), the CMake package
(find_package(appstoreserver): appstoreserver::appstoreserver, appstoreserver::selfcontained) and the
machine-readable ABI description for binding generators.")
appstore_deb_doc(libappstoreserver-dev deb_development)

if(APPSTORE_TOOL OR APPSTORE_TOOL_COMPLETIONS_DIR)
  list(APPEND CPACK_COMPONENTS_ALL tool deb_tool)
  set(CPACK_COMPONENT_TOOL_GROUP tool)
  set(CPACK_COMPONENT_DEB_TOOL_GROUP tool)
  appstore_deb_doc(appstoreserver deb_tool)
  set(CPACK_DEBIAN_TOOL_PACKAGE_NAME appstoreserver)
  set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION utils)
  # Written out, as the library's: cli/build links everything but glibc in statically, against glibc 2.28's symbol
  # set (dpkg-shlibdeps would say libc6 (>= 2.34): it maps libpthread's and libdl's symbols to the release that merged
  # them into libc). Tests/consumers/run checks the binary's real floor; deb-fixup.cmake refuses a tool that needs
  # the toolchain's shared Swift runtime.
  set(CPACK_DEBIAN_TOOL_PACKAGE_DEPENDS "libc6 (>= 2.28)")
  set(CPACK_DEBIAN_TOOL_DESCRIPTION "App Store server toolkit - command-line tool
The appstoreserver command and its shell completions. One binary that needs
only glibc: the Swift runtime, OpenSSL's libssl and libcrypto and SQLite are
linked in.")
endif()

# No Swift runtime dependency in any package; Installed-Size counted once per file.
set(CPACK_POST_BUILD_SCRIPTS "${CMAKE_CURRENT_LIST_DIR}/deb-fixup.cmake")

include(CPack)
