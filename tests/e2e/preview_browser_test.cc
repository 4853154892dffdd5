// A port preview in a real browser: tests/browser/preview_test.mjs drives Debian's chromium with puppeteer-core
// against this fixture's `isb serve` and a sandbox serving tests/e2e/preview_app.py (and its preview_app.js): the
// app at its own origin, none of isb's credentials reaching it, its script unable to call isb as the viewer, and the
// spent link refused. A screenshot goes to <build>/browser-test/.
#include <unistd.h>

#include "e2e/daemon_fixture.h"
#include "must_work.h"

#ifndef ISB_PREVIEW_BROWSER_TEST
#error "ISB_PREVIEW_BROWSER_TEST must be defined (the path of tests/browser/preview_test.mjs)"
#endif

namespace isb::e2e {
namespace {

TEST_F(E2eTest, APreviewRunsAtItsOwnOriginInARealBrowserAndItsScriptCannotCallIsbAsTheViewer) {
  ISB_REQUIRE_MACHINE(::access("/usr/bin/chromium", X_OK) == 0, "the browser test needs Debian's chromium");
  ASSERT_FALSE(FindProgram("node").empty()) << "the browser test needs node in PATH";
  ASSERT_EQ(::access((std::string(ISB_BROWSER_NODE_MODULES) + "/puppeteer-core").c_str(), R_OK), 0)
      << "puppeteer-core is not installed under " << ISB_BROWSER_NODE_MODULES << ": build the isb_browser_npm target";
  // The browser's sign-in and the app's calls to isb are the test's subject, not tool calls of the fixture's.
  SkipAuditCheck();
  std::string setup = ReadFileOrEmpty(state_dir() + "/setup-token");
  while (!setup.empty() && (setup.back() == '\n' || setup.back() == ' ')) setup.pop_back();
  ASSERT_FALSE(setup.empty()) << DaemonLog();

  const std::string id = CreateSandbox();
  MustTool("sandbox_file_write",
           {{"sandbox", id}, {"path", "/tmp/app.py"}, {"content_base64", Base64(ReadFileOrEmpty(ISB_PREVIEW_APP))}});
  MustTool("sandbox_file_write",
           {{"sandbox", id}, {"path", "/tmp/app.js"}, {"content_base64", Base64(ReadFileOrEmpty(ISB_PREVIEW_APP_JS))}});
  json up = Exec(id, {"sh", "-c",
                      "setsid python3 /tmp/app.py 8080 </dev/null >/tmp/app.log 2>&1 &\n"
                      "for i in $(seq 200); do grep -q ' 0100007F:1F90 ' /proc/net/tcp && exit 0; sleep 0.05; done; "
                      "cat /tmp/app.log; exit 1"});
  ASSERT_EQ(up.value("exit_code", -1), 0) << up.dump();
  json link = MustTool("sandbox_port_open", {{"sandbox", id}, {"port", 8080}});

  ProcResult run =
      RunProcess({"node", ISB_PREVIEW_BROWSER_TEST, "--base", base_url(), "--setup-token", setup, "--link",
                  link.value("url", ""), "--node-modules", ISB_BROWSER_NODE_MODULES, "--out", ISB_BROWSER_OUT},
                 "", std::chrono::minutes(2));
  EXPECT_EQ(run.exit_status, 0) << run.Describe() << "\nthe daemon says:\n" << DaemonLog();
  for (const char* step : {"ok app at its own origin", "ok app cannot call isb as the viewer", "ok spent link refused"})
    EXPECT_NE(run.out.find(step), std::string::npos) << step << " did not pass:\n" << run.out;
}

}  // namespace
}  // namespace isb::e2e
