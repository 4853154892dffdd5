// The web UI in a real browser: tests/browser/ui_test.mjs drives Debian's chromium with puppeteer-core against this
// fixture's `isb serve` (setup from the fragment link, sign-in, create, terminal, a reload that finds the same shell,
// a paste past 64 KiB, upload, egress, live list in eight tabs over one events stream, fast navigation leaving no
// stream or terminal open, an image pulled from a test registry in the Images page, inspected and removed, every page
// with no console error or CSP violation, a cross-origin page refused, sign-out). Screenshots are written to
// <build>/browser-test/.
#include <unistd.h>

#include <regex>

#include "e2e/daemon_fixture.h"
#include "image/registry_fixture.h"
#include "must_work.h"

#ifndef ISB_BROWSER_TEST
#error "ISB_BROWSER_TEST must be defined (the path of tests/browser/ui_test.mjs)"
#endif

namespace isb::e2e {
namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

TEST_F(E2eTest, TheWebUiDoesEverythingItOffersInARealBrowserWithNoConsoleErrorOrCspViolation) {
  ISB_REQUIRE_MACHINE(::access(kChromium, X_OK) == 0, "the browser test needs Debian's chromium at /usr/bin/chromium");
  ASSERT_FALSE(FindProgram("node").empty()) << "the browser test needs node in PATH";
  ASSERT_EQ(::access((std::string(ISB_BROWSER_NODE_MODULES) + "/puppeteer-core").c_str(), R_OK), 0)
      << "puppeteer-core is not installed under " << ISB_BROWSER_NODE_MODULES << ": build the isb_browser_npm target";
  const std::string missing = image::testing::MissingTool();
  ISB_REQUIRE_MACHINE(missing.empty(), "the browser test pulls an image from a test registry: it needs " << missing);
  // The browser's calls (sign-ins, creates, execs, inputs) are the UI's to make: their rows are not listed here.
  SkipAuditCheck();
  // A registry holding the test image, which the daemon (restarted) allows and trusts; the Images page pulls it.
  auto images = image::testing::TestImages::Build();
  ASSERT_TRUE(images.ok()) << images.error().message;
  auto registry = image::testing::TestRegistry::Start(false);
  ASSERT_TRUE(registry.ok()) << registry.error().message;
  auto digest = (*registry)->Push(**images, "amd64", "test/busybox:1");
  ASSERT_TRUE(digest.ok()) << digest.error().message;
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--registry-ca", (*registry)->ca_file(), "--registry-allow", (*registry)->host()});
  std::string token = ReadFileOrEmpty(state_dir() + "/setup-token");
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  ASSERT_FALSE(token.empty()) << "no setup token in " << state_dir() << "/setup-token; the daemon says:\n"
                              << DaemonLog();

  ProcResult run = RunProcess({"node", ISB_BROWSER_TEST, "--base", base_url(), "--setup-token", token, "--node-modules",
                               ISB_BROWSER_NODE_MODULES, "--out", ISB_BROWSER_OUT, "--image-ref",
                               (*registry)->host() + "/test/busybox:1", "--image-digest", *digest},
                              "", std::chrono::minutes(4));
  EXPECT_EQ(run.exit_status, 0) << run.Describe() << "\nthe daemon says:\n" << DaemonLog();
  for (const char* step :
       {"ok setup", "ok sign in", "ok create", "ok terminal 42", "ok reattach after reload", "ok paste 100000",
        "ok upload", "ok egress", "ok live list", "ok one stream for 8 tabs", "ok fast navigation", "ok images",
        "ok orgs", "ok audit verify", "ok pages", "ok labels", "ok cross-origin refused", "ok sign out"}) {
    EXPECT_NE(run.out.find(std::string(step) + "\n"), std::string::npos) << step << " did not pass:\n" << run.out;
  }
  EXPECT_NE(run.out.find("csp_violations=0 console_errors=0\n"), std::string::npos) << run.out;
  std::smatch load;
  ASSERT_TRUE(std::regex_search(run.out, load, std::regex("first_load_ms=(\\d+)"))) << run.out;
  RecordProperty("first_load_ms", load[1].str());
  std::smatch detail;
  std::regex_search(run.out, detail, std::regex("first load: ([^\n]*)"));
  std::cout << "first load of the sandboxes list: " << load[1].str() << " ms (" << detail[1].str() << ")\n";
}

}  // namespace
}  // namespace isb::e2e
