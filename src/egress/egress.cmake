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

isb_tests(isb_egress_tests LIBS isb_egress SOURCES
  tests/egress/address_test.cc
  tests/egress/dialer_test.cc
  tests/egress/host_port_test.cc
  tests/egress/pin_test.cc
  tests/egress/policy_test.cc
  tests/egress/public_suffix_test.cc)

# The egress field: JSON in.
isb_fuzz_target(egress_policy LIBS isb_egress isb_api)

# The proxy: sniffs the first bytes with the wire parsers (src/net/net.cmake), relays with splice.
find_package(Boost 1.81 REQUIRED)
add_library(isb_proxy STATIC src/egress/proxy.cc src/egress/classify.cc)
target_link_libraries(isb_proxy PUBLIC isb_wire Boost::headers Threads::Threads)
isb_tests(isb_proxy_tests LIBS isb_proxy SOURCES tests/egress/proxy_test.cc tests/egress/classify_test.cc)
