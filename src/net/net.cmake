# The parsers of untrusted bytes that the egress proxy and the DNS responder read: TLS ClientHello, HTTP/1.x request
# head, DNS message (and the host-name check they share).
add_library(isb_wire STATIC
  src/egress/client_hello.cc
  src/egress/http_head.cc
  src/net/dns_message.cc
  src/net/host_name.cc)
target_link_libraries(isb_wire PUBLIC isb_base)

isb_tests(isb_wire_tests LIBS isb_wire SOURCES
  tests/egress/client_hello_test.cc
  tests/egress/http_head_test.cc
  tests/net/dns_message_test.cc
  tests/net/host_name_test.cc
  tests/net/loopback.cc)
target_compile_definitions(isb_wire_tests PRIVATE ISB_WIRE_TESTDATA="${CMAKE_SOURCE_DIR}/tests/egress/testdata")

foreach(target client_hello http_head dns_message)
  isb_fuzz_target(${target} LIBS isb_wire)
endforeach()

# The sandbox network: veths over rtnetlink, the address pool, the host-side nftables rules.
find_package(Threads REQUIRED)
add_library(isb_net STATIC
  src/net/address_pool.cc
  src/net/firewall.cc
  src/net/dns_server.cc
  src/net/netlink.cc
  src/net/nft_elements.cc
  src/net/sandbox_network.cc)
target_link_libraries(isb_net PUBLIC isb_wire Threads::Threads)

# Real namespaces, veths and nftables, all in namespaces of the tests' own: safe to run beside other suites.
isb_tests(isb_net_tests LIBS isb_net LABELS net SOURCES
  tests/net/address_pool_test.cc
  tests/net/dns_server_test.cc
  tests/net/firewall_test.cc)


# WebSocket (RFC 6455) frames, messages and the opening handshake, and permessage-deflate (RFC 7692): what the
# proxy relays on an intercepted connection that upgraded, and what isb's own WebSocket routes read. zlib as a static
# archive, like the other C libraries.
find_library(ISB_ZLIB_LIB NAMES libz.a z REQUIRED)
add_library(isb_websocket STATIC
  src/net/utf8_stream.cc
  src/net/websocket_frame.cc
  src/net/websocket_message.cc
  src/net/websocket_handshake.cc
  src/net/permessage_deflate.cc)
target_link_libraries(isb_websocket PUBLIC isb_http1 OpenSSL::Crypto ${ISB_ZLIB_LIB})

isb_tests(isb_websocket_tests LIBS isb_websocket SOURCES
  tests/net/utf8_stream_test.cc
  tests/net/websocket_frame_test.cc
  tests/net/websocket_message_test.cc
  tests/net/websocket_handshake_test.cc
  tests/net/permessage_deflate_test.cc)

foreach(target websocket_frame permessage_deflate)
  isb_fuzz_target(${target} LIBS isb_websocket)
endforeach()
