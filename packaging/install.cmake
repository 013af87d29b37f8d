# Installation (and, through deb.cmake, Debian packages), included from CMakeLists.txt once the libraries and `dist`
# are defined.
#
# cmake --install build --prefix P  (components runtime, selfcontained, development, tool):
#   include/appstoreserver.h
#   lib/libappstoreserver.so.X.Y.Z, .so.X, .so                      the default: the self-contained library (the
#                                                                   stripped build/dist one; needs only glibc)
#   lib/appstoreserver/selfcontained/libappstoreserver.so.X, .so    the same library under its old name (links)
#   lib/appstoreserver/swiftrt/libappstoreserver.so.X.Y.Z, .so.X, .so   the system-linked library (needs the Swift
#                                                                   runtime: RUNPATH APPSTORE_INSTALL_RPATH, libcrypto)
#   lib/pkgconfig/appstoreserver.pc (self-contained), appstoreserver-selfcontained.pc (the same),
#                 appstoreserver-swiftrt.pc (system-linked)
#   lib/cmake/appstoreserver/appstoreserverConfig.cmake, appstoreserverConfigVersion.cmake
#   share/appstoreserver/appstoreserver.abi.json                   the machine-readable ABI, for binding generators
#   share/doc/appstoreserver/LICENSE, THIRD_PARTY_NOTICES           the licence, and what each binary contains
#   bin/appstoreserver, shell completions                           only when APPSTORE_TOOL / _COMPLETIONS_DIR are set
# (lib is CMAKE_INSTALL_LIBDIR.) Nothing installed holds a path of the build or source tree: the .pc files and the
# CMake package compute every path from their own location, so the installed tree can be moved.
#
# cpack -G DEB: deb.cmake. Its own components (deb_*) are excluded from cmake --install; CPack installs them by name.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(APPSTORE_SO_MAJOR "libappstoreserver.so.${PROJECT_VERSION_MAJOR}")
set(APPSTORE_SO_FULL "libappstoreserver.so.${PROJECT_VERSION}")
set(APPSTORE_DIST_LIB "${CMAKE_CURRENT_BINARY_DIR}/dist/${APPSTORE_SO_MAJOR}")
set(APPSTORE_SC_LIBDIR "${CMAKE_INSTALL_LIBDIR}/appstoreserver/selfcontained")
set(APPSTORE_SWIFTRT_LIBDIR "${CMAKE_INSTALL_LIBDIR}/appstoreserver/swiftrt")
set(APPSTORE_PKG_BIN "${CMAKE_CURRENT_BINARY_DIR}/packaging")

# --- RUNPATH of the system-linked library -------------------------------------------------------------------
# swiftc gives every binary it links the toolchain's runtime directory as RUNPATH. Take that over, so the build
# tree keeps it and the installed copy gets APPSTORE_INSTALL_RPATH: by default the same toolchain directory (the
# library needs libswiftCore & co. from there at run time; it is not a path of the build or source tree), empty for
# none (the Swift runtime then has to be found through ld.so.conf or LD_LIBRARY_PATH).
get_filename_component(_appstore_toolchain_usr "${CMAKE_Swift_COMPILER}" DIRECTORY)
get_filename_component(_appstore_toolchain_usr "${_appstore_toolchain_usr}" DIRECTORY)
string(TOLOWER "${CMAKE_SYSTEM_NAME}" _appstore_os)
set(APPSTORE_SWIFT_RUNTIME_DIR "${_appstore_toolchain_usr}/lib/swift/${_appstore_os}")
if(NOT EXISTS "${APPSTORE_SWIFT_RUNTIME_DIR}/libswiftCore.so")
  message(WARNING "Swift runtime not found at ${APPSTORE_SWIFT_RUNTIME_DIR} (derived from ${CMAKE_Swift_COMPILER})")
endif()
set(APPSTORE_INSTALL_RPATH "${APPSTORE_SWIFT_RUNTIME_DIR}" CACHE STRING
    "RUNPATH of the installed system-linked libappstoreserver (the Swift runtime's directory); empty for none")
target_link_options(appstoreserver PRIVATE -no-toolchain-stdlib-rpath)
set_target_properties(appstoreserver PROPERTIES INSTALL_RPATH "${APPSTORE_INSTALL_RPATH}")
if(APPSTORE_INSTALL_RPATH STREQUAL APPSTORE_SWIFT_RUNTIME_DIR)
  # The same in both places: link it once. (A RUNPATH to be rewritten at install gets padded with ':' in the build
  # tree, an empty entry the loader reads as the current directory.)
  set_target_properties(appstoreserver PROPERTIES BUILD_WITH_INSTALL_RPATH ON)
else()
  set_target_properties(appstoreserver PROPERTIES BUILD_RPATH "${APPSTORE_SWIFT_RUNTIME_DIR}")
endif()

# --- hooks for the command-line tool (built by SwiftPM, not here) ---------------------------------------------
set(APPSTORE_TOOL "" CACHE FILEPATH "Built appstoreserver executable to install as bin/appstoreserver (empty: none)")
set(APPSTORE_TOOL_COMPLETIONS_DIR "" CACHE PATH
    "Directory of completion scripts to install (appstoreserver.bash, _appstoreserver for zsh, appstoreserver.fish)")

# --- 1. libraries -------------------------------------------------------------------------------------------
# The default name (lib/libappstoreserver.so, `-lappstoreserver`, pkg-config appstoreserver,
# appstoreserver::appstoreserver) is the self-contained library, which works everywhere; the system-linked one, which
# needs the Swift runtime of the toolchain that built it, has its own folder and names (swiftrt). The Debian packages
# have the same layout without the swiftrt folder (deb.cmake).
install(TARGETS appstoreserver
  LIBRARY DESTINATION "${APPSTORE_SWIFTRT_LIBDIR}" COMPONENT runtime NAMELINK_COMPONENT runtime)

# The self-contained library installed is the stripped build/dist copy the selfcontained_lib test checks; its
# links are made here (CMake installs a symbolic link as a link).
function(appstore_link name target)
  file(MAKE_DIRECTORY "${APPSTORE_PKG_BIN}/links")
  file(CREATE_LINK "${target}" "${APPSTORE_PKG_BIN}/links/${name}" SYMBOLIC)
endfunction()
appstore_link(so_major_to_full "${APPSTORE_SO_FULL}")
appstore_link(so_to_major "${APPSTORE_SO_MAJOR}")
appstore_link(sc_major_to_default "../../${APPSTORE_SO_FULL}")

# install(FILES) gives mode 0644, as install(TARGETS) gives the system-linked one on Debian (CMAKE_INSTALL_SO_NO_EXE).
install(FILES "${APPSTORE_DIST_LIB}" RENAME "${APPSTORE_SO_FULL}" DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        COMPONENT selfcontained)
install(FILES "${APPSTORE_PKG_BIN}/links/so_major_to_full" RENAME "${APPSTORE_SO_MAJOR}"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT selfcontained)
install(FILES "${APPSTORE_PKG_BIN}/links/sc_major_to_default" RENAME "${APPSTORE_SO_MAJOR}"
        DESTINATION "${APPSTORE_SC_LIBDIR}" COMPONENT selfcontained)
install(FILES "${APPSTORE_PKG_BIN}/links/so_to_major" RENAME libappstoreserver.so
        DESTINATION "${APPSTORE_SC_LIBDIR}" COMPONENT selfcontained)
# The link a linker finds for -lappstoreserver (development, so the .deb's -dev package has it too).
install(FILES "${APPSTORE_PKG_BIN}/links/so_to_major" RENAME libappstoreserver.so
        DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT development)

# --- 2. header, ABI description, pkg-config, CMake package ----------------------------------------------------
install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/include/appstoreserver.h"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT development)
install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/include/appstoreserver.abi.json"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/appstoreserver" COMPONENT development)

# Relative paths from the .pc and CMake package directories back to the prefix (any absolute prefix will do).
file(RELATIVE_PATH APPSTORE_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
file(RELATIVE_PATH APPSTORE_CMAKE_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/cmake/appstoreserver" "/prefix")
string(REGEX REPLACE "/$" "" APPSTORE_PC_TO_PREFIX "${APPSTORE_PC_TO_PREFIX}")
string(REGEX REPLACE "/$" "" APPSTORE_CMAKE_TO_PREFIX "${APPSTORE_CMAKE_TO_PREFIX}")
foreach(pc appstoreserver appstoreserver-selfcontained appstoreserver-swiftrt)
  configure_file("${CMAKE_CURRENT_SOURCE_DIR}/packaging/${pc}.pc.in" "${APPSTORE_PKG_BIN}/${pc}.pc" @ONLY)
endforeach()
install(FILES "${APPSTORE_PKG_BIN}/appstoreserver.pc" "${APPSTORE_PKG_BIN}/appstoreserver-selfcontained.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT development)
# With the system-linked library (not in the .debs, which do not ship it).
install(FILES "${APPSTORE_PKG_BIN}/appstoreserver-swiftrt.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT runtime)

configure_file("${CMAKE_CURRENT_SOURCE_DIR}/packaging/appstoreserverConfig.cmake.in"
               "${APPSTORE_PKG_BIN}/appstoreserverConfig.cmake" @ONLY)
# Before 1.0 a minor release may change the ABI (the header's ABI policy): 0.x accepts the same minor only.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_appstore_compat SameMinorVersion)
else()
  set(_appstore_compat SameMajorVersion)
endif()
write_basic_package_version_file("${APPSTORE_PKG_BIN}/appstoreserverConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}" COMPATIBILITY ${_appstore_compat})
install(FILES "${APPSTORE_PKG_BIN}/appstoreserverConfig.cmake" "${APPSTORE_PKG_BIN}/appstoreserverConfigVersion.cmake"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/cmake/appstoreserver" COMPONENT development)

# --- 2b. licence and third-party notices -----------------------------------------------------------------------
# With each library flavour (components runtime and selfcontained, which the Debian packages do not use: deb.cmake
# gives every package its own copyright file).
foreach(component runtime selfcontained)
  install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/LICENSE" "${CMAKE_CURRENT_SOURCE_DIR}/THIRD_PARTY_NOTICES"
          DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT ${component})
endforeach()

# --- 3. the command-line tool ---------------------------------------------------------------------------------
if(APPSTORE_TOOL)
  if(NOT EXISTS "${APPSTORE_TOOL}")
    message(WARNING "APPSTORE_TOOL=${APPSTORE_TOOL} does not exist (yet): cmake --install will fail without it")
  endif()
  install(PROGRAMS "${APPSTORE_TOOL}" RENAME appstoreserver DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT tool)
endif()
if(APPSTORE_TOOL_COMPLETIONS_DIR)
  # Each file is optional (the tool may offer completions for some shells only) and looked for at install time (the
  # directory may be filled after configuring); install(FILES OPTIONAL) would leave empty directories behind.
  foreach(entry "appstoreserver.bash|bash-completion/completions|appstoreserver"
                "_appstoreserver|zsh/vendor-completions|_appstoreserver"
                "appstoreserver.fish|fish/vendor_completions.d|appstoreserver.fish")
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 from)
    list(GET entry 1 dir)
    list(GET entry 2 to)
    set(from "${APPSTORE_TOOL_COMPLETIONS_DIR}/${from}")
    install(CODE "if(EXISTS \"${from}\")
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/${dir}\" TYPE FILE RENAME \"${to}\"
       FILES \"${from}\")
endif()" COMPONENT tool)
  endforeach()
endif()

# The tool's man pages (cli/build writes them beside the binary: man/man1/, from scripts/manpages) and its guides,
# where --help points (share/doc/appstoreserver).
if(APPSTORE_TOOL)
  get_filename_component(_appstore_tool_dir "${APPSTORE_TOOL}" DIRECTORY)
  install(CODE "file(GLOB _pages \"${_appstore_tool_dir}/man/man1/*.1\")
if(NOT _pages)
  message(FATAL_ERROR \"no man pages in ${_appstore_tool_dir}/man/man1 (cli/build makes them)\")
endif()
file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man1\" TYPE FILE FILES \${_pages})" COMPONENT tool)
  install(FILES "${CMAKE_CURRENT_SOURCE_DIR}/docs/cli.md" "${CMAKE_CURRENT_SOURCE_DIR}/docs/serve.md"
                "${CMAKE_CURRENT_SOURCE_DIR}/docs/ledger.md" DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT tool)
endif()

# --- 4. Debian packages --------------------------------------------------------------------------------------
include("${CMAKE_CURRENT_LIST_DIR}/deb.cmake")
