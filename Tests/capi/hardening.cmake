# Hostile input through the C ABI (Tests/capi/hostile_input.c): inputs over the limits passed in unreadable memory,
# and every kind of call on 64 KiB thread stacks with deeply nested JSON and BER. Uses from signing.cmake:
# SIGNING_KEYS + fixture "signing"; from tests.cmake: capi_test_executable, TESTPKI_DIR + fixture "testpki".
capi_test_executable(capi_hostile_input appstoreserver "${CAPI_SRC}/hostile_input.c")
target_link_libraries(capi_hostile_input PRIVATE Threads::Threads)
add_test(NAME c_hostile_input COMMAND capi_hostile_input "${TESTPKI_DIR}" "${SIGNING_KEYS}")
set_tests_properties(c_hostile_input PROPERTIES FIXTURES_REQUIRED "testpki;signing" TIMEOUT 300)
capi_test_executable(capi_hostile_input_selfcontained appstoreserver_selfcontained "${CAPI_SRC}/hostile_input.c")
target_link_libraries(capi_hostile_input_selfcontained PRIVATE Threads::Threads)
add_test(NAME c_hostile_input_selfcontained COMMAND capi_hostile_input_selfcontained "${TESTPKI_DIR}" "${SIGNING_KEYS}")
set_tests_properties(c_hostile_input_selfcontained PROPERTIES FIXTURES_REQUIRED "testpki;signing" TIMEOUT 300)
# fork() while other threads are inside the library (Tests/capi/fork_test.c): children must neither crash nor hang.
capi_test_executable(capi_fork_test appstoreserver_selfcontained "${CAPI_SRC}/fork_test.c")
target_link_libraries(capi_fork_test PRIVATE Threads::Threads)
add_test(NAME c_fork COMMAND capi_fork_test "${TESTPKI_DIR}" "${SIGNING_KEYS}" 60)
set_tests_properties(c_fork PROPERTIES FIXTURES_REQUIRED "testpki;signing" TIMEOUT 300)
# The API client against a hostile HTTP server (Tests/support/hostile_http.py): redirects, drips, huge bodies,
# hostile error messages, no answer (Tests/capi/hostile_server_test.c).
add_executable(capi_hostile_server Tests/capi/hostile_server_test.c Tests/capi/http_transport.c Tests/capi/capi_util.c)
target_compile_options(capi_hostile_server PRIVATE ${C_WARNINGS})
target_link_libraries(capi_hostile_server PRIVATE appstoreserver PkgConfig::JANSSON Threads::Threads m)
add_test(NAME c_hostile_server COMMAND capi_hostile_server "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/hostile_http.py" "${SIGNING_KEYS}")
set_tests_properties(c_hostile_server PROPERTIES FIXTURES_REQUIRED signing TIMEOUT 300)
