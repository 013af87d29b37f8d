# Receipt tests through the C ABI, included from CMakeLists.txt after Tests/capi/tests.cmake (uses its
# capi_test_executable, CAPI_SRC, CONFORMANCE_DIR and Python3::Interpreter).
#
#   receipt_fixtures                        Tests/support/receipts.py: own-CA app receipts + expected results
#   c_receipts_conformance_shared           the 20 receipt cases of ../shared/conformance (SKIPPED loudly if absent)
#   c_receipts_conformance_shared_selfcontained   the same through the self-contained library
#   c_receipts                              own-CA receipts (exact JSON, statuses, reasons, extraction), the real
#                                           sandbox receipts against Apple Inc. Root, argument errors, 4 threads
#   c_receipts_selfcontained                the same through the self-contained library
#   c_receipts_hostile                      truncated at every length, random, nested, endless and absurd lengths
#   c_receipts_valgrind                     c_receipts under valgrind (success and failure paths, fewer iterations)
#   c_receipts_hostile_valgrind             c_receipts_hostile --quick under valgrind

set(RECEIPT_FIXTURES_DIR "${CMAKE_CURRENT_BINARY_DIR}/receipt-fixtures")
add_test(NAME receipt_fixtures
         COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/receipts.py" "${RECEIPT_FIXTURES_DIR}")
set_tests_properties(receipt_fixtures PROPERTIES FIXTURES_SETUP receipts)

capi_test_executable(capi_receipts_conformance appstoreserver "${CAPI_SRC}/receipts_conformance.c")
capi_test_executable(capi_receipts_conformance_selfcontained appstoreserver_selfcontained
                     "${CAPI_SRC}/receipts_conformance.c")
capi_test_executable(capi_receipts appstoreserver "${CAPI_SRC}/receipts.c")
target_link_libraries(capi_receipts PRIVATE Threads::Threads)
capi_test_executable(capi_receipts_selfcontained appstoreserver_selfcontained "${CAPI_SRC}/receipts.c")
target_link_libraries(capi_receipts_selfcontained PRIVATE Threads::Threads)
capi_test_executable(capi_receipts_hostile appstoreserver "${CAPI_SRC}/receipts_hostile.c")

add_test(NAME c_receipts_conformance_shared
         COMMAND capi_receipts_conformance "${CONFORMANCE_DIR}" --skip-if-missing --expect-cases 20)
add_test(NAME c_receipts_conformance_shared_selfcontained
         COMMAND capi_receipts_conformance_selfcontained "${CONFORMANCE_DIR}" --skip-if-missing --expect-cases 20)

add_test(NAME c_receipts COMMAND capi_receipts "${RECEIPT_FIXTURES_DIR}" "${CONFORMANCE_DIR}")
add_test(NAME c_receipts_selfcontained COMMAND capi_receipts_selfcontained "${RECEIPT_FIXTURES_DIR}" "${CONFORMANCE_DIR}")
add_test(NAME c_receipts_hostile COMMAND capi_receipts_hostile "${RECEIPT_FIXTURES_DIR}" "${CONFORMANCE_DIR}")
set_tests_properties(c_receipts c_receipts_selfcontained c_receipts_hostile PROPERTIES
  FIXTURES_REQUIRED receipts TIMEOUT 600)

add_test(NAME c_receipts_valgrind
         COMMAND Python3::Interpreter "${CAPI_SRC}/run_valgrind.py" $<TARGET_FILE:capi_receipts>
                 "${RECEIPT_FIXTURES_DIR}" "${CONFORMANCE_DIR}" --threads 2 --iterations 2)
add_test(NAME c_receipts_hostile_valgrind
         COMMAND Python3::Interpreter "${CAPI_SRC}/run_valgrind.py" $<TARGET_FILE:capi_receipts_hostile>
                 "${RECEIPT_FIXTURES_DIR}" "${CONFORMANCE_DIR}" --quick --max-seconds 1500)
set_tests_properties(c_receipts_valgrind c_receipts_hostile_valgrind PROPERTIES
  FIXTURES_REQUIRED receipts TIMEOUT 1800)
