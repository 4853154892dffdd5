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
