# Egress: address classification, the SSRF-safe dialer, the sandbox egress policy and its matcher.
add_library(isb_egress STATIC
  src/egress/address.cc)
target_link_libraries(isb_egress PUBLIC isb_base)

add_executable(isb_egress_tests
  tests/egress/address_test.cc)
target_link_libraries(isb_egress_tests PRIVATE isb_egress GTest::gtest_main)
target_include_directories(isb_egress_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
gtest_discover_tests(isb_egress_tests DISCOVERY_MODE PRE_TEST)
