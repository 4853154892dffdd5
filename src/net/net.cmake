# The parsers of untrusted bytes that the egress proxy and the DNS responder read: TLS ClientHello, HTTP/1.x request
# head, DNS message (and the host-name check they share).
add_library(isb_wire STATIC
  src/egress/client_hello.cc
  src/egress/http_head.cc
  src/net/dns_message.cc
  src/net/host_name.cc)
target_link_libraries(isb_wire PUBLIC isb_base)

add_executable(isb_wire_tests
  tests/egress/client_hello_test.cc
  tests/egress/http_head_test.cc
  tests/net/dns_message_test.cc
  tests/net/host_name_test.cc
  tests/net/loopback.cc)
target_link_libraries(isb_wire_tests PRIVATE isb_wire GTest::gtest_main)
target_include_directories(isb_wire_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
target_compile_definitions(isb_wire_tests PRIVATE ISB_WIRE_TESTDATA="${CMAKE_SOURCE_DIR}/tests/egress/testdata")
gtest_discover_tests(isb_wire_tests DISCOVERY_MODE PRE_TEST)

# Fuzz targets (see fuzz/fuzz.cmake): libFuzzer binaries with ISB_FUZZ, else replays of fuzz/corpus/<name>.
foreach(target client_hello http_head dns_message)
  if(ISB_FUZZ)
    add_executable(${target}_fuzz fuzz/${target}_fuzz.cc)
    target_compile_options(${target}_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${target}_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    add_executable(${target}_fuzz fuzz/${target}_fuzz.cc fuzz/standalone_main.cc)
    add_test(NAME fuzz_corpus_${target} COMMAND ${target}_fuzz ${CMAKE_SOURCE_DIR}/fuzz/corpus/${target})
  endif()
  target_link_libraries(${target}_fuzz PRIVATE isb_wire)
  add_dependencies(fuzz_targets ${target}_fuzz)
endforeach()

# The sandbox network: veths over rtnetlink, the address pool, the host-side nftables rules.
find_package(Threads REQUIRED)
add_library(isb_net STATIC
  src/net/address_pool.cc
  src/net/firewall.cc
  src/net/dns_server.cc
  src/net/netlink.cc
  src/net/sandbox_network.cc)
target_link_libraries(isb_net PUBLIC isb_wire Threads::Threads)

add_executable(isb_net_tests
  tests/net/address_pool_test.cc
  tests/net/dns_server_test.cc
  tests/net/firewall_test.cc)
target_link_libraries(isb_net_tests PRIVATE isb_net GTest::gtest_main)
target_include_directories(isb_net_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
# Real namespaces, veths and nftables, all in namespaces of the tests' own: safe to run beside other suites.
gtest_discover_tests(isb_net_tests DISCOVERY_MODE PRE_TEST PROPERTIES LABELS net)

