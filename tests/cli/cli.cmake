# The CLI's client side: the HTTP client and the sandbox commands, tested against an in-test server.
add_executable(isb_cli_tests
  tests/cli/test_server.cc
  tests/cli/run_isb.cc
  tests/cli/client_test.cc
  tests/cli/sandbox_cmds_test.cc
  tests/cli/audit_rows_test.cc
  tests/cli/events_cmd_test.cc
  tests/cli/logs_cmd_test.cc
  tests/cli/setup_cmd_test.cc
  tests/cli/mcp_bridge_test.cc
  tests/cli/parse_errors_test.cc
  tests/cli/exec_outcome_test.cc
  tests/cli/egress_cmd_test.cc
  src/cli/events_cmd.cc
  src/cli/logs_cmd.cc
  src/cli/audit_rows.cc
  src/cli/egress_cmd.cc
  src/cli/client.cc
  src/cli/bind_spec.cc
  src/cli/sandbox_cmds.cc
  src/cli/tool_client.cc
  src/cli/sandbox_inputs.cc
  src/cli/setup_cmd.cc
  src/cli/mcp_bridge.cc
  src/cli/parse_errors.cc
  src/cli/exec_outcome.cc
  src/cli/list_table.cc
  src/cli/terminal_exec.cc)
target_link_libraries(isb_cli_tests PRIVATE isb_base isb_id_mapping isb_spec isb_egress nlohmann_json::nlohmann_json CLI11::CLI11 GTest::gtest_main)
target_include_directories(isb_cli_tests PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/src)
gtest_discover_tests(isb_cli_tests DISCOVERY_MODE PRE_TEST)

# make install into a temp DESTDIR: needs the built isb, which it copies.
add_executable(isb_install_tests tests/cli/install_test.cc)
target_link_libraries(isb_install_tests PRIVATE GTest::gtest_main)
target_compile_definitions(isb_install_tests PRIVATE ISB_SOURCE_DIR="${CMAKE_SOURCE_DIR}" ISB_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(isb_install_tests isb)
gtest_discover_tests(isb_install_tests DISCOVERY_MODE PRE_TEST)

# `make run` as a newcomer meets it: the commands it prints work as printed (a daemon of its own, so one at a time).
add_test(NAME make_run COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/make_run_test.sh $<TARGET_FILE:isb> ${CMAKE_SOURCE_DIR})
set_tests_properties(make_run PROPERTIES RUN_SERIAL TRUE SKIP_RETURN_CODE 77 TIMEOUT 300)
