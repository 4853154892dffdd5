// The sandbox spec: its one validator, the caller's parser, the stored codec, and the defaults stated once.
#include "spec/sandbox_spec.h"

#include <gtest/gtest.h>

#include "spec/spec_json.h"

namespace isb::spec {
namespace {

using nlohmann::json;

std::string Refusal(const SandboxSpec& s) {
  Status st = Validate(s);
  if (st.ok()) return "accepted";
  EXPECT_EQ(st.error().code, Code::kInvalidArgument);
  return st.error().message;
}

std::string CallerRefusal(const json& in) {
  auto parsed = FromCallerJson(in);
  if (parsed.ok()) return "accepted";
  EXPECT_EQ(parsed.error().code, Code::kInvalidArgument);
  return parsed.error().message;
}

TEST(SandboxSpecTest, TheDefaultSpecIsValidAndHoldsTheStatedDefaults) {
  SandboxSpec s;
  EXPECT_EQ(Refusal(s), "accepted");
  EXPECT_EQ(s.cpus, 2);
  EXPECT_EQ(s.mem_limit, 512u << 20);
  EXPECT_EQ(s.disk, 2ull << 30);
  EXPECT_EQ(s.pids, 64u);
  EXPECT_EQ(s.working_dir, "/");
  EXPECT_EQ(s.user, "0:0");
  EXPECT_EQ(s.egress, "none");
  EXPECT_EQ(s.expires.count(), 86400);
  EXPECT_EQ(s.idle_timeout.count(), 7200);
  // A caller's empty spec and a stored row with no fields read as the same defaults.
  auto parsed = FromCallerJson(json::object());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(ToJson(*parsed), ToJson(s));
  EXPECT_EQ(ToJson(FromStoredJson("{}")), ToJson(s));
  EXPECT_EQ(ToJson(FromStoredJson("not json")), ToJson(s));
}

TEST(SandboxSpecTest, ANameIsOneHostNameLabelNotStartingWithTheIdPrefix) {
  for (const char* good : {"a", "web-1", "A9", "x23456789012345678901234567890123456789012345678901234567890123"}) {
    SandboxSpec s;
    s.name = good;
    EXPECT_EQ(Refusal(s), "accepted") << good;
  }
  for (const char* bad :
       {"-a", "a-", "a_b", "a.b", "a b", "x234567890123456789012345678901234567890123456789012345678901234"}) {
    SandboxSpec s;
    s.name = bad;
    EXPECT_EQ(Refusal(s), "name: use 1-63 letters, digits and inner hyphens, got '" + std::string(bad) + "'") << bad;
  }
  SandboxSpec s;
  s.name = "sb-0123";
  EXPECT_EQ(Refusal(s), "name: must not start with \"sb-\" (reserved for ids)");
}

TEST(SandboxSpecTest, EachRuleNamesItsField) {
  SandboxSpec s;
  s.labels = {{"isb.other", "me"}};  // isb.org and isb.owner are set by the tools; any other isb.* is refused
  EXPECT_EQ(Refusal(s), "labels: 'isb.other' is reserved (isb.* labels are set by isb)");
  s = {};
  s.labels = {{kOrgLabel, "acme"}, {kOwnerLabel, "rest:user:a"}};
  EXPECT_EQ(Refusal(s), "accepted");
  s = {};
  s.ports = {{80, 8080, "::1"}, {80, 8081, "localhost"}};
  EXPECT_EQ(Refusal(s), "ports[1].host_address: 'localhost' is not an IP address");
  s = {};
  s.ports = {{80, 8080}, {81, 8080}};
  EXPECT_EQ(Refusal(s), "ports[1]: 127.0.0.2:8080 is published twice");
  s = {};
  s.ports = {{0, 8080}};
  EXPECT_EQ(Refusal(s), "ports[0]: ports are 1 to 65535");
  s = {};
  s.mounts = {{"/srv", "/", true}};
  EXPECT_EQ(Refusal(s), "mounts[0].target: must not be /");
  s.mounts = {{"srv", "/x", true}};
  EXPECT_EQ(Refusal(s), "mounts[0].source: must be an absolute path");
  s.mounts = {{"/srv", "/proc/1", true}};
  EXPECT_EQ(Refusal(s), "mounts[0].target: paths under /proc are refused");
  // A path that is not in its normal form cannot pass for another.
  for (const char* odd : {"//proc/self", "/x/../dev", "//", "/."}) {
    s.mounts = {{"/srv", odd, true}};
    EXPECT_EQ(Refusal(s).rfind("mounts[0].target: ", 0), 0u) << odd;
    EXPECT_NE(Refusal(s), "accepted") << odd;
  }
  s.mounts = {};
  s.working_dir = "/srv/";
  EXPECT_EQ(Refusal(s), "working_dir: must be in its normal form, '/srv'");
  s = {};
  s.ports = {{1, 8080, "fd00::1"}, {2, 8080, "fd00:0::1"}};
  EXPECT_EQ(Refusal(s), "ports[1]: fd00:0::1:8080 is published twice");
  s = {};
  s.expires = std::chrono::seconds(31 * 86400);
  EXPECT_EQ(Refusal(s), "expires: must be between 1s and 30d");
  s = {};
  s.idle_timeout = std::chrono::seconds(0);
  EXPECT_EQ(Refusal(s), "idle_timeout: must be at least 1s");
  for (const char* image : {"/srv/x:/etc", "/srv/a,upperdir=/tmp", "/srv/a\\b"}) {
    s = {};
    s.image = image;
    EXPECT_EQ(Refusal(s), "image: a path with ':', ',' or '\\' cannot be an overlay layer (overlayfs would split it)")
        << image;
  }
  s = {};
  s.image = "team/app:1 2";
  EXPECT_EQ(Refusal(s), "image: an image reference has no white space (\"python:3.12\", \"host:5000/team/app:tag\")");
  s.image = std::string(513, 'a');
  EXPECT_EQ(Refusal(s), "image: a reference is at most 512 characters");
  s.image = "team/app:1.2";  // a reference: the daemon resolves it among the org's images
  EXPECT_TRUE(Validate(s).ok());
  s = {};
  s.user = "root";
  EXPECT_EQ(Refusal(s), "user: expected UID[:GID] with numeric ids below 65536, e.g. \"1000:1000\", got 'root'");
  s.user = "70000";
  EXPECT_EQ(Refusal(s), "user: expected UID[:GID] with numeric ids below 65536, e.g. \"1000:1000\", got '70000'");
  s = {};
  s.environment = {{"A=B", "x"}};
  EXPECT_EQ(Refusal(s), "environment: invalid variable name 'A=B'");
  s = {};
  s.working_dir = "tmp";
  EXPECT_EQ(Refusal(s), "working_dir: must be an absolute path, got 'tmp'");
  s = {};
  s.cpus = 0;
  EXPECT_EQ(Refusal(s), "cpus: must be between 0.001 and 1024");
}

TEST(SandboxSpecTest, SizesHaveOneRangeAndOneWording) {
  for (uint64_t disk : {kMinDisk - 1, kMaxDisk + 1}) {
    SandboxSpec s;
    s.disk = disk;
    EXPECT_EQ(Refusal(s),
              disk < kMinDisk ? "disk: must be at least 16 MiB (16777216 bytes)" : "disk: must be at most 1 TiB");
  }
  SandboxSpec s;
  s.mem_limit = kMinMemLimit - 1;
  EXPECT_EQ(Refusal(s), "mem_limit: must be at least 4 MiB (4194304 bytes)");
  s.mem_limit = kMinMemLimit;
  EXPECT_EQ(Refusal(s), "accepted");
  // The caller's parser refuses with the validator's words, whether the size came as bytes or as text.
  EXPECT_EQ(CallerRefusal({{"mem_limit", "1M"}}), "mem_limit: must be at least 4 MiB (4194304 bytes)");
  EXPECT_EQ(CallerRefusal({{"mem_limit", -1.0}}), "mem_limit: must be at least 4 MiB (4194304 bytes)");
  EXPECT_EQ(CallerRefusal({{"disk", "2T"}}), "disk: must be at most 1 TiB");
  EXPECT_EQ(CallerRefusal({{"disk", "lots"}}).rfind("disk: ", 0), 0u);
  EXPECT_EQ(SizeText(16ull << 20), "16 MiB");
  EXPECT_EQ(SizeText(1536), "1536 bytes");
  EXPECT_EQ(SizeText(1ull << 40), "1 TiB");
  EXPECT_EQ(SizeText(3 << 10), "3 KiB");
}

TEST(SandboxSpecTest, TheCallersParserNormalizesPathsAndReadsSizes) {
  auto s = FromCallerJson({{"name", "web"},
                           {"mem_limit", "64M"},
                           {"disk", 33554432},
                           {"working_dir", "/srv/./app/../data//"},
                           {"mounts", {{{"source", "/srv"}, {"target", "/mnt/x/../y"}}}},
                           {"ports", {{{"sandbox_port", 80}, {"host_port", 20080}}}},
                           {"idmap", "none"},
                           {"expires", 60}});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->mem_limit, 64u << 20);
  EXPECT_EQ(s->disk, 32u << 20);
  EXPECT_EQ(s->working_dir, "/srv/data");
  ASSERT_EQ(s->mounts.size(), 1u);
  EXPECT_EQ(s->mounts[0], (SpecMount{"/srv", "/mnt/y", true}));
  ASSERT_EQ(s->ports.size(), 1u);
  EXPECT_EQ(s->ports[0], (SpecPort{80, 20080, "127.0.0.2"}));
  EXPECT_TRUE(s->idmap.empty());
  EXPECT_EQ(s->expires.count(), 60);
  EXPECT_EQ(CallerRefusal({{"working_dir", "/dev/../dev/shm"}}), "working_dir: paths under /dev are refused");
  EXPECT_EQ(CallerRefusal({{"mounts", {{{"source", "/srv"}, {"target", "/a/.."}}}}}),
            "mounts[0].target: must not be /");
  EXPECT_EQ(CallerRefusal({{"idmap", "host"}}), "idmap: expected \"auto\", \"none\" or a list of mappings");
  EXPECT_EQ(CallerRefusal({{"name", "a_b"}}), "name: use 1-63 letters, digits and inner hyphens, got 'a_b'");
  // A caller's isb.* label is refused as the API always refused it (403), isb.org and isb.owner too.
  for (const char* key : {"isb.team", "isb.org", "isb.owner"}) {
    auto labelled = FromCallerJson({{"labels", {{key, "x"}}}});
    ASSERT_FALSE(labelled.ok()) << key;
    EXPECT_EQ(labelled.error().code, Code::kForbidden);
    EXPECT_EQ(labelled.error().message, "label '" + std::string(key) + "': labels starting with isb. are reserved");
  }
}

TEST(SandboxSpecTest, PrivilegedAndIdmapAreStoredAndOldSpecsLoad) {
  SandboxSpec old = FromStoredJson(R"({"name":"n","cpus":1})");
  EXPECT_FALSE(old.privileged);
  EXPECT_TRUE(old.idmap.empty());
  SandboxSpec in;
  in.privileged = true;
  EXPECT_EQ(FromStoredJson(ToStoredJson(in)).privileged, true);
  in = {};
  in.idmap = {{engine::IdMapping::Kind::kGid, 27, 2000, 3}};
  EXPECT_EQ(FromStoredJson(ToStoredJson(in)).idmap, in.idmap);
  in.privileged = true;
  EXPECT_EQ(Refusal(in), "idmap: a privileged sandbox has no user namespace to map ids into (use one or the other)");
  in = {};
  in.idmap = {{engine::IdMapping::Kind::kUid, 1, 0, 0}};
  EXPECT_EQ(Refusal(in), "idmap[0].count: must be at least 1");
}

TEST(SandboxSpecTest, AStoredSpecRoundTripsAndOmitsWhatIsRareAndDefault) {
  SandboxSpec in;
  in.name = "n";
  in.cpus = 0.5;
  in.disk = 64 << 20;
  in.labels = {{"a", "b"}};
  in.environment = {{"K", "v"}};
  in.egress = json::array({"example.com"});
  in.image_idmapped = true;
  SandboxSpec r = FromStoredJson(ToStoredJson(in));
  EXPECT_TRUE(r.image_idmapped);
  EXPECT_EQ(ToJson(r), ToJson(in));
  json stored = json::parse(ToStoredJson(SandboxSpec{}));
  for (const char* rare : {"mounts", "ports", "privileged", "idmap", "image_idmapped"})
    EXPECT_FALSE(stored.contains(rare)) << rare;
  // paths_checked is never stored: the daemon judges a reloaded spec's paths again.
  in.paths_checked = true;
  EXPECT_FALSE(FromStoredJson(ToStoredJson(in)).paths_checked);
  // A row holding a field of another type reads that field as its default, never throwing.
  for (const char* odd : {R"({"name":null})", R"({"cpus":"2"})", R"({"privileged":1})", R"({"expires":"1d"})",
                          R"({"mounts":[1]})", R"({"ports":[{"host_port":"80"}]})", R"({"labels":[1]})"})
    EXPECT_EQ(ToJson(FromStoredJson(odd)), ToJson(SandboxSpec{})) << odd;
  // A spec stored before disk limits reads as the default size.
  EXPECT_EQ(FromStoredJson(R"({"name":"old","mem_limit":1048576})").disk, kDefaultDisk);
}

// Secrets given as files: a name alone or {name, target, mode}, each a file directly in /run/secrets, stored and
// answered with their names and places (never a value).
TEST(SandboxSpecTest, SecretFilesAreNamedFilesInRunSecrets) {
  auto parsed = FromCallerJson(json::parse(
      R"({"secrets": ["db-pass", {"name": "tls.key", "target": "/run/secrets/./server.key", "mode": "0440"}]})"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->secrets, (std::vector<SpecSecretFile>{{"db-pass", "/run/secrets/db-pass", 0400},
                                                          {"tls.key", "/run/secrets/server.key", 0440}}));
  EXPECT_EQ(ToJson(*parsed)["secrets"], json::parse(R"([{"name": "db-pass", "target": "/run/secrets/db-pass",
      "mode": "0400"}, {"name": "tls.key", "target": "/run/secrets/server.key", "mode": "0440"}])"));
  EXPECT_EQ(FromStoredJson(ToStoredJson(*parsed)).secrets, parsed->secrets);
  EXPECT_FALSE(ToJson(SandboxSpec{}).contains("secrets"));

  EXPECT_EQ(CallerRefusal(json::parse(R"({"secrets": [{"name": "k", "target": "/etc/k"}]})")),
            "secrets[0].target: must be a file directly in /run/secrets, got '/etc/k'");
  EXPECT_EQ(CallerRefusal(json::parse(R"({"secrets": [{"name": "k", "target": "/run/secrets/a/b"}]})")),
            "secrets[0].target: must be a file directly in /run/secrets, got '/run/secrets/a/b'");
  EXPECT_EQ(CallerRefusal(json::parse(R"({"secrets": [{"name": "k", "target": "/run/secrets"}]})")),
            "secrets[0].target: must be a file directly in /run/secrets, got '/run/secrets'");
  EXPECT_EQ(CallerRefusal(json::parse(R"({"secrets": ["a", {"name": "b", "target": "/run/secrets/a"}]})")),
            "secrets[1].target: '/run/secrets/a' is given twice");
  EXPECT_EQ(CallerRefusal(json::parse(R"({"secrets": ["bad name"]})")),
            "secrets[0].name: a name is 1 to 128 letters, digits, '_', '-' or '.', got 'bad name'");
  EXPECT_EQ(CallerRefusal(json::parse(R"({"secrets": [{"name": "k", "mode": "0999"}]})")),
            "secrets[0].mode: an octal mode such as \"0400\", got '0999'");
  EXPECT_EQ(CallerRefusal(json::parse(R"({"secrets": [{"name": "k", "mode": "7777"}]})")),
            "secrets[0].mode: must be an octal mode of at most 0777");
}

}  // namespace
}  // namespace isb::spec
