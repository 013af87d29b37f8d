# The purchase ledger through the C ABI, included from CMakeLists.txt after the other Tests/capi/*.cmake (uses
# capi_test_executable, CAPI_SRC, CAPI_BIN, TESTPKI_DIR + fixture "testpki", Python3::Interpreter).
#
#   ledger_fixtures              Tests/support/lifecycles.py: signed lifecycles over the test PKI, expectations from
#                                Apple's documentation, bad inputs
#   c_ledger                     scenarios' expectations, oracle, idempotence, refused input, argument errors, reopen
#   c_ledger_selfcontained       the same through the self-contained library (SQLite linked in statically)
#   c_ledger_postgresql          a real PostgreSQL server (Debian's postgresql, started on loopback in a temporary
#                                directory; SKIPPED where it cannot run): two processes ingesting overlapping streams
#                                give exactly the single-process SQLite state (Tests/capi/ledger_postgresql.py)
#   c_ledger_postgresql_identity two apps' ledgers in one database (?schema=), another app's verifier refused, a 0.3.0
#                                schema migrated, and the server restarted twice mid-ingest: every value acknowledged,
#                                each stored once, the state equal to SQLite's; a flush that fails acknowledges
#                                neither its batch nor a later one built on it (Tests/capi/ledger_postgresql_identity.py)
#   c_ledger_crash               a writer killed with SIGKILL mid-stream, 25 times: no acknowledged event lost, integrity,
#                                the final state equal to a clean ingest (the long run: ledger_crash.py --kills=1000,
#                                recorded in docs/ledger.md)
set(LEDGER_FIXTURES_DIR "${CMAKE_CURRENT_BINARY_DIR}/ledger-fixtures")
add_test(NAME ledger_fixtures
         COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/lifecycles.py" "${TESTPKI_DIR}"
                 "${LEDGER_FIXTURES_DIR}")
set_tests_properties(ledger_fixtures PROPERTIES FIXTURES_REQUIRED testpki FIXTURES_SETUP ledger)

capi_test_executable(capi_ledger appstoreserver "${CAPI_SRC}/ledger_test.c")
capi_test_executable(capi_ledger_selfcontained appstoreserver_selfcontained "${CAPI_SRC}/ledger_test.c")
capi_test_executable(capi_ledger_crash_writer appstoreserver_selfcontained "${CAPI_SRC}/ledger_crash_writer.c")
file(MAKE_DIRECTORY "${CAPI_BIN}/ledger" "${CAPI_BIN}/ledger-selfcontained" "${CAPI_BIN}/ledger-crash")
add_test(NAME c_ledger COMMAND capi_ledger "${TESTPKI_DIR}" "${LEDGER_FIXTURES_DIR}" "${CAPI_BIN}/ledger")
add_test(NAME c_ledger_selfcontained
         COMMAND capi_ledger_selfcontained "${TESTPKI_DIR}" "${LEDGER_FIXTURES_DIR}" "${CAPI_BIN}/ledger-selfcontained")
add_test(NAME c_ledger_crash
         COMMAND Python3::Interpreter "${CAPI_SRC}/ledger_crash.py" $<TARGET_FILE:capi_ledger_crash_writer>
                 "${TESTPKI_DIR}" "${LEDGER_FIXTURES_DIR}" "${CAPI_BIN}/ledger-crash" --kills=25)
set_tests_properties(c_ledger c_ledger_selfcontained c_ledger_crash PROPERTIES
  FIXTURES_REQUIRED "testpki;ledger" TIMEOUT 600)
add_test(NAME c_ledger_postgresql
         COMMAND Python3::Interpreter "${CAPI_SRC}/ledger_postgresql.py" $<TARGET_FILE:appstoreserver_selfcontained>
                 "${TESTPKI_DIR}" "${LEDGER_FIXTURES_DIR}")
set_tests_properties(c_ledger_postgresql PROPERTIES FIXTURES_REQUIRED "testpki;ledger" TIMEOUT 900 SKIP_RETURN_CODE 77)
add_test(NAME c_ledger_postgresql_identity
         COMMAND Python3::Interpreter "${CAPI_SRC}/ledger_postgresql_identity.py" $<TARGET_FILE:appstoreserver_selfcontained>
                 "${TESTPKI_DIR}" "${LEDGER_FIXTURES_DIR}")
set_tests_properties(c_ledger_postgresql_identity PROPERTIES FIXTURES_REQUIRED "testpki;ledger" TIMEOUT 900 SKIP_RETURN_CODE 77)
# c_ledger_scale: memory flat from 5,000 to 50,000 events (malloc's in-use bytes, never the resident size), open
# allocating the same at both sizes (Tests/capi/ledger_scale.py; docs/ledger.md, "Queries").
add_test(NAME c_ledger_scale
         COMMAND Python3::Interpreter "${CAPI_SRC}/ledger_scale.py" $<TARGET_FILE:appstoreserver_selfcontained>
                 "${TESTPKI_DIR}" "${CAPI_BIN}/ledger-scale")
set_tests_properties(c_ledger_scale PROPERTIES FIXTURES_REQUIRED testpki TIMEOUT 900)
