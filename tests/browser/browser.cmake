# The web UI's browser test: puppeteer-core (pinned by tests/browser/package-lock.json) installed into the build tree
# by npm ci; tests/e2e/web_ui_test.cc runs tests/browser/ui_test.mjs with it against a real `isb serve`.
set(ISB_BROWSER_NPM_DIR ${CMAKE_BINARY_DIR}/browser-npm)
add_custom_command(
  OUTPUT ${ISB_BROWSER_NPM_DIR}/node_modules/.package-lock.json
  COMMAND ${CMAKE_COMMAND} -E make_directory ${ISB_BROWSER_NPM_DIR}
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_CURRENT_LIST_DIR}/package.json ${CMAKE_CURRENT_LIST_DIR}/package-lock.json
          ${ISB_BROWSER_NPM_DIR}/
  COMMAND ${ISB_NPM} ci --prefix ${ISB_BROWSER_NPM_DIR} --no-audit --no-fund --loglevel=error
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/package.json ${CMAKE_CURRENT_LIST_DIR}/package-lock.json
  COMMENT "npm ci (browser test client)")
add_custom_target(isb_browser_npm DEPENDS ${ISB_BROWSER_NPM_DIR}/node_modules/.package-lock.json)
