# C API tests, included at the end of CMakeLists.txt (include(Tests/capi/tests.cmake OPTIONAL)).
# Uses from there: C_WARNINGS, TESTPKI_DIR + fixture "testpki", CONFORMANCE_DIR, targets appstoreserver,
# appstoreserver_selfcontained, appstore_demo, dist, PkgConfig::JANSSON, Python3::Interpreter.
#
#   header_check                       header prototypes == exported symbols (both flavours) and == swiftc's header,
#                                      type compatibility proven by the compiler
#   header_check_selftest              the header check catches a wrong integer width and an extra prototype
#   version_check                      appstore_version() == APPSTORE_VERSION_STRING == macros == VERSION
#   c_conformance_testpki              own fixtures (exact status + reason) through the C ABI
#   c_conformance_shared               ../shared/conformance (Apple data, error classes); SKIPPED loudly if absent
#   c_conformance_*_selfcontained      the same through the self-contained library; outcomes must be identical
#   c_thread_stress                    8 threads x 500 iterations on one verifier and one options builder
#   c_leak_check                       200,000 verify calls (2 threads) through the self-contained library: every
#                                      result checked, the library's live objects and malloc's in-use bytes flat
#                                      (Tests/support/leakcheck.py; scripts/leak-check c runs 3,000,000; the
#                                      self-test, that a leak is caught, runs in scripts/test-all's leak step)
#   base_urls_one_home                 no hand-written binding source types Apple's base URLs (appstore_api_base_url)
#   c_debug_counts                     appstore_debug_live_objects counts handles, errors and result strings exactly
#   c_error_paths                      NULL / garbage / config errors, exact statuses and reasons
#   c_demo_valgrind                    the demo under valgrind (definitely-lost leaks and memory errors fail)
#   c_conformance_testpki_valgrind     the fixture manifest (all failure paths) under valgrind
#   selfcontained_lib                  dist/libappstoreserver.so.0: deps, exports, SONAME, size (the budget,
#                                      19,000,000 bytes: docs/c-abi.md "Stripped size"), demo against it
#   no_unwind_tables_selftest          scripts/selfcontained/no-unwind-tables refuses archives that throw or catch

find_package(Threads REQUIRED)

set(CAPI_SRC "${CMAKE_CURRENT_SOURCE_DIR}/Tests/capi")
set(CAPI_BIN "${CMAKE_CURRENT_BINARY_DIR}/capi")
file(MAKE_DIRECTORY "${CAPI_BIN}")

function(capi_test_executable name library)
  add_executable(${name} ${ARGN} "${CAPI_SRC}/capi_util.c")
  target_compile_options(${name} PRIVATE ${C_WARNINGS})
  target_link_libraries(${name} PRIVATE ${library} PkgConfig::JANSSON m)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CAPI_BIN}")
endfunction()

capi_test_executable(capi_version_check appstoreserver "${CAPI_SRC}/version_check.c")
capi_test_executable(capi_conformance appstoreserver "${CAPI_SRC}/conformance.c")
capi_test_executable(capi_conformance_selfcontained appstoreserver_selfcontained "${CAPI_SRC}/conformance.c")
capi_test_executable(capi_thread_stress appstoreserver "${CAPI_SRC}/thread_stress.c")
target_link_libraries(capi_thread_stress PRIVATE Threads::Threads)
capi_test_executable(capi_soak appstoreserver_selfcontained "${CAPI_SRC}/soak.c")
target_link_libraries(capi_soak PRIVATE Threads::Threads)
capi_test_executable(capi_error_paths appstoreserver "${CAPI_SRC}/error_paths.c")
capi_test_executable(capi_debug_counts appstoreserver_selfcontained "${CAPI_SRC}/debug_counts.c")

# --- 1. header vs. libraries vs. swiftc's header ---------------------------------------------------------------
set(CAPI_GENERATED_HEADER "${CMAKE_CURRENT_BINARY_DIR}/AppStoreServerC-Swift.h")
set(CAPI_DIST_LIB "${CMAKE_CURRENT_BINARY_DIR}/dist/libappstoreserver.so.${PROJECT_VERSION_MAJOR}")
# The compilers that prove type compatibility: the project's C compiler, and clang (swiftc's own C frontend,
# which understands the generated header's nullability annotations) when it is a different one.
set(CAPI_HEADER_CCS --cc "${CMAKE_C_COMPILER}")
find_program(CAPI_CLANG NAMES clang)
if(CAPI_CLANG AND NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  list(APPEND CAPI_HEADER_CCS --cc "${CAPI_CLANG}")
endif()
set(CAPI_HEADER_ARGS "${CMAKE_CURRENT_SOURCE_DIR}/include/appstoreserver.h" "${CAPI_GENERATED_HEADER}"
    "$<TARGET_FILE:appstoreserver>" "${CAPI_DIST_LIB}" ${CAPI_HEADER_CCS})
add_test(NAME header_check COMMAND Python3::Interpreter "${CAPI_SRC}/check_header.py" ${CAPI_HEADER_ARGS})
add_test(NAME header_check_selftest COMMAND Python3::Interpreter "${CAPI_SRC}/check_header.py" ${CAPI_HEADER_ARGS}
         --self-test)

# --- 2. version ---------------------------------------------------------------------------------------------
add_test(NAME version_check COMMAND capi_version_check "${CMAKE_CURRENT_SOURCE_DIR}/VERSION")

# --- 3. conformance through the C ABI, both flavours ----------------------------------------------------------
# The system-linked runs write their outcomes; the self-contained runs must reproduce them exactly (fixtures order
# the runs and make a single -R selection pull in what it needs).
add_test(NAME c_conformance_testpki
         COMMAND capi_conformance "${TESTPKI_DIR}" --min-cases 169 --dump "${CAPI_BIN}/conformance_testpki.tsv")
set_tests_properties(c_conformance_testpki PROPERTIES
  FIXTURES_REQUIRED testpki FIXTURES_SETUP capi_conformance_testpki_dump)
add_test(NAME c_conformance_testpki_selfcontained
         COMMAND capi_conformance_selfcontained "${TESTPKI_DIR}" --min-cases 169
                 --compare "${CAPI_BIN}/conformance_testpki.tsv")
set_tests_properties(c_conformance_testpki_selfcontained PROPERTIES
  FIXTURES_REQUIRED "testpki;capi_conformance_testpki_dump")

add_test(NAME c_conformance_shared
         COMMAND capi_conformance "${CONFORMANCE_DIR}" --skip-if-missing --expect-cases 85
                 --dump "${CAPI_BIN}/conformance_shared.tsv")
set_tests_properties(c_conformance_shared PROPERTIES FIXTURES_SETUP capi_conformance_shared_dump)
add_test(NAME c_conformance_shared_selfcontained
         COMMAND capi_conformance_selfcontained "${CONFORMANCE_DIR}" --skip-if-missing --expect-cases 85
                 --compare "${CAPI_BIN}/conformance_shared.tsv")
set_tests_properties(c_conformance_shared_selfcontained PROPERTIES FIXTURES_REQUIRED capi_conformance_shared_dump)

# --- 4. threads -----------------------------------------------------------------------------------------------
add_test(NAME c_thread_stress COMMAND capi_thread_stress "${TESTPKI_DIR}" 8 500)
set_tests_properties(c_thread_stress PROPERTIES FIXTURES_REQUIRED testpki TIMEOUT 600)
add_test(NAME c_leak_check
         COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/leakcheck.py" --lang c --calls 200000
                 -- $<TARGET_FILE:capi_soak> "${TESTPKI_DIR}" 2)
set_tests_properties(c_leak_check PROPERTIES FIXTURES_REQUIRED testpki TIMEOUT 900)
add_test(NAME base_urls_one_home COMMAND Python3::Interpreter "${CAPI_SRC}/check_base_urls.py" "${CMAKE_CURRENT_SOURCE_DIR}")
add_test(NAME base_urls_one_home_selftest
         COMMAND Python3::Interpreter "${CAPI_SRC}/check_base_urls.py" "${CMAKE_CURRENT_SOURCE_DIR}" --self-test)
# The benchmarks' C sources against today's header (a changed prototype broke ledger_bench unnoticed once), and
# their Python helpers, without running them (benchmarks/run measures; CI only keeps them buildable).
file(GLOB BENCH_C_SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/benchmarks/c/*.c")
foreach(src ${BENCH_C_SOURCES})
  get_filename_component(name "${src}" NAME_WE)
  add_test(NAME benchmark_compiles_${name}
           COMMAND "${CMAKE_C_COMPILER}" -fsyntax-only -std=gnu11 -Wall -Werror=int-conversion
                   -Werror=incompatible-pointer-types -Werror=implicit-function-declaration
                   "-I${CMAKE_CURRENT_SOURCE_DIR}/include" "-I${CMAKE_CURRENT_SOURCE_DIR}/benchmarks/c" "${src}")
endforeach()
file(GLOB BENCH_PY_SOURCES "${CMAKE_CURRENT_SOURCE_DIR}/benchmarks/lib/*.py")
add_test(NAME benchmark_python_compiles COMMAND Python3::Interpreter -m py_compile ${BENCH_PY_SOURCES})
add_test(NAME c_debug_counts COMMAND capi_debug_counts "${TESTPKI_DIR}")
set_tests_properties(c_debug_counts PROPERTIES FIXTURES_REQUIRED testpki)

# --- 5. error paths -------------------------------------------------------------------------------------------
add_test(NAME c_error_paths COMMAND capi_error_paths "${TESTPKI_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}/spec/errors.json")
set_tests_properties(c_error_paths PROPERTIES FIXTURES_REQUIRED testpki TIMEOUT 600)

# --- 6. the demo under valgrind -------------------------------------------------------------------------------
add_test(NAME c_demo_valgrind
         COMMAND Python3::Interpreter "${CAPI_SRC}/run_valgrind.py" $<TARGET_FILE:appstore_demo> "${TESTPKI_DIR}"
                 "${CONFORMANCE_DIR}")
set_tests_properties(c_demo_valgrind PROPERTIES FIXTURES_REQUIRED testpki TIMEOUT 1800)
# The demo only walks success paths; the fixture manifest drives every failure path (error objects, config errors).
add_test(NAME c_conformance_testpki_valgrind
         COMMAND Python3::Interpreter "${CAPI_SRC}/run_valgrind.py" $<TARGET_FILE:capi_conformance> "${TESTPKI_DIR}"
                 --min-cases 169)
set_tests_properties(c_conformance_testpki_valgrind PROPERTIES FIXTURES_REQUIRED testpki TIMEOUT 1800)

# --- 7. the shipped self-contained library ---------------------------------------------------------------------
add_test(NAME selfcontained_lib
         COMMAND Python3::Interpreter "${CAPI_SRC}/check_selfcontained.py" "${CAPI_DIST_LIB}"
                 $<TARGET_FILE:appstore_demo> "${TESTPKI_DIR}" "${CONFORMANCE_DIR}" --max-bytes 19000000)
set_tests_properties(selfcontained_lib PROPERTIES FIXTURES_REQUIRED testpki TIMEOUT 600)
# The glibc floor of what we ship (scripts/check-glibc): at most GLIBC_2.28, no GLIBCXX/CXXABI/GCC/DT_RELR; and the
# checker's own self-test (libraries that break each rule are refused).
add_test(NAME glibc_floor COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/scripts/check-glibc" "${CAPI_DIST_LIB}")
add_test(NAME glibc_floor_selftest COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/scripts/check-glibc" --self-test)
# The self-contained library's static libraries lose their unwind tables only when they use no exceptions
# (scripts/selfcontained/no-unwind-tables, docs/c-abi.md "Stripped size"): its refusal, shown on archives that do.
add_test(NAME no_unwind_tables_selftest COMMAND Python3::Interpreter
         "${CMAKE_CURRENT_SOURCE_DIR}/scripts/selfcontained/no-unwind-tables" --self-test)

# Apple's roots carried by the library, and PEM roots (both flavours).
capi_test_executable(capi_roots appstoreserver "${CAPI_SRC}/roots_test.c")
capi_test_executable(capi_roots_selfcontained appstoreserver_selfcontained "${CAPI_SRC}/roots_test.c")
foreach(exe IN ITEMS capi_roots capi_roots_selfcontained)
  add_test(NAME c_${exe} COMMAND ${exe} "${TESTPKI_DIR}" "${CONFORMANCE_DIR}")
  set_tests_properties(c_${exe} PROPERTIES FIXTURES_REQUIRED testpki)
endforeach()
