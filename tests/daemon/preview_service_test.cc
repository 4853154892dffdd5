// The preview watch's catch-up after lost events: every sandbox with previews is looked at again.
#include "daemon/preview_service.h"

#include <gtest/gtest.h>

namespace isb::daemon {
namespace {

TEST(PreviewServiceTest, AfterLostEventsThePreviewsOfSandboxesNoLongerRunningEnd) {
  api::PreviewAccess access{api::PreviewAccessOptions{}};
  const api::PreviewHost running{8080, "sb-00000000000000aa", "acme"};
  const api::PreviewHost stopped{8080, "sb-00000000000000bb", "acme"};
  const api::PreviewHost stopped_link_only{3000, "sb-00000000000000cc", "acme"};
  for (const api::PreviewHost& host : {running, stopped}) {
    auto link = access.Open(host, api::Identity::Host());
    ASSERT_TRUE(link.ok());
    ASSERT_TRUE(access.Spend(link->url.substr(link->url.find(api::kPreviewLinkPath) + 14), host).ok());
  }
  ASSERT_TRUE(access.Open(stopped_link_only, api::Identity::Host()).ok());
  std::vector<std::string> asked;
  const NetworkOf network = [&](const std::string& id) -> Result<engine::NetworkAttachment> {
    asked.push_back(id);
    if (id == running.sandbox) return engine::NetworkAttachment{.pid = 1, .start_time = 1};
    return Error::Of(Code::kConflict, "sandbox " + id + " is not running");
  };
  EXPECT_EQ(EndPreviewsOfStopped(access, network), 1u);  // one session; the unspent link ends too
  EXPECT_EQ(asked, (std::vector<std::string>{running.sandbox, stopped.sandbox, stopped_link_only.sandbox}));
  EXPECT_EQ(access.Sandboxes(), std::vector<std::string>{running.sandbox});
}

}  // namespace
}  // namespace isb::daemon
