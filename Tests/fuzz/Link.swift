// Empty on purpose: a fuzz target's one Swift file, so that CMake links it with the Swift driver (libFuzzer's main,
// the sanitizer runtimes and the Swift runtime come from `-sanitize=fuzzer,address` at link time).
