# Accountability: the hash-chained audit log and sandbox history, their verification and its report.
find_library(CRYPTO_LIB NAMES libcrypto.a crypto REQUIRED)
find_path(OPENSSL_INCLUDE openssl/evp.h REQUIRED)

add_library(isb_audit STATIC
  src/audit/chain_encoding.cc
  src/audit/chain.cc
  src/audit/details.cc
  src/audit/record.cc
  src/audit/log.cc
  src/audit/history.cc
  src/audit/verify_report.cc)
target_link_libraries(isb_audit PUBLIC isb_store nlohmann_json::nlohmann_json ${CRYPTO_LIB} ${CMAKE_DL_LIBS}
                      Threads::Threads)
target_include_directories(isb_audit PUBLIC ${OPENSSL_INCLUDE})

add_executable(isb_audit_tests
  tests/audit/chain_encoding_test.cc
  tests/audit/details_test.cc
  tests/audit/log_test.cc
  tests/audit/tamper_test.cc
  tests/audit/history_test.cc
  tests/audit/verify_report_test.cc)
target_link_libraries(isb_audit_tests PRIVATE isb_audit GTest::gtest_main)
target_include_directories(isb_audit_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
gtest_discover_tests(isb_audit_tests DISCOVERY_MODE PRE_TEST)

# Appends per second, one thread and eight (bench/audit_bench.cc).
add_executable(audit_bench bench/audit_bench.cc)
target_link_libraries(audit_bench PRIVATE isb_audit)

# What the log keeps of untrusted input (fuzz/fuzz.cmake explains the two builds).
if(ISB_FUZZ)
  add_executable(audit_details_fuzz fuzz/audit_details_fuzz.cc)
  target_compile_options(audit_details_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(audit_details_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
else()
  add_executable(audit_details_fuzz fuzz/audit_details_fuzz.cc fuzz/standalone_main.cc)
  add_test(NAME fuzz_corpus_audit_details COMMAND audit_details_fuzz ${CMAKE_SOURCE_DIR}/fuzz/corpus/audit_details)
endif()
target_link_libraries(audit_details_fuzz PRIVATE isb_audit)
add_dependencies(fuzz_targets audit_details_fuzz)
