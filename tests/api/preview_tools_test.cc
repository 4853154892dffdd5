// The preview tools over a fake sandbox store: a link is handed out only for a sandbox that still runs once the
// link is recorded.
#include "api/preview_tools.h"

#include <gtest/gtest.h>

#include "api/fake_sandboxes.h"
#include "api/org_sandboxes.h"
#include "api/preview_access.h"
#include "api/principals.h"

namespace isb::api {
namespace {

// A store whose sandbox stops right after the first look at it: the stop racing sandbox_port_open.
class StopsAfterFirstGet : public FakeSandboxes {
 public:
  Result<SandboxInfo> Get(const std::string& ref) override {
    Result<SandboxInfo> got = FakeSandboxes::Get(ref);
    if (++gets == 1 && got.ok()) {
      std::lock_guard lock(mu);
      sandboxes[got->id].state = "stopped";
    }
    return got;
  }
  int gets = 0;
};

class PreviewToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(AddPreviewTools(registry_, fake_, access_).ok());
    SandboxSpec spec;
    spec.labels[kOrgLabel] = "acme";
    auto info = fake_.Create(spec);
    ASSERT_TRUE(info.ok());
    id_ = info->id;
    ctx_.identity = Identity::Host();
    ctx_.org = "acme";
  }
  StopsAfterFirstGet fake_;
  PreviewAccess access_{PreviewAccessOptions{}};
  Registry registry_;
  std::string id_;
  CallContext ctx_;
};

TEST_F(PreviewToolsTest, ASandboxStoppedWhileTheLinkIsMadeGetsNoLinkAndNoneIsLeft) {
  auto r = registry_.Call("sandbox_port_open", {{"sandbox", id_}, {"port", 8080}}, ctx_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kConflict);
  EXPECT_EQ(r.error().message, "sandbox " + id_ + " is stopped: start it (sandbox_start) to preview its ports");
  EXPECT_EQ(fake_.gets, 2);
  EXPECT_TRUE(access_.Sandboxes().empty());
}

TEST_F(PreviewToolsTest, ARunningSandboxGetsALinkThatIsRecorded) {
  fake_.gets = 1;  // no stop
  auto r = registry_.Call("sandbox_port_open", {{"sandbox", id_}, {"port", 8080}}, ctx_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["url"].get<std::string>().rfind("http://8080-" + id_ + "-acme.localhost/.isb-preview/", 0), 0u);
  EXPECT_EQ(access_.Sandboxes(), std::vector<std::string>{id_});
}

}  // namespace
}  // namespace isb::api
