// The remote-spec policy: each refusal with its exact message and the flag that allows it, bind roots judged by
// real paths, and ${VAR} filled from the caller's vars only.
#include "api/spec_policy.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "base/file.h"

namespace isb::api {
namespace {

namespace fs = std::filesystem;

template <typename T>
void ExpectError(const Result<T>& s, Code code, const std::string& message) {
  ASSERT_FALSE(s.ok()) << "expected: " << message;
  EXPECT_EQ(s.error().code, code);
  EXPECT_EQ(s.error().message, message);
}

// A temp dir holding data/ (the bind root) with img/, a symlink to /etc and one to data2/, and data2/ beside it.
class SpecPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/isb-spec-policy-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = fs::canonical(tmpl).string();
    fs::create_directories(dir_ + "/data/img");
    fs::create_directories(dir_ + "/data2");
    fs::create_symlink("/etc", dir_ + "/data/escape");
    fs::create_symlink(dir_ + "/data2", dir_ + "/data/to_data2");
    fs::create_symlink(dir_ + "/data/img", dir_ + "/data/inner");
    fs::create_symlink(dir_ + "/data", dir_ + "/data_link");
    policy_.bind_roots = {dir_ + "/data_link"};  // resolved to data/ by Prepare
    ASSERT_TRUE(PrepareRemoteSpecPolicy(policy_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  Status CheckImage(const std::string& image) {
    SandboxSpec spec;
    spec.image = image;
    return CheckRemoteSpec(spec, policy_);
  }

  std::string dir_;
  RemoteSpecPolicy policy_;
};

TEST_F(SpecPolicyTest, PrepareResolvesRootsAndRefusesMissingOnes) {
  EXPECT_EQ(policy_.bind_roots, std::vector<std::string>{dir_ + "/data"});

  RemoteSpecPolicy missing;
  missing.bind_roots = {dir_ + "/data", dir_ + "/nope"};
  ExpectError(PrepareRemoteSpecPolicy(missing), Code::kInvalidArgument,
              "--bind-root " + dir_ + "/nope: No such file or directory");

  ASSERT_TRUE(WriteFile(dir_ + "/file", "").ok());
  RemoteSpecPolicy file;
  file.bind_roots = {dir_ + "/file"};
  ExpectError(PrepareRemoteSpecPolicy(file), Code::kInvalidArgument, "--bind-root " + dir_ + "/file: not a directory");
}

TEST_F(SpecPolicyTest, PrepareCanonicalizesPublishAddresses) {
  RemoteSpecPolicy p;
  p.publish_addresses = {"100.64.1.2", "fd7a:115c:a1e0:0:0::1"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(p).ok());
  EXPECT_EQ(p.publish_addresses, (std::vector<std::string>{"100.64.1.2", "fd7a:115c:a1e0::1"}));

  RemoteSpecPolicy bad;
  bad.publish_addresses = {"tailnet.example"};
  ExpectError(PrepareRemoteSpecPolicy(bad), Code::kInvalidArgument,
              "--publish-address 'tailnet.example' is not an IP address");
}

TEST_F(SpecPolicyTest, DefaultSpecPasses) {
  EXPECT_TRUE(CheckRemoteSpec(SandboxSpec{}, RemoteSpecPolicy{}).ok());
  SandboxSpec spec;
  spec.labels = {{"team", "a"}, {"isbx", "b"}, {"app.isb.role", "c"}};
  spec.egress = nlohmann::json{{"allow", {"example.com"}}, {"secrets", {"API_KEY"}}};
  EXPECT_TRUE(CheckRemoteSpec(spec, RemoteSpecPolicy{}).ok());
}

TEST_F(SpecPolicyTest, ReservedLabelsRefusedWhateverTheFlags) {
  SandboxSpec spec;
  spec.labels = {{"team", "a"}, {"isb.owner", "mcp:someone-else"}};
  RemoteSpecPolicy everything = policy_;
  everything.allow_privileged = everything.allow_raw = everything.any_instance = true;
  ExpectError(CheckRemoteSpec(spec, everything), Code::kForbidden,
              "label 'isb.owner': labels starting with isb. are reserved");
}

// Each refused without its flag (and with the other one), allowed with it. "auto" and "none" are the empty list,
// which DefaultSpecPasses covers.
TEST_F(SpecPolicyTest, PrivilegedAndIdmapNeedTheirFlag) {
  SandboxSpec privileged, mapped;
  privileged.privileged = true;
  mapped.idmap = {{engine::IdMapping::Kind::kBoth, 1000, 1000, 1}};
  RemoteSpecPolicy allow_privileged, allow_raw;
  allow_privileged.allow_privileged = true;
  allow_raw.allow_raw = true;
  struct Case {
    const SandboxSpec& spec;
    const RemoteSpecPolicy& flag;
    const RemoteSpecPolicy& other;
    std::string refusal;
  };
  for (const Case& c : {Case{privileged, allow_privileged, allow_raw, "privileged: true needs --allow-privileged"},
                        Case{mapped, allow_raw, allow_privileged, "idmap: mapping host ids needs --allow-raw"}}) {
    ExpectError(CheckRemoteSpec(c.spec, RemoteSpecPolicy{}), Code::kForbidden, c.refusal);
    ExpectError(CheckRemoteSpec(c.spec, c.other), Code::kForbidden, c.refusal);
    EXPECT_TRUE(CheckRemoteSpec(c.spec, c.flag).ok()) << c.refusal;
  }
}

TEST_F(SpecPolicyTest, ImageNeedsABindRoot) {
  SandboxSpec spec;
  spec.image = dir_ + "/data/img";
  ExpectError(CheckRemoteSpec(spec, RemoteSpecPolicy{}), Code::kForbidden,
              "image '" + dir_ + "/data/img': host paths need --bind-root DIR (none is set)");
  EXPECT_TRUE(CheckRemoteSpec(spec, policy_).ok());
}

TEST_F(SpecPolicyTest, MountSourcesNeedABindRootByTheirRealPath) {
  SandboxSpec spec;
  spec.mounts = {{dir_ + "/data/img", "/mnt/img", true}, {dir_ + "/data/escape", "/mnt/etc", true}};
  ExpectError(CheckRemoteSpec(spec, RemoteSpecPolicy{}), Code::kForbidden,
              "mounts[0].source '" + dir_ + "/data/img': host paths need --bind-root DIR (none is set)");
  ExpectError(CheckRemoteSpec(spec, policy_), Code::kForbidden,
              "mounts[1].source '" + dir_ + "/data/escape' resolves to '/etc', outside every --bind-root");
  spec.mounts.pop_back();
  EXPECT_TRUE(CheckRemoteSpec(spec, policy_).ok());
}

// --bind-root ORG=DIR is for that org's members only; a plain --bind-root DIR is every org's, beside their own.
TEST_F(SpecPolicyTest, AnOrgsBindRootsAreItsMembersOnly) {
  fs::create_directories(dir_ + "/acme");
  fs::create_directories(dir_ + "/beta");
  RemoteSpecPolicy p;
  p.bind_roots = {"acme=" + dir_ + "/acme", "beta=" + dir_ + "/beta/", dir_ + "/data2"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(p).ok());
  EXPECT_EQ(p.bind_roots, std::vector<std::string>{dir_ + "/data2"});
  EXPECT_EQ(p.org_bind_roots,
            (std::map<std::string, std::vector<std::string>>{{"acme", {dir_ + "/acme"}}, {"beta", {dir_ + "/beta"}}}));
  EXPECT_EQ(ResolveUnderBindRoot("image", dir_ + "/acme", p, "acme").value(), dir_ + "/acme");
  ExpectError(ResolveUnderBindRoot("image", dir_ + "/acme", p, "beta"), Code::kForbidden,
              "image '" + dir_ + "/acme' is outside every --bind-root");
  ExpectError(ResolveUnderBindRoot("image", dir_ + "/acme", p), Code::kForbidden,
              "image '" + dir_ + "/acme' is outside every --bind-root");
  for (const char* org : {"acme", "beta", "gamma"})
    EXPECT_EQ(ResolveUnderBindRoot("image", dir_ + "/data2", p, org).value(), dir_ + "/data2") << org;
  SandboxSpec spec;
  spec.mounts = {{dir_ + "/beta", "/mnt/x", true}};
  EXPECT_TRUE(CheckRemoteSpec(spec, p, "beta").ok());
  ExpectError(CheckRemoteSpec(spec, p, "acme"), Code::kForbidden,
              "mounts[0].source '" + dir_ + "/beta' is outside every --bind-root");
  // Only the org's roots and none for every org: another org has none at all.
  RemoteSpecPolicy only;
  only.bind_roots = {"acme=" + dir_ + "/acme"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(only).ok());
  ExpectError(ResolveUnderBindRoot("image", dir_ + "/acme", only, "beta"), Code::kForbidden,
              "image '" + dir_ + "/acme': host paths need --bind-root DIR or beta=DIR (none is set for org 'beta')");
  // A directory with '=' in its name is a directory for every org; an org entry needs a valid org and an absolute
  // directory.
  fs::create_directories(dir_ + "/a=b");
  RemoteSpecPolicy equals;
  equals.bind_roots = {dir_ + "/a=b"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(equals).ok());
  EXPECT_EQ(equals.bind_roots, std::vector<std::string>{dir_ + "/a=b"});
  for (const auto& [entry, why] : std::vector<std::pair<std::string, std::string>>{
           {"=" + dir_ + "/acme", "ORG=DIR needs an org"}, {"acme=acme", "the directory must be absolute"}}) {
    RemoteSpecPolicy bad;
    bad.bind_roots = {entry};
    ExpectError(Result<int>(PrepareRemoteSpecPolicy(bad).error()), Code::kInvalidArgument,
                "--bind-root " + entry + ": " + why);
  }
  RemoteSpecPolicy badly_named;
  badly_named.bind_roots = {"Acme Corp=" + dir_ + "/acme"};
  EXPECT_FALSE(PrepareRemoteSpecPolicy(badly_named).ok());
}

TEST_F(SpecPolicyTest, PortsPublishOnLoopbackUnlessAnAddressIsAllowed) {
  SandboxSpec spec;
  spec.ports = {{8080, 28080, "127.0.0.1"}, {8080, 28081, "::1"}};
  EXPECT_TRUE(CheckRemoteSpec(spec, RemoteSpecPolicy{}).ok());
  spec.ports.push_back({22, 22222, "0.0.0.0"});
  ExpectError(CheckRemoteSpec(spec, RemoteSpecPolicy{}), Code::kForbidden,
              "ports[2]: publishing on 0.0.0.0 needs --publish-address 0.0.0.0");
  // Only isb's own range (--publish-ports), on any address: a member can neither squat 127.0.0.1:25 nor learn from
  // a bind's refusal which other host ports are in use.
  SandboxSpec outside;
  outside.ports = {{8080, 20000, "127.0.0.1"}, {8080, 29999, "127.0.0.1"}, {25, 25, "127.0.0.1"}};
  ExpectError(CheckRemoteSpec(outside, RemoteSpecPolicy{}), Code::kForbidden,
              "ports[2]: host port 25 is outside 20000-29999, the ports isb publishes for remote callers (isb serve "
              "--publish-ports)");
  outside.ports[2].host_port = 30000;
  ExpectError(CheckRemoteSpec(outside, RemoteSpecPolicy{}), Code::kForbidden,
              "ports[2]: host port 30000 is outside 20000-29999, the ports isb publishes for remote callers (isb serve "
              "--publish-ports)");
  RemoteSpecPolicy wider;
  wider.publish_ports = "1024-40000";
  ASSERT_TRUE(PrepareRemoteSpecPolicy(wider).ok());
  EXPECT_TRUE(CheckRemoteSpec(outside, wider).ok());
  for (const char* bad : {"80-90", "1023-2000", "3000-2000", "2000", "2000-70000", "-5", "1e3-2000", "2000-"}) {
    RemoteSpecPolicy p;
    p.publish_ports = bad;
    ExpectError(
        PrepareRemoteSpecPolicy(p), Code::kInvalidArgument,
        std::string("--publish-ports ") + bad + ": expected FIRST-LAST within 1024-65535, FIRST no more than LAST");
  }
  // The daemon's own port, on any address: ::1 would take what a client sends to "localhost".
  RemoteSpecPolicy daemon;
  daemon.api_port = 28092;
  for (const char* address : {"::1", "127.0.0.2"}) {
    SandboxSpec own;
    own.ports = {{8080, 28092, address}};
    ExpectError(CheckRemoteSpec(own, daemon), Code::kForbidden,
                "ports[0]: host port 28092 is the isb daemon's own, on every address");
  }
  RemoteSpecPolicy tailnet;
  tailnet.publish_addresses = {"100.64.1.2"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(tailnet).ok());
  spec.ports.back().host_address = "100.64.1.2";
  EXPECT_TRUE(CheckRemoteSpec(spec, tailnet).ok());
}

TEST_F(SpecPolicyTest, ImageUnderRootAllowedAsItsRealPath) {
  EXPECT_TRUE(CheckImage(dir_ + "/data").ok());
  EXPECT_TRUE(CheckImage(dir_ + "/data/img/").ok());
  EXPECT_EQ(ResolveUnderBindRoot("image", dir_ + "/data/inner", policy_).value(), dir_ + "/data/img");
  EXPECT_EQ(ResolveUnderBindRoot("image", dir_ + "/data/./img/../img", policy_).value(), dir_ + "/data/img");
}

TEST_F(SpecPolicyTest, SymlinkEscapingTheRootRefused) {
  ExpectError(CheckImage(dir_ + "/data/escape"), Code::kForbidden,
              "image '" + dir_ + "/data/escape' resolves to '/etc', outside every --bind-root");
  // Component-wise on the real path: data2 is not below data.
  ExpectError(CheckImage(dir_ + "/data/to_data2"), Code::kForbidden,
              "image '" + dir_ + "/data/to_data2' resolves to '" + dir_ + "/data2', outside every --bind-root");
}

TEST_F(SpecPolicyTest, PathsOutsideTheRootRefusedAsWritten) {
  // Judged before the file system is consulted: nothing is said about whether they exist.
  for (const std::string& outside : {dir_ + "/data2", dir_ + "/data2/x", dir_ + "/data/../data2", dir_ + "/dat",
                                     std::string("/etc"), std::string("/nonexistent/x")}) {
    ExpectError(CheckImage(outside), Code::kForbidden, "image '" + outside + "' is outside every --bind-root");
  }
}

TEST_F(SpecPolicyTest, AMissingPathIsRefusedAndARelativeOneIsAnImageOfTheOrg) {
  ExpectError(CheckImage(dir_ + "/data/nope"), Code::kInvalidArgument, "image '" + dir_ + "/data/nope' does not exist");
  // Not a path: a reference to one of the org's images, which names nothing on the host (the daemon resolves it
  // among the org's images, or says it is not found).
  EXPECT_TRUE(CheckImage("data/img").ok());
}

TEST_F(SpecPolicyTest, RootSlashAllowsEveryExistingPath) {
  RemoteSpecPolicy p;
  p.bind_roots = {"/"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(p).ok());
  SandboxSpec spec;
  spec.image = dir_ + "/data/escape";
  EXPECT_TRUE(CheckRemoteSpec(spec, p).ok());
}

TEST_F(SpecPolicyTest, PublishOnLoopbackOnlyUnlessListed) {
  RemoteSpecPolicy none;
  for (const char* loopback : {"127.0.0.1", "127.1.2.3", "::1"}) {
    EXPECT_TRUE(CheckPublishAddress(loopback, none).ok()) << loopback;
  }
  ExpectError(CheckPublishAddress("100.64.1.2", none), Code::kForbidden,
              "publishing on 100.64.1.2 needs --publish-address 100.64.1.2");
  ExpectError(CheckPublishAddress("0.0.0.0", none), Code::kForbidden,
              "publishing on 0.0.0.0 needs --publish-address 0.0.0.0");
  ExpectError(CheckPublishAddress("fd7a:115c:a1e0:0::1", none), Code::kForbidden,
              "publishing on fd7a:115c:a1e0::1 needs --publish-address fd7a:115c:a1e0::1");
  ExpectError(CheckPublishAddress("localhost", none), Code::kInvalidArgument,
              "publish address 'localhost' is not an IP address");

  RemoteSpecPolicy listed;
  listed.publish_addresses = {"100.64.1.2", "fd7a:115c:a1e0::1"};
  ASSERT_TRUE(PrepareRemoteSpecPolicy(listed).ok());
  EXPECT_TRUE(CheckPublishAddress("100.64.1.2", listed).ok());
  EXPECT_TRUE(CheckPublishAddress("fd7a:115c:a1e0:0:0:0:0:1", listed).ok());
  ExpectError(CheckPublishAddress("100.64.1.3", listed), Code::kForbidden,
              "publishing on 100.64.1.3 needs --publish-address 100.64.1.3");
}

TEST(ExpandVarsTest, FillsFromTheCallersVarsOnly) {
  ASSERT_EQ(::setenv("ISB_SPEC_POLICY_TEST_VAR", "from-the-daemon", 1), 0);
  ExpectError(ExpandVars("token=${ISB_SPEC_POLICY_TEST_VAR}", {}), Code::kInvalidArgument,
              "${ISB_SPEC_POLICY_TEST_VAR} is not among the vars sent");
  auto sent = ExpandVars("token=${ISB_SPEC_POLICY_TEST_VAR}", {{"ISB_SPEC_POLICY_TEST_VAR", "from-the-caller"}});
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, "token=from-the-caller");
  ::unsetenv("ISB_SPEC_POLICY_TEST_VAR");
}

// A short text repeating a long variable is refused once it would pass its budget, never built: filling a spec may
// add kMaxExpandedSpecBytes to it, and each field is then judged by the schema.
TEST(ExpandVarsTest, AFieldGrowsOnlySoFar) {
  std::map<std::string, std::string> vars = {{"A", std::string(32768, 'a')}};
  std::string text;
  for (int i = 0; i < 8192; ++i) text += "${A}";  // 1 GiB if it were filled
  ExpectError(ExpandVars(text, vars), Code::kTooLarge, "expands to more than 1048576 bytes");
  auto fits = ExpandVars("${A}${A}", vars, 65536);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->size(), 65536u);
  ExpectError(ExpandVars("${A}${A}x", vars, 65536), Code::kTooLarge, "expands to more than 65536 bytes");
  // Over a whole spec the growth is shared: sixteen labels growing by 64 KiB (less their 8-byte texts) fit, in key
  // order l0, l1, l10 to l19, l2 to l5; the seventeenth passes it.
  nlohmann::json spec = {{"labels", nlohmann::json::object()}};
  for (int i = 0; i < 20; ++i) spec["labels"]["l" + std::to_string(i)] = "${A}${A}";
  ExpectError(ExpandSpecVars(spec, vars), Code::kTooLarge,
              "labels.l6: filling the spec's ${NAME}s adds more than 1048576 bytes");
  // Fields that fill nothing take none of it: thirty-two plain 32 KiB labels (1 MiB) pass.
  nlohmann::json plain = {{"labels", nlohmann::json::object()}};
  for (int i = 0; i < 32; ++i) plain["labels"]["l" + std::to_string(i)] = std::string(32768, 'p');
  EXPECT_TRUE(ExpandSpecVars(plain, vars).ok());
}

TEST(ExpandVarsTest, Syntax) {
  std::map<std::string, std::string> vars = {{"A", "1"}, {"_b2", "two"}, {"EMPTY", ""}, {"D", "${A}"}};
  for (const auto& [in, out] : std::vector<std::pair<std::string, std::string>>{
           {"", ""},
           {"plain", "plain"},
           {"${A}${_b2}", "1two"},
           {"x${EMPTY}y", "xy"},
           {"${D}", "${A}"},  // values are not expanded again
           {"$$", "$"},
           {"$${A}", "${A}"},
           {"$A $ {A} $", "$A $ {A} $"},
       }) {
    auto r = ExpandVars(in, vars);
    ASSERT_TRUE(r.ok()) << in << ": " << r.error().message;
    EXPECT_EQ(*r, out) << in;
  }
  for (const auto& [in, message] : std::vector<std::pair<std::string, std::string>>{
           {"${", "unterminated ${ at offset 0"},
           {"ab${A", "unterminated ${ at offset 2"},
           {"${}", "${} is not a variable name"},
           {"${1A}", "${1A} is not a variable name"},
           {"${A-B}", "${A-B} is not a variable name"},
           {"${A:-x}", "${A:-x} is not a variable name"},
           {"${B}", "${B} is not among the vars sent"},
       }) {
    auto r = ExpandVars(in, vars);
    ASSERT_FALSE(r.ok()) << in;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_EQ(r.error().message, message);
  }
}

// A sandbox_create input: ${NAME} is filled in the string fields that carry text for the sandbox, each refusal
// names its field, and nothing else (keys, numbers, egress) is touched.
TEST(ExpandSpecVarsTest, FillsTheSpecsStringFields) {
  const nlohmann::json in = {
      {"name", "web-${N}"},
      {"image", "/srv/${IMG}"},
      {"working_dir", "/home/${U}"},
      {"user", "${UID}:${UID}"},
      {"environment", {{"GREETING", "hi ${U}"}, {"${KEY}", "$${literal}"}}},
      {"labels", {{"team", "${TEAM}"}}},
      {"egress", {"${A}.example.com"}},
      {"cpus", 1},
      {"vars", {{"N", "1"}, {"IMG", "rootfs"}, {"U", "ann"}, {"UID", "1000"}, {"TEAM", "blue"}}}};
  auto out = ExpandSpecVars(in, in["vars"].get<std::map<std::string, std::string>>());
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, nlohmann::json({{"name", "web-1"},
                                  {"image", "/srv/rootfs"},
                                  {"working_dir", "/home/ann"},
                                  {"user", "1000:1000"},
                                  {"environment", {{"GREETING", "hi ann"}, {"${KEY}", "${literal}"}}},
                                  {"labels", {{"team", "blue"}}},
                                  {"egress", {"${A}.example.com"}},
                                  {"cpus", 1}}));
  for (const auto& [field, value, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"name", "${N}", "name: ${N} is not among the vars sent"},
           {"image", "/${IMG}", "image: ${IMG} is not among the vars sent"},
           {"working_dir", "/${W", "working_dir: unterminated ${ at offset 1"},
           {"user", "${1}", "user: ${1} is not a variable name"}}) {
    ExpectError(ExpandSpecVars({{field, value}}, {}), Code::kInvalidArgument, message);
  }
  ExpectError(ExpandSpecVars({{"environment", {{"A", "x"}, {"B", "${B}"}}}}, {{"A", "a"}}), Code::kInvalidArgument,
              "environment.B: ${B} is not among the vars sent");
  ExpectError(ExpandSpecVars({{"labels", {{"team", "${T}"}}}}, {}), Code::kInvalidArgument,
              "labels.team: ${T} is not among the vars sent");
}

// Set in the daemon's environment or not, a name the caller did not send is refused, never filled.
TEST(ExpandSpecVarsTest, NeverFromTheDaemonsEnvironment) {
  ASSERT_NE(::getenv("PATH"), nullptr);
  ASSERT_EQ(::setenv("HOME", "/root", 0), 0);
  ExpectError(ExpandSpecVars({{"environment", {{"H", "${HOME}"}}}}, {}), Code::kInvalidArgument,
              "environment.H: ${HOME} is not among the vars sent");
  ExpectError(ExpandSpecVars({{"working_dir", "${PATH}"}}, {{"HOME", "/h"}}), Code::kInvalidArgument,
              "working_dir: ${PATH} is not among the vars sent");
}

}  // namespace
}  // namespace isb::api
