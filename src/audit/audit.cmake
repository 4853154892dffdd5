# Accountability: the hash-chained audit log and sandbox history, their verification and its report.

add_library(isb_audit STATIC
  src/audit/chain_encoding.cc
  src/audit/chain.cc
  src/audit/details.cc
  src/audit/record.cc
  src/audit/log.cc
  src/audit/history.cc
  src/audit/verify_report.cc
  src/audit/retention.cc)
target_link_libraries(isb_audit PUBLIC isb_store nlohmann_json::nlohmann_json OpenSSL::Crypto ${CMAKE_DL_LIBS}
                      Threads::Threads)

isb_tests(isb_audit_tests LIBS isb_audit SOURCES
  tests/audit/chain_encoding_test.cc
  tests/audit/details_test.cc
  tests/audit/log_test.cc
  tests/audit/tamper_test.cc
  tests/audit/history_test.cc
  tests/audit/verify_report_test.cc
  tests/audit/retention_test.cc)

# Appends per second, one thread and eight (bench/audit_bench.cc).
add_executable(audit_bench EXCLUDE_FROM_ALL bench/audit_bench.cc)
target_link_libraries(audit_bench PRIVATE isb_audit)

# What the log keeps of untrusted input.
isb_fuzz_target(audit_details LIBS isb_audit)
