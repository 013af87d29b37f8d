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
