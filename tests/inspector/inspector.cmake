# isb's MCP server driven by the MCP Inspector's CLI: @modelcontextprotocol/inspector (pinned by
# tests/inspector/package-lock.json) installed into the build tree by npm ci, its package scripts not run;
# tests/inspector/inspector_cli_test.sh runs it against a real `isb serve`. The install is part of the default build
# (ALL), like the isb binary the test runs.
set(ISB_INSPECTOR_NPM_DIR ${CMAKE_BINARY_DIR}/inspector-npm)
isb_npm_ci(${CMAKE_CURRENT_LIST_DIR} ${ISB_INSPECTOR_NPM_DIR} "MCP Inspector" --ignore-scripts)
add_custom_target(isb_inspector_npm ALL DEPENDS ${ISB_INSPECTOR_NPM_DIR}/node_modules/.package-lock.json)

# Starts a daemon with real cgroups and nftables: one at a time, like the e2e suite. 77: not root (or no node),
# unless ISB_MUST_WORK=1, which makes that a failure.
add_test(NAME mcp_inspector_cli
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/inspector_cli_test.sh $<TARGET_FILE:isb> ${ISB_INSPECTOR_NPM_DIR})
set_tests_properties(mcp_inspector_cli PROPERTIES RUN_SERIAL TRUE SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS e2e)
