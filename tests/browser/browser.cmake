# The web UI's browser test: puppeteer-core (pinned by tests/browser/package-lock.json) installed into the build tree
# by npm ci; tests/e2e/web_ui_test.cc runs tests/browser/ui_test.mjs with it against a real `isb serve`.
set(ISB_BROWSER_NPM_DIR ${CMAKE_BINARY_DIR}/browser-npm)
isb_npm_ci(${CMAKE_CURRENT_LIST_DIR} ${ISB_BROWSER_NPM_DIR} "browser test client")
add_custom_target(isb_browser_npm DEPENDS ${ISB_BROWSER_NPM_DIR}/node_modules/.package-lock.json)
