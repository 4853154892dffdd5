# Egress: address classification, the SSRF-safe dialer, the sandbox egress policy and its matcher.
add_library(isb_egress STATIC
  src/egress/address.cc
  src/egress/dialer.cc
  src/egress/host_port.cc
  src/egress/pin.cc
  src/egress/policy.cc
  src/egress/public_suffix.cc
  src/egress/publish_address.cc
  src/egress/punycode.cc)
target_link_libraries(isb_egress PUBLIC isb_base nlohmann_json::nlohmann_json)

isb_tests(isb_egress_tests LIBS isb_egress SOURCES
  tests/egress/address_test.cc
  tests/egress/publish_address_test.cc
  tests/egress/dialer_test.cc
  tests/egress/host_port_test.cc
  tests/egress/pin_test.cc
  tests/egress/policy_test.cc
  tests/egress/public_suffix_test.cc)

# The egress field: JSON in.
isb_fuzz_target(egress_policy LIBS isb_egress isb_api)

# The proxy: sniffs the first bytes with the wire parsers (src/net/net.cmake), relays with splice.
find_package(Boost 1.81 REQUIRED)
# HTTP/1.1 framing beyond the request head (response heads, bodies), for intercepted connections.
add_library(isb_http1 STATIC src/egress/http_response.cc src/egress/http_body.cc src/egress/body_relay.cc
            src/egress/outgoing_head.cc)
target_link_libraries(isb_http1 PUBLIC isb_wire)
foreach(target http_response response_status chunked_body body_relay)
  isb_fuzz_target(${target} LIBS isb_http1)
endforeach()

# The sandboxes' CAs and minted certificates; OpenSSL linked statically, as the isb binary is.
add_library(isb_tls STATIC src/egress/sandbox_ca.cc src/egress/cert_minter.cc)
target_link_libraries(isb_tls PUBLIC isb_base OpenSSL::SSL Threads::Threads ${CMAKE_DL_LIBS})

add_library(isb_proxy STATIC
  src/egress/proxy.cc
  src/egress/plain_http.cc
  src/egress/connect_tunnel.cc
  src/egress/socket_relay.cc
  src/egress/message_relay.cc
  src/egress/sandbox_shares.cc
  src/egress/sandbox_traffic.cc
  src/egress/deny_window.cc
  src/egress/classify.cc
  src/egress/intercept.cc
  src/egress/tls_channel.cc
  src/egress/websocket_pump.cc
  src/egress/websocket_relay.cc)
target_link_libraries(isb_proxy PUBLIC isb_wire isb_http1 isb_tls isb_websocket Boost::headers Threads::Threads)
isb_tests(isb_proxy_tests LIBS isb_proxy SOURCES tests/egress/proxy_test.cc tests/egress/classify_test.cc
           tests/egress/edge_read_test.cc tests/egress/message_relay_test.cc tests/egress/websocket_pump_test.cc
           tests/egress/websocket_relay_test.cc)
isb_tests(isb_intercept_tests LIBS isb_proxy SOURCES
  tests/egress/sandbox_ca_test.cc
  tests/egress/http_response_test.cc
  tests/egress/http_body_test.cc
  tests/egress/body_relay_test.cc
  tests/egress/outgoing_head_test.cc
  tests/egress/intercept_test.cc
  tests/egress/websocket_intercept_test.cc
  tests/egress/tls_channel_test.cc
  tests/egress/tls_origin.cc
  tests/net/loopback.cc)
target_compile_definitions(isb_intercept_tests PRIVATE ISB_EGRESS_TESTDATA="${CMAKE_SOURCE_DIR}/tests/egress/testdata")
# What a sandbox or an origin sends once a connection upgraded to a WebSocket.
isb_fuzz_target(websocket_pump LIBS isb_proxy)

# The judge: an LLM asked per request through an OpenAI-compatible endpoint, over the daemon's own small HTTP/1.1
# client (OpenSSL for https), with its verdict cache and circuit breakers.
add_library(isb_judge STATIC
  src/egress/breaker.cc
  src/egress/http_client.cc
  src/egress/client_response.cc
  src/egress/judge.cc
  src/egress/judge_verdict.cc
  src/egress/stream.cc
  src/egress/verdict_cache.cc)
target_link_libraries(isb_judge PUBLIC isb_egress isb_http1 OpenSSL::SSL ${CMAKE_DL_LIBS} Threads::Threads)

isb_tests(isb_judge_tests LIBS isb_judge SOURCES
  tests/egress/breaker_test.cc
  tests/egress/fake_chat_server.cc
  tests/egress/http_client_test.cc
  tests/egress/client_response_test.cc
  tests/egress/judge_test.cc
  tests/egress/judge_verdict_test.cc
  tests/egress/verdict_cache_test.cc)

# What the judge's endpoint sends back: the HTTP response and the verdict in it.
isb_fuzz_target(judge_response LIBS isb_judge)
