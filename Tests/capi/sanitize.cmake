# Sanitizer builds of the C library and the C tests (option APPSTORE_SANITIZE=address|thread; scripts/test-all runs
# both in their own build folders). The C compiler must be the Swift toolchain's clang, so that the library (swiftc
# -sanitize=...) and the tests (clang -fsanitize=...) share one sanitizer runtime, loaded as a shared library
# (-shared-libsan: the static runtime cannot be linked twice, nor with libdispatch under TSan).
#
#   address  AddressSanitizer in the library (Swift) and AddressSanitizer + UndefinedBehaviorSanitizer in the tests:
#            conformance (own PKI, Apple data), error paths, hostile input, receipts (+ hostile), signing (+ error
#            paths), the API client against the mock server, online checks against real responders, threads.
#   thread   ThreadSanitizer in both: the thread stress test, the API client's threads, online checks with threads.
#            The library's lock (`Locked`, Support/Lock.swift) is a pthread mutex (with a pthread rwlock for fork
#            safety), which TSan understands, so a report means a real race.
# Labels: every test here has the label "sanitizer" (ctest -L sanitizer).
if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "APPSTORE_SANITIZE needs the Swift toolchain's clang as the C compiler (CC=.../usr/bin/clang)")
endif()
if(APPSTORE_SANITIZE STREQUAL "address")
  set(SAN_SWIFT -sanitize=address)
  set(SAN_C -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -shared-libsan)
  set(SAN_ENV "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1" "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
elseif(APPSTORE_SANITIZE STREQUAL "thread")
  set(SAN_SWIFT -sanitize=thread)
  set(SAN_C -fsanitize=thread -shared-libsan)
  set(SAN_ENV "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")
else()
  message(FATAL_ERROR "APPSTORE_SANITIZE must be address or thread, not ${APPSTORE_SANITIZE}")
endif()
# Where the shared sanitizer runtimes are, for the tests' run path.
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-resource-dir OUTPUT_VARIABLE SAN_RESOURCE_DIR
                OUTPUT_STRIP_TRAILING_WHITESPACE)
set(SAN_RUNTIME_DIR "${SAN_RESOURCE_DIR}/lib/linux")

add_library(AppStoreServerSan STATIC ${CORE_SOURCES})
set_target_properties(AppStoreServerSan PROPERTIES Swift_MODULE_NAME AppStoreServer POSITION_INDEPENDENT_CODE ON)
target_include_directories(AppStoreServerSan PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/Sources/COpenSSL")
target_compile_options(AppStoreServerSan PRIVATE "$<$<COMPILE_LANGUAGE:Swift>:${SWIFT_COMMON};-DAPPSTORE_NO_CODABLE;${SAN_SWIFT}>")
add_library(appstoreserver SHARED ${CAPI_SOURCES})
set_target_properties(appstoreserver PROPERTIES Swift_MODULE_NAME AppStoreServerC
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
target_compile_options(appstoreserver PRIVATE "$<$<COMPILE_LANGUAGE:Swift>:${SWIFT_COMMON};${SAN_SWIFT}>")
target_link_libraries(appstoreserver PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,AppStoreServerSan>" OpenSSL::Crypto)
target_link_options(appstoreserver PRIVATE ${SAN_SWIFT} "LINKER:--version-script=${CMAKE_CURRENT_SOURCE_DIR}/exports.map")
target_include_directories(appstoreserver INTERFACE "${CMAKE_CURRENT_SOURCE_DIR}/include")

find_package(Threads REQUIRED)
set(CAPI_SRC "${CMAKE_CURRENT_SOURCE_DIR}/Tests/capi")
set(SAN_BIN "${CMAKE_CURRENT_BINARY_DIR}/capi")
function(san_executable name)
  add_executable(${name} ${ARGN} "${CAPI_SRC}/capi_util.c")
  target_compile_options(${name} PRIVATE -g -O1 -Wall -Wextra -Werror ${SAN_C})
  target_link_options(${name} PRIVATE ${SAN_C} "LINKER:-rpath,${SAN_RUNTIME_DIR}")
  target_link_libraries(${name} PRIVATE appstoreserver PkgConfig::JANSSON Threads::Threads m)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${SAN_BIN}")
endfunction()
function(san_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS sanitizer ENVIRONMENT "${SAN_ENV}" TIMEOUT 900)
endfunction()

set(CONFORMANCE_DIR "${CMAKE_CURRENT_SOURCE_DIR}/../shared/conformance")
set(TESTPKI_DIR "${CMAKE_CURRENT_BINARY_DIR}/testpki")
set(SIGNING_KEYS "${CMAKE_CURRENT_BINARY_DIR}/signing-keys")
set(RECEIPT_FIXTURES_DIR "${CMAKE_CURRENT_BINARY_DIR}/receipt-fixtures")
san_test(san_fixtures Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/testpki.py" "${TESTPKI_DIR}")
san_test(san_signing_keys Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/check_signatures.py" keys
         "${SIGNING_KEYS}")
san_test(san_receipt_fixtures Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/receipts.py"
         "${RECEIPT_FIXTURES_DIR}")
set_tests_properties(san_fixtures san_signing_keys san_receipt_fixtures PROPERTIES FIXTURES_SETUP san_fixtures)

# The build must really be instrumented: the library imports the sanitizer's entry points, and a canary bug in a
# test program is caught (WILL_FAIL).
if(APPSTORE_SANITIZE STREQUAL "address")
  set(SAN_SYMBOL __asan_)
  set(SAN_CANARY heap)
else()
  set(SAN_SYMBOL __tsan_)
  set(SAN_CANARY race)
endif()
san_test(san_library_instrumented sh -c "nm -D \"$1\" | grep -q ${SAN_SYMBOL}" sh $<TARGET_FILE:appstoreserver>)
san_executable(san_canary "${CAPI_SRC}/sanitizer_canary.c")
san_test(san_canary_caught san_canary ${SAN_CANARY})
set_tests_properties(san_canary_caught PROPERTIES WILL_FAIL TRUE)

san_executable(san_thread_stress "${CAPI_SRC}/thread_stress.c")
add_library(san_http STATIC "${CAPI_SRC}/http_transport.c")
target_compile_options(san_http PRIVATE -g -O1 ${SAN_C})
target_link_libraries(san_http PUBLIC appstoreserver)
san_executable(san_api_test "${CAPI_SRC}/api_test.c")
target_link_libraries(san_api_test PRIVATE san_http)
san_executable(san_ocsp_test "${CAPI_SRC}/ocsp_test.c")
target_link_libraries(san_ocsp_test PRIVATE san_http)

san_test(san_c_thread_stress san_thread_stress "${TESTPKI_DIR}" 8 100)
san_test(san_c_api_test san_api_test "${SIGNING_KEYS}" "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/api_cases.json"
         "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/mock_app_store.py" "${CMAKE_CURRENT_SOURCE_DIR}/spec/endpoints.json")
san_test(san_c_ocsp Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/ocsp_harness.py" run
         "${CMAKE_CURRENT_BINARY_DIR}/ocsp" --lifetime 600 -- $<TARGET_FILE:san_ocsp_test>)
set_tests_properties(san_c_thread_stress san_c_api_test PROPERTIES FIXTURES_REQUIRED san_fixtures)

if(APPSTORE_SANITIZE STREQUAL "address")
  san_executable(san_conformance "${CAPI_SRC}/conformance.c")
  san_executable(san_error_paths "${CAPI_SRC}/error_paths.c")
  san_executable(san_hostile_input "${CAPI_SRC}/hostile_input.c")
  san_executable(san_receipts "${CAPI_SRC}/receipts.c")
  san_executable(san_receipts_hostile "${CAPI_SRC}/receipts_hostile.c")
  san_executable(san_sign_test "${CAPI_SRC}/sign_test.c")
  san_executable(san_sign_error_paths "${CAPI_SRC}/sign_error_paths.c")
  san_executable(san_signer_test "${CAPI_SRC}/signer_test.c")
  target_link_libraries(san_signer_test PRIVATE OpenSSL::Crypto)
  san_test(san_c_conformance_testpki san_conformance "${TESTPKI_DIR}" --min-cases 169)
  san_test(san_c_conformance_shared san_conformance "${CONFORMANCE_DIR}" --skip-if-missing --expect-cases 85)
  san_test(san_c_error_paths san_error_paths "${TESTPKI_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}/spec/errors.json")
  # The 64 KiB-stack cases are about production builds: ASan's instrumentation needs several times the stack.
  san_test(san_c_hostile_input san_hostile_input "${TESTPKI_DIR}" "${SIGNING_KEYS}" --no-small-stacks)
  san_test(san_c_receipts san_receipts "${RECEIPT_FIXTURES_DIR}" "${CONFORMANCE_DIR}")
  san_test(san_c_receipts_hostile san_receipts_hostile "${RECEIPT_FIXTURES_DIR}" "${CONFORMANCE_DIR}" --quick)
  san_test(san_c_sign san_sign_test "${SIGNING_KEYS}" "${CMAKE_CURRENT_BINARY_DIR}/san_sign_items.json")
  san_test(san_c_sign_error_paths san_sign_error_paths "${SIGNING_KEYS}")
  san_test(san_c_signer san_signer_test "${SIGNING_KEYS}" "${CMAKE_CURRENT_BINARY_DIR}/san_signer_items.json")
  set_tests_properties(san_c_conformance_testpki san_c_error_paths san_c_hostile_input san_c_receipts
    san_c_receipts_hostile san_c_sign san_c_sign_error_paths san_c_signer PROPERTIES FIXTURES_REQUIRED san_fixtures)
endif()
