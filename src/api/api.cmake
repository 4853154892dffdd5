# The tool registry and its surfaces (REST, MCP, the HTTP server over TCP and the unix socket).
find_package(Boost 1.81 REQUIRED)
find_package(Threads REQUIRED)

# Everything but the Beast translation unit, so the logic stays quick to rebuild.
add_library(isb_api STATIC
  src/api/json_util.cc
  src/api/json_schema.cc
  src/api/registry.cc
  src/api/sandboxes.cc
  src/api/sandbox_tools.cc
  src/api/sandbox_handlers.cc
  src/api/org_sandboxes.cc
  src/api/quota_gate.cc
  src/api/web_auth.cc
  src/api/oauth_form.cc
  src/api/oauth_server.cc
  src/api/identity_tools.cc
  src/api/org_tools.cc
  src/api/audit_tools.cc
  src/api/secret_tools.cc
  src/api/http_message.cc
  src/api/event_bus.cc
  src/api/events_stream.cc
  src/api/metrics_endpoint.cc
  src/api/usage_store.cc
  src/api/usage_tool.cc
  src/api/listen_address.cc
  src/api/router.cc
  src/api/server_routes.cc
  src/api/rest.cc
  src/api/mcp.cc
  src/api/mcp_approval.cc
  src/api/spec_policy.cc
  src/api/tool_policy.cc
  src/api/web_ui.cc
  src/api/websocket_session.cc
  src/api/terminal_sessions.cc
  src/api/terminal_socket.cc
  src/api/preview_host.cc
  src/api/preview_access.cc
  src/api/preview_filter.cc
  src/api/preview_tools.cc)
# egress for IP address literals (publish addresses), identity for tool globs, audit for the accountability tools,
# the secret store for the secret tools,
# the engine's id mappings for a spec's idmap, spec/ for the sandbox spec and exec request.
# isb_websocket for a sandbox's terminal over a WebSocket.
target_link_libraries(isb_api PUBLIC isb_base isb_id_mapping isb_spec isb_egress isb_identity isb_audit
                      isb_secrets_store isb_websocket nlohmann_json::nlohmann_json Boost::headers Threads::Threads)

# The HTTP server: the one translation unit with Beast, apart so that the logic above builds (and fuzzes) without it.
add_library(isb_http STATIC src/api/http_server.cc)
target_link_libraries(isb_http PUBLIC isb_api)
# Beast and Asio as headers only, without the deprecated pieces.
target_compile_definitions(isb_http PRIVATE BOOST_ASIO_NO_DEPRECATED)

# Every tool family in one registry (all_tools.h): the daemon, the docs generator and the role matrix share the list.
add_library(isb_tools STATIC src/api/all_tools.cc)
target_link_libraries(isb_tools PUBLIC isb_image_api)

add_executable(isb_api_tests
  tests/api/fake_sandboxes.cc
  tests/api/json_schema_test.cc
  tests/api/json_util_test.cc
  tests/api/registry_test.cc
  tests/api/sandbox_tools_test.cc
  tests/api/rest_test.cc
  tests/api/mcp_test.cc
  tests/api/listen_address_test.cc
  tests/api/raw_http.cc
  tests/api/http_server_test.cc
  tests/api/router_test.cc
  tests/api/preview_host_test.cc
  tests/api/preview_filter_test.cc
  tests/api/preview_access_test.cc
  tests/api/preview_tools_test.cc
  tests/api/spec_policy_test.cc
  tests/api/tool_policy_test.cc
  tests/api/audit_tools_test.cc
  tests/api/role_matrix_test.cc
  tests/api/secret_tools_test.cc
  tests/api/web_auth_test.cc
  tests/api/oauth_form_test.cc
  tests/api/oauth_server_test.cc
  tests/api/web_ui_test.cc
  tests/api/event_bus_test.cc
  tests/api/usage_store_test.cc
  tests/api/events_http_test.cc
  tests/api/websocket_session_test.cc
  tests/api/terminal_sessions_test.cc
  tests/api/terminal_socket_unit_test.cc)
target_link_libraries(isb_api_tests PRIVATE isb_http isb_tools GTest::gtest_main)
target_include_directories(isb_api_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests)
gtest_discover_tests(isb_api_tests DISCOVERY_MODE PRE_TEST)

# ${VAR} expansion of remote specs and the tool lists.
isb_fuzz_target(spec_policy LIBS isb_api)
# The path and Host of any request, matched against a route table.
isb_fuzz_target(router LIBS isb_api)
# The credentials in a TCP request (Authorization, Cookie, the browser headers) and the sign-in and setup bodies.
isb_fuzz_target(web_auth LIBS isb_api)
# OAuth form bodies and query strings, client registration JSON and redirect URIs.
isb_fuzz_target(oauth_form LIBS isb_api)
# A preview's Host and target, and the header fields the preview proxy edits both ways.
isb_fuzz_target(preview_host LIBS isb_api)
# What a browser sends on a terminal WebSocket once upgraded.
isb_fuzz_target(websocket_session LIBS isb_api)
# A stateless MCP approval's requestState as a client sends it back.
isb_fuzz_target(approval_state LIBS isb_api)
