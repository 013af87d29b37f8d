# libFuzzer targets over the C ABI (option APPSTORE_FUZZ, used by scripts/fuzz). The Swift core and the C exports are
# compiled with -sanitize=fuzzer,address (coverage-guided, AddressSanitizer); the harnesses in Tests/fuzz/ are plain
# C calling the public API, linked by the Swift driver, which adds libFuzzer's main and the sanitizer runtimes.
set(FUZZ_SWIFT_FLAGS ${SWIFT_COMMON} -sanitize=fuzzer,address -DAPPSTORE_NO_CODABLE)
add_library(AppStoreServerFuzzCore STATIC ${CORE_SOURCES})
set_target_properties(AppStoreServerFuzzCore PROPERTIES Swift_MODULE_NAME AppStoreServer POSITION_INDEPENDENT_CODE ON)
target_include_directories(AppStoreServerFuzzCore PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/Sources/COpenSSL")
target_compile_options(AppStoreServerFuzzCore PRIVATE "$<$<COMPILE_LANGUAGE:Swift>:${FUZZ_SWIFT_FLAGS}>")
add_library(AppStoreServerFuzzC STATIC ${CAPI_SOURCES})
set_target_properties(AppStoreServerFuzzC PROPERTIES Swift_MODULE_NAME AppStoreServerC POSITION_INDEPENDENT_CODE ON)
target_compile_options(AppStoreServerFuzzC PRIVATE "$<$<COMPILE_LANGUAGE:Swift>:${FUZZ_SWIFT_FLAGS}>")
target_link_libraries(AppStoreServerFuzzC PUBLIC AppStoreServerFuzzCore)

set(FUZZ_TARGETS verify receipt signing api ocsp signer transport)
foreach(t IN LISTS FUZZ_TARGETS)
  add_executable(fuzz_${t} "${CMAKE_CURRENT_SOURCE_DIR}/Tests/fuzz/fuzz_${t}.c" "${CMAKE_CURRENT_SOURCE_DIR}/Tests/fuzz/Link.swift")
  target_include_directories(fuzz_${t} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}/include")
  target_compile_options(fuzz_${t} PRIVATE "$<$<COMPILE_LANGUAGE:C>:-g;-O1;-Wall;-Wextra;-Werror>"
                         "$<$<COMPILE_LANGUAGE:Swift>:-parse-as-library;-sanitize=fuzzer,address>")
  target_link_libraries(fuzz_${t} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,AppStoreServerFuzzC>" AppStoreServerFuzzCore
                        OpenSSL::Crypto)
  set_target_properties(fuzz_${t} PROPERTIES LINKER_LANGUAGE Swift RUNTIME_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/fuzz")
  target_link_options(fuzz_${t} PRIVATE -sanitize=fuzzer,address)
endforeach()
list(TRANSFORM FUZZ_TARGETS PREPEND fuzz_ OUTPUT_VARIABLE FUZZ_EXECUTABLES)
add_custom_target(fuzz_all)
add_dependencies(fuzz_all ${FUZZ_EXECUTABLES})
