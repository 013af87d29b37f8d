# The test-only blocking socket transport (appstore_transport_fn), shared by the API and OCSP C tests.
add_library(appstore_test_http STATIC Tests/capi/http_transport.c)
target_compile_options(appstore_test_http PRIVATE ${C_WARNINGS})
target_link_libraries(appstore_test_http PUBLIC appstoreserver)
