# Online checks (OCSP) through the C ABI against real `openssl ocsp` responders, included from CMakeLists.txt after
# transport.cmake (uses appstore_test_http). Tests/support/ocsp_harness.py generates a PKI whose certificates name
# local responders, starts the responders, runs the test with APPSTORE_OCSP_SETUP set, and stops them; each run has
# its own directory and ports, so the runs may go in parallel.
#
#   c_ocsp                    every harness case, the cache, the transport contract, threads (system-linked library)
#   c_ocsp_selfcontained      the same through the self-contained library
#   c_ocsp_valgrind           the same (less the slow responder, the stuck leader and the threads) under valgrind
find_package(Threads REQUIRED)
set(OCSP_HARNESS "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/ocsp_harness.py")

add_library(appstore_test_http_selfcontained STATIC Tests/capi/http_transport.c)
target_compile_options(appstore_test_http_selfcontained PRIVATE ${C_WARNINGS})
target_link_libraries(appstore_test_http_selfcontained PUBLIC appstoreserver_selfcontained)

foreach(flavour "" "_selfcontained")
  add_executable(ocsp_test${flavour} Tests/capi/ocsp_test.c Tests/capi/capi_util.c)
  target_compile_options(ocsp_test${flavour} PRIVATE ${C_WARNINGS})
  target_link_libraries(ocsp_test${flavour} PRIVATE appstore_test_http${flavour} PkgConfig::JANSSON Threads::Threads)
  set_target_properties(ocsp_test${flavour} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/capi")
  add_test(NAME c_ocsp${flavour}
           COMMAND Python3::Interpreter "${OCSP_HARNESS}" run "${CMAKE_CURRENT_BINARY_DIR}/ocsp${flavour}"
                   --lifetime 300 -- $<TARGET_FILE:ocsp_test${flavour}>)
  set_tests_properties(c_ocsp${flavour} PROPERTIES TIMEOUT 360)
endforeach()

add_test(NAME c_ocsp_valgrind
         COMMAND Python3::Interpreter "${OCSP_HARNESS}" run "${CMAKE_CURRENT_BINARY_DIR}/ocsp_valgrind" --lifetime 1500
                 -- "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_SOURCE_DIR}/Tests/capi/run_valgrind.py"
                    $<TARGET_FILE:ocsp_test> --quick)
set_tests_properties(c_ocsp_valgrind PROPERTIES TIMEOUT 1800)
