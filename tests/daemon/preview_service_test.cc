// The preview watch's catch-up after lost events: every sandbox with previews is looked at again, and a preview
// belongs to the run of its sandbox it was opened in.
#include "daemon/preview_service.h"

#include <gtest/gtest.h>

#include <map>

namespace isb::daemon {
namespace {

TEST(PreviewServiceTest, AfterLostEventsThePreviewsOfSandboxesNoLongerRunningOrRunningAgainEnd) {
  const api::PreviewHost running{8080, "sb-00000000000000aa", "acme"};
  const api::PreviewHost stopped{8080, "sb-00000000000000bb", "acme"};
  const api::PreviewHost stopped_link_only{3000, "sb-00000000000000cc", "acme"};
  const api::PreviewHost restarted{8080, "sb-00000000000000dd", "acme"};
  // Each sandbox's run while it runs, as SandboxManager::RunOf tells it (its runtime and its record).
  std::map<std::string, std::string> runs = {{running.sandbox, "namespaces pid=10 start=1 lease=-1"},
                                             {stopped.sandbox, "namespaces pid=11 start=1 lease=-1"},
                                             {stopped_link_only.sandbox, "namespaces pid=12 start=1 lease=-1"},
                                             {restarted.sandbox, "namespaces pid=13 start=1 lease=-1"}};
  std::vector<std::string> asked;
  const RunOf run_of = [&](const std::string& id) {
    asked.push_back(id);
    auto it = runs.find(id);
    return it == runs.end() ? std::string() : it->second;
  };
  api::PreviewAccessOptions options;
  options.run_of = run_of;
  api::PreviewAccess access{options};
  for (const api::PreviewHost& host : {running, stopped, restarted}) {
    auto link = access.Open(host, api::Identity::Host());
    ASSERT_TRUE(link.ok());
    ASSERT_TRUE(access.Spend(link->url.substr(link->url.find(api::kPreviewLinkPath) + 14), host).ok());
  }
  ASSERT_TRUE(access.Open(stopped_link_only, api::Identity::Host()).ok());
  EXPECT_EQ(access.EndOtherRuns(), 0u);  // every run as it was
  // Lost events: two sandboxes stopped, and one stopped and started again (the same pid, another start time).
  runs.erase(stopped.sandbox);
  runs.erase(stopped_link_only.sandbox);
  runs[restarted.sandbox] = "namespaces pid=13 start=2 lease=-1";
  asked.clear();
  EXPECT_EQ(access.EndOtherRuns(), 2u);  // two sessions; the unspent link ends too
  EXPECT_EQ(asked,
            (std::vector<std::string>{running.sandbox, stopped.sandbox, stopped_link_only.sandbox, restarted.sandbox}));
  EXPECT_EQ(access.Sandboxes(), std::vector<std::string>{running.sandbox});
  // A preview opened in the new run stays.
  auto again = access.Open(restarted, api::Identity::Host());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(access.EndOtherRuns(), 0u);
  EXPECT_EQ(access.Sandboxes(), (std::vector<std::string>{running.sandbox, restarted.sandbox}));
}

TEST(PreviewServiceTest, WithoutRunsToTellApartNothingEnds) {
  api::PreviewAccess access{api::PreviewAccessOptions{}};
  ASSERT_TRUE(access.Open({8080, "sb-00000000000000aa", "acme"}, api::Identity::Host()).ok());
  EXPECT_EQ(access.EndOtherRuns(), 0u);
  EXPECT_EQ(access.Sandboxes().size(), 1u);
}

}  // namespace
}  // namespace isb::daemon
