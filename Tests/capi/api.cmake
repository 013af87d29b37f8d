# App Store Server API through the C ABI, against the mock App Store server (Tests/support/mock_app_store.py, which
# the test starts and stops), for every endpoint of Tests/support/api_cases.json; both library flavours.
# Uses from signing.cmake: SIGNING_KEYS + fixture "signing".
find_package(Threads REQUIRED)
set(API_CASES "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/api_cases.json")
set(API_MOCK "${CMAKE_CURRENT_SOURCE_DIR}/Tests/support/mock_app_store.py")
foreach(flavour IN ITEMS appstoreserver appstoreserver_selfcontained)
  set(exe capi_api_test)
  if(flavour STREQUAL "appstoreserver_selfcontained")
    set(exe capi_api_test_selfcontained)
  endif()
  add_executable(${exe} Tests/capi/api_test.c Tests/capi/http_transport.c Tests/capi/capi_util.c)
  target_compile_options(${exe} PRIVATE ${C_WARNINGS})
  target_link_libraries(${exe} PRIVATE ${flavour} PkgConfig::JANSSON Threads::Threads m)
  add_test(NAME c_${exe} COMMAND ${exe} "${SIGNING_KEYS}" "${API_CASES}" "${API_MOCK}"
                                      "${CMAKE_CURRENT_SOURCE_DIR}/spec/endpoints.json")
  set_tests_properties(c_${exe} PROPERTIES FIXTURES_REQUIRED signing TIMEOUT 600)
endforeach()

# The call driver's shared scenarios (Tests/driver/scenarios.json) and its misuse, both flavours.
foreach(flavour IN ITEMS appstoreserver appstoreserver_selfcontained)
  set(exe capi_driver_test)
  if(flavour STREQUAL "appstoreserver_selfcontained")
    set(exe capi_driver_test_selfcontained)
  endif()
  add_executable(${exe} Tests/capi/driver_test.c Tests/capi/capi_util.c)
  target_compile_options(${exe} PRIVATE ${C_WARNINGS})
  target_link_libraries(${exe} PRIVATE ${flavour} PkgConfig::JANSSON Threads::Threads m)
  add_test(NAME c_${exe} COMMAND ${exe} "${SIGNING_KEYS}" "${CMAKE_CURRENT_SOURCE_DIR}/Tests/driver/scenarios.json")
  set_tests_properties(c_${exe} PROPERTIES FIXTURES_REQUIRED signing TIMEOUT 300)
endforeach()
