#include "engine/idmap.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace isb::engine {
namespace {

class IdMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-idmap-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    EXPECT_FALSE(std::filesystem::exists(dir_));
  }
  std::string dir_;
};

TEST_F(IdMapTest, LiveLeasesNeverShareARange) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 8);
  auto a = alloc.Acquire();
  auto b = alloc.Acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->base(), b->base());
  EXPECT_EQ((a->base() - (1u << 28)) % kRangeSize, 0u);
  EXPECT_EQ(a->base(), (1u << 28) + a->index() * kRangeSize);
}

TEST_F(IdMapTest, ExhaustionIsAClearError) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 2);
  auto a = alloc.Acquire();
  auto b = alloc.Acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = alloc.Acquire();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("all 2 uid ranges"), std::string::npos) << c.error().message;
}

TEST_F(IdMapTest, ReleasedRangeIsReclaimedAndItsFileRemoved) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 1);
  uid_t first;
  {
    auto a = alloc.Acquire();
    ASSERT_TRUE(a.ok());
    first = a->base();
    EXPECT_TRUE(std::filesystem::exists(a->path()));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/ids"));
  auto again = alloc.Acquire();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->base(), first);
}

TEST_F(IdMapTest, LeaseOfACrashedHolderIsReclaimed) {
  IdAllocator alloc(dir_ + "/ids", 1u << 28, 1);
  pid_t pid = ::fork();
  if (pid == 0) {
    auto a = alloc.Acquire();
    ::_exit(a.ok() ? 0 : 1);  // exits without releasing: the kernel drops the flock
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(alloc.Acquire().ok());
}

TEST(IdMapText, WithoutMappingsOneLine) {
  EXPECT_EQ(IdMapText(268435456, {}, IdMapKind::kUid), "0 268435456 65536\n");
  EXPECT_EQ(IdMapText(268435456, {}, IdMapKind::kGid), "0 268435456 65536\n");
}

using Kind = IdMapping::Kind;

TEST(IdMapText, SplitsTheOwnRangeAroundMappings) {
  std::vector<IdMapping> m = {{Kind::kBoth, 1000, 1000, 1}, {Kind::kUid, 0, 0, 1}, {Kind::kGid, 27, 65535, 1}};
  EXPECT_EQ(IdMapText(268435456, m, IdMapKind::kUid),
            "0 0 1\n"
            "1 268435457 999\n"
            "1000 1000 1\n"
            "1001 268436457 64535\n");
  EXPECT_EQ(IdMapText(268435456, m, IdMapKind::kGid),
            "0 268435456 1000\n"
            "1000 1000 1\n"
            "1001 268436457 64534\n"
            "65535 27 1\n");
}

TEST(IdMapText, AMappingOfTheWholeRangeLeavesNoneOfItsOwn) {
  EXPECT_EQ(IdMapText(268435456, {{Kind::kUid, 100000, 0, 65536}}, IdMapKind::kUid), "0 100000 65536\n");
}

TEST(HostIdOf, MappedIdsAndTheOwnRange) {
  std::vector<IdMapping> m = {{Kind::kUid, 5000, 1000, 10}};
  EXPECT_EQ(HostIdOf(268435456, m, IdMapKind::kUid, 1009), 5009u);
  EXPECT_EQ(HostIdOf(268435456, m, IdMapKind::kUid, 1010), 268436466u);
  EXPECT_EQ(HostIdOf(268435456, m, IdMapKind::kGid, 1000), 268436456u);  // a uid entry maps no gid
  EXPECT_EQ(HostIdOf(0, {}, IdMapKind::kGid, 33), 33u);                  // privileged: the host's ids
}

void ExpectInvalid(const std::vector<IdMapping>& m, const std::string& message, bool privileged = false) {
  Status s = ValidateIdMappings(m, privileged);
  ASSERT_FALSE(s.ok()) << message;
  EXPECT_EQ(s.error().code, Code::kInvalidArgument);
  EXPECT_EQ(s.error().message, message);
}

TEST(ValidateIdMappings, NamesTheField) {
  EXPECT_TRUE(ValidateIdMappings({}).ok());
  EXPECT_TRUE(ValidateIdMappings({}, true).ok());
  EXPECT_TRUE(ValidateIdMappings({{Kind::kUid, 1000, 1000, 1}, {Kind::kGid, 1000, 1000, 1}}).ok());
  ExpectInvalid({{Kind::kUid, 1, 1, 0}}, "idmap[0].count: must be at least 1");
  ExpectInvalid({{Kind::kUid, 1, 65000, 537}}, "idmap[0].sandbox: ids 65000-65536 must lie within 0-65535");
  ExpectInvalid({{Kind::kUid, 4294967290u, 0, 6}},
                "idmap[0].host: ids 4294967290-4294967295 must lie within 0-4294967294");
  ExpectInvalid({{Kind::kBoth, 1, 0, 1}, {Kind::kGid, 536870911u, 1, 2}},
                "idmap[1].host: ids 536870911-536870912 overlap isb's own sandbox ranges (ids 268435456-536870911)");
  ExpectInvalid({{Kind::kUid, 1, 10, 5}, {Kind::kGid, 2, 10, 5}, {Kind::kBoth, 100, 14, 1}},
                "idmap[2].sandbox: ids 14-14 overlap idmap[0]");
  ExpectInvalid({{Kind::kGid, 100, 1, 10}, {Kind::kBoth, 109, 50, 1}}, "idmap[1].host: ids 109-109 overlap idmap[0]");
  ExpectInvalid({{Kind::kUid, 1000, 1000, 1}},
                "idmap: a privileged sandbox has no user namespace to map ids into "
                "(use one or the other)",
                true);
}

TEST(ValidateIdMappings, AMapTheKernelWouldRefuseIsRefused) {
  // Every other id mapped alone: two lines per entry. 169 entries make 339 lines; 171 make 343.
  std::vector<IdMapping> m;
  for (uint32_t i = 0; i < 171; ++i) m.push_back({Kind::kUid, 100000 + i, 2 * i + 1, 1});
  Status s = ValidateIdMappings(m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.error().message.starts_with("idmap: too many entries: the sandbox's uid_map would need 343 lines ("))
      << s.error().message;
  m.resize(100);
  EXPECT_TRUE(ValidateIdMappings(m).ok());
}

TEST(ParseIdMapping, CliForm) {
  auto m = ParseIdMapping("--idmap", "both:1000:1000");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(*m, (IdMapping{Kind::kBoth, 1000, 1000, 1}));
  m = ParseIdMapping("--idmap", "gid:27:2000:3");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(*m, (IdMapping{Kind::kGid, 27, 2000, 3}));
  for (const char* bad :
       {"both:1000", "user:1:1", "uid:-1:1", "uid:1:1:2:3", "uid::1", "uid:1x:1", "uid:99999999999:1"}) {
    auto r = ParseIdMapping("--idmap", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message, std::string("invalid --idmap '") + bad + "': use uid|gid|both:HOST:SANDBOX[:COUNT]");
  }
}

TEST(IdMappingJson, RoundTrip) {
  IdMapping m{Kind::kGid, 27, 2000, 3};
  nlohmann::json j = m;
  EXPECT_EQ(j, nlohmann::json::parse(R"({"kind":"gid","host":27,"sandbox":2000,"count":3})"));
  EXPECT_EQ(j.get<IdMapping>(), m);
}

}  // namespace
}  // namespace isb::engine
