# The sandbox network: veths over rtnetlink, the address pool, the host-side nftables rules.
find_package(Threads REQUIRED)
add_library(isb_net STATIC
  src/net/address_pool.cc
  src/net/firewall.cc
  src/net/netlink.cc
  src/net/sandbox_network.cc)
target_link_libraries(isb_net PUBLIC isb_base Threads::Threads)

add_executable(isb_net_tests
  tests/net/address_pool_test.cc
  tests/net/firewall_test.cc)
target_link_libraries(isb_net_tests PRIVATE isb_net GTest::gtest_main)
target_include_directories(isb_net_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
gtest_discover_tests(isb_net_tests DISCOVERY_MODE PRE_TEST)

# The egress proxy (moves to src/egress/egress.cmake with the rest of egress).
find_package(Boost 1.81 REQUIRED)
add_library(isb_proxy STATIC src/egress/proxy.cc)
target_link_libraries(isb_proxy PUBLIC isb_base Boost::headers Threads::Threads)
add_executable(isb_proxy_tests tests/egress/proxy_test.cc)
target_link_libraries(isb_proxy_tests PRIVATE isb_proxy GTest::gtest_main)
gtest_discover_tests(isb_proxy_tests DISCOVERY_MODE PRE_TEST)
