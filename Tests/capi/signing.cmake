# Signature creation through the C ABI; every output is verified by Python cryptography + joserfc.
find_package(Threads REQUIRED)
add_executable(sign_test Tests/capi/sign_test.c Tests/capi/capi_util.c)
target_compile_options(sign_test PRIVATE ${C_WARNINGS})
target_link_libraries(sign_test PRIVATE appstoreserver PkgConfig::JANSSON Threads::Threads m)
set(SIGNING_KEYS "${CMAKE_CURRENT_BINARY_DIR}/signing-keys")
add_test(NAME signing_keys COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/check_signatures.py" keys "${SIGNING_KEYS}")
set_tests_properties(signing_keys PROPERTIES FIXTURES_SETUP signing)
add_test(NAME c_sign COMMAND sign_test "${SIGNING_KEYS}" "${CMAKE_CURRENT_BINARY_DIR}/c_sign_items.json")
set_tests_properties(c_sign PROPERTIES FIXTURES_REQUIRED signing FIXTURES_SETUP c_sign_items)
add_test(NAME c_sign_independent_check COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/check_signatures.py" check "${CMAKE_CURRENT_BINARY_DIR}/c_sign_items.json")
set_tests_properties(c_sign_independent_check PROPERTIES FIXTURES_REQUIRED "signing;c_sign_items")

# NULL / invalid UTF-8 / garbage / huge lengths through every signing function, each case in a forked child.
add_executable(sign_error_paths Tests/capi/sign_error_paths.c Tests/capi/capi_util.c)
target_compile_options(sign_error_paths PRIVATE ${C_WARNINGS})
target_link_libraries(sign_error_paths PRIVATE appstoreserver PkgConfig::JANSSON m)
add_test(NAME c_sign_error_paths COMMAND sign_error_paths "${SIGNING_KEYS}")
set_tests_properties(c_sign_error_paths PROPERTIES FIXTURES_REQUIRED signing TIMEOUT 600)

# sign_test under valgrind: memory errors and definitely-lost leaks fail (its items go to their own file).
add_test(NAME c_sign_valgrind
         COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/capi/run_valgrind.py" $<TARGET_FILE:sign_test>
                 "${SIGNING_KEYS}" "${CMAKE_CURRENT_BINARY_DIR}/c_sign_valgrind_items.json")
set_tests_properties(c_sign_valgrind PROPERTIES FIXTURES_REQUIRED signing TIMEOUT 1800)

# Keys held outside the process: a signer callback (OpenSSL called directly by the test) signs everything; the
# results are verified by Python cryptography + joserfc.
add_executable(signer_test Tests/capi/signer_test.c Tests/capi/capi_util.c)
target_compile_options(signer_test PRIVATE ${C_WARNINGS})
target_link_libraries(signer_test PRIVATE appstoreserver PkgConfig::JANSSON OpenSSL::Crypto Threads::Threads m)
add_test(NAME c_signer COMMAND signer_test "${SIGNING_KEYS}" "${CMAKE_CURRENT_BINARY_DIR}/c_signer_items.json")
set_tests_properties(c_signer PROPERTIES FIXTURES_REQUIRED signing FIXTURES_SETUP c_signer_items)
add_test(NAME c_signer_independent_check COMMAND Python3::Interpreter "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/check_signatures.py" check "${CMAKE_CURRENT_BINARY_DIR}/c_signer_items.json")
set_tests_properties(c_signer_independent_check PROPERTIES FIXTURES_REQUIRED "signing;c_signer_items")
