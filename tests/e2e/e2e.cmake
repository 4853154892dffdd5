# The end-to-end suite: a real `isb serve` on a temp state dir, driven by curl, the MCP TypeScript SDK and the CLI.
# The SDK is installed by the suite itself (npm) into e2e-node/ under the build tree; the client script sits beside it
# so that node resolves the package from there.
set(ISB_E2E_NODE_DIR ${CMAKE_BINARY_DIR}/e2e-node)
configure_file(${CMAKE_CURRENT_LIST_DIR}/mcp_client.mjs ${ISB_E2E_NODE_DIR}/mcp_client.mjs COPYONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/mcp_stdio_client.mjs ${ISB_E2E_NODE_DIR}/mcp_stdio_client.mjs COPYONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/mcp_oauth_client.mjs ${ISB_E2E_NODE_DIR}/mcp_oauth_client.mjs COPYONLY)

add_executable(isb_e2e_tests
  tests/e2e/daemon_fixture.cc
  tests/e2e/daemon_fixture.h
  tests/e2e/fixture_audit.cc
  tests/e2e/audit_ledger.cc
  tests/e2e/audit_ledger.h
  tests/e2e/audit_ledger_test.cc
  tests/e2e/http_client.cc
  tests/e2e/http_client.h
  tests/e2e/rest_test.cc
  tests/e2e/mcp_test.cc
  tests/e2e/mcp_oauth_test.cc
  tests/e2e/mcp_sdk.cc
  tests/e2e/mcp_sdk.h
  tests/e2e/onboard_test.cc
  tests/e2e/cli_test.cc
  tests/e2e/logs_test.cc
  tests/e2e/adoption_test.cc
  tests/e2e/malformed_test.cc
  tests/e2e/reaper_test.cc
  tests/e2e/concurrency_test.cc
  tests/e2e/limits_test.cc
  tests/e2e/disk_test.cc
  tests/e2e/terminal_test.cc
  tests/e2e/origin_fixture.cc
  tests/e2e/origin_fixture.h
  tests/e2e/egress_test.cc
  tests/e2e/secrets_test.cc
  tests/e2e/images_test.cc
  tests/image/registry_fixture.cc
  tests/e2e/audit_test.cc
  tests/e2e/identity_test.cc
  tests/e2e/web_ui_test.cc
  tests/e2e/terminal_socket_test.cc
  tests/e2e/metrics_test.cc
  tests/e2e/preview_test.cc
  tests/e2e/preview_browser_test.cc)
# SQLite: the audit test edits the state file directly, as an attacker with the file could.
# isb_websocket: the terminal test's client reads and writes RFC 6455 frames; isb_image_dist: the test registry's
# digests.
target_link_libraries(isb_e2e_tests PRIVATE isb_websocket isb_image_dist GTest::gtest_main nlohmann_json::nlohmann_json
                      Threads::Threads ${SQLITE_LIB}
                      ${CMAKE_DL_LIBS} m)
target_include_directories(isb_e2e_tests PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
target_compile_definitions(isb_e2e_tests PRIVATE
  ISB_BINARY="$<TARGET_FILE:isb>" ISB_E2E_NODE_DIR="${ISB_E2E_NODE_DIR}"
  ISB_ECHO_ORIGIN="${CMAKE_SOURCE_DIR}/tests/e2e/echo_origin.py"
  ISB_PREVIEW_APP="${CMAKE_SOURCE_DIR}/tests/e2e/preview_app.py"
  ISB_PREVIEW_APP_JS="${CMAKE_SOURCE_DIR}/tests/e2e/preview_app.js"
  ISB_PREVIEW_BROWSER_TEST="${CMAKE_SOURCE_DIR}/tests/browser/preview_test.mjs"
  ISB_MAKE_TEST_IMAGE="${CMAKE_SOURCE_DIR}/tests/image/make_test_image.sh"
  ISB_MAKE_DEBIAN_IMAGE="${CMAKE_SOURCE_DIR}/tests/image/make_debian_image.sh"
  ISB_DEBIAN_IMAGE_DIR="${CMAKE_BINARY_DIR}/debian-image"
  ISB_BROWSER_TEST="${CMAKE_SOURCE_DIR}/tests/browser/ui_test.mjs" ISB_BROWSER_NODE_MODULES="${ISB_BROWSER_NPM_DIR}/node_modules"
  ISB_BROWSER_OUT="${CMAKE_BINARY_DIR}/browser-test")
add_dependencies(isb_e2e_tests isb isb_browser_npm)
gtest_discover_tests(isb_e2e_tests DISCOVERY_MODE PRE_TEST PROPERTIES RUN_SERIAL TRUE LABELS e2e)
