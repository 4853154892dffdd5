# Egress: address classification, the SSRF-safe dialer, the sandbox egress policy and its matcher.
add_library(isb_egress STATIC
  src/egress/address.cc
  src/egress/dialer.cc
  src/egress/host_port.cc
  src/egress/pin.cc
  src/egress/policy.cc
  src/egress/public_suffix.cc
  src/egress/punycode.cc)
target_link_libraries(isb_egress PUBLIC isb_base nlohmann_json::nlohmann_json)

add_executable(isb_egress_tests
  tests/egress/address_test.cc
  tests/egress/dialer_test.cc
  tests/egress/host_port_test.cc
  tests/egress/pin_test.cc
  tests/egress/policy_test.cc
  tests/egress/public_suffix_test.cc)
target_link_libraries(isb_egress_tests PRIVATE isb_egress GTest::gtest_main)
target_include_directories(isb_egress_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
gtest_discover_tests(isb_egress_tests DISCOVERY_MODE PRE_TEST)

# Fuzz target over the egress field (see fuzz/fuzz.cmake): JSON in, seeds in fuzz/corpus/egress_policy.
if(ISB_FUZZ)
  add_executable(egress_policy_fuzz fuzz/egress_policy_fuzz.cc)
  target_compile_options(egress_policy_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(egress_policy_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
else()
  add_executable(egress_policy_fuzz fuzz/egress_policy_fuzz.cc fuzz/standalone_main.cc)
  add_test(NAME fuzz_corpus_egress_policy COMMAND egress_policy_fuzz ${CMAKE_SOURCE_DIR}/fuzz/corpus/egress_policy)
endif()
target_link_libraries(egress_policy_fuzz PRIVATE isb_egress isb_api)
add_dependencies(fuzz_targets egress_policy_fuzz)

# The proxy: sniffs the first bytes with the wire parsers (src/net/net.cmake), relays with splice.
find_package(Boost 1.81 REQUIRED)
add_library(isb_proxy STATIC src/egress/proxy.cc src/egress/classify.cc)
target_link_libraries(isb_proxy PUBLIC isb_wire Boost::headers Threads::Threads)
add_executable(isb_proxy_tests tests/egress/proxy_test.cc tests/egress/classify_test.cc)
target_link_libraries(isb_proxy_tests PRIVATE isb_proxy GTest::gtest_main)
gtest_discover_tests(isb_proxy_tests DISCOVERY_MODE PRE_TEST)
