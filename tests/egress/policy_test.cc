// The egress field and its matcher: every form, every refusal with its message, the modes, and a large list.
#include "egress/policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

namespace isb::egress {
namespace {

using nlohmann::json;

Result<const PublicSuffixList*> Suffixes() {
  static const PublicSuffixList kList =
      *PublicSuffixList::Parse("com\nuk\nco.uk\nio\ngithub.io\n*.ck\n!www.ck\ncn\nxn--55qx5d.cn\n");
  return &kList;
}

EgressSpec Parse(const json& j) {
  auto spec = ParseEgressSpec(j, Suffixes());
  EXPECT_TRUE(spec.ok()) << j.dump() << ": " << spec.error().message;
  return spec.ok() ? *spec : EgressSpec{};
}

std::string Refusal(const json& j) {
  auto spec = ParseEgressSpec(j, Suffixes());
  if (spec.ok()) return "accepted: " + j.dump();
  EXPECT_EQ(spec.error().code, Code::kInvalidArgument) << j.dump();
  return spec.error().message;
}

HostRule Rule(const char* name, bool wildcard, std::optional<uint16_t> port) { return {name, wildcard, port}; }

TEST(EgressSpecTest, NoneInEveryForm) {
  for (const json& j : {json(nullptr), json("none"), json::array(), json::parse(R"(["none"])"), json::object(),
                        json::parse(R"({"allow": []})"), json::parse(R"({"allow": [], "judge": []})")}) {
    EgressSpec spec = Parse(j);
    EXPECT_EQ(spec.mode, EgressMode::kNone) << j.dump();
    EXPECT_TRUE(spec.allow.empty());
  }
  EXPECT_EQ(Parse("open").mode, EgressMode::kOpen);
}

TEST(EgressSpecTest, ListOfHosts) {
  EgressSpec spec = Parse(json::parse(
      R"(["GitHub.com", "api.github.com:8443", "*.example.com", "pypi.org.", "xn--bcher-kva.example:80",
          "github.com:443", "*.foo.github.io"])"));
  EXPECT_EQ(spec.mode, EgressMode::kAllowlist);
  EXPECT_EQ(spec.allow,
            (std::vector<HostRule>{Rule("github.com", false, 443), Rule("api.github.com", false, 8443),
                                   Rule("example.com", true, 443), Rule("pypi.org", false, 443),
                                   Rule("xn--bcher-kva.example", false, 80), Rule("foo.github.io", true, 443)}));
  EXPECT_EQ(EgressSpecToJson(spec),
            json::parse(R"(["github.com:443", "api.github.com:8443", "*.example.com:443", "pypi.org:443",
                            "xn--bcher-kva.example:80", "*.foo.github.io:443"])"));
}

TEST(EgressSpecTest, ObjectForms) {
  EgressSpec a = Parse(json::parse(
      R"({"allow": ["api.openai.com"], "judge": ["*.docs.example.com"],
          "secrets": ["OPENAI_KEY", {"name": "gh-token.v2", "hosts": ["api.github.com"]}]})"));
  EXPECT_EQ(a.mode, EgressMode::kAllowlist);
  EXPECT_EQ(a.allow, std::vector<HostRule>{Rule("api.openai.com", false, 443)});
  EXPECT_EQ(a.judge, std::vector<HostRule>{Rule("docs.example.com", true, 443)});
  EXPECT_EQ(a.secrets,
            (std::vector<SecretRule>{{"OPENAI_KEY", {}}, {"gh-token.v2", {Rule("api.github.com", false, 443)}}}));

  EXPECT_EQ(a.on_leak, OnLeak::kPass);
  // Secrets alone are a list: the hosts the daemon resolves them to.
  EgressSpec only = Parse(json::parse(R"({"secrets": ["K"]})"));
  EXPECT_EQ(only.mode, EgressMode::kAllowlist);
  EXPECT_TRUE(only.allow.empty());
  EXPECT_EQ(a.secrets[1].Variable(), "gh_token_v2");  // '.' and '-' cannot be in a variable's name
  EgressSpec with_env = Parse(json::parse(
      R"({"allow": ["x.example"], "on_leak": "stop", "secrets": [{"name": "k.1", "env": "OPENAI_API_KEY"}]})"));
  EXPECT_EQ(with_env.on_leak, OnLeak::kStop);
  EXPECT_EQ(with_env.secrets.at(0).Variable(), "OPENAI_API_KEY");
  EXPECT_EQ(EgressSpecToJson(with_env), json::parse(R"({"allow": ["x.example:443"], "on_leak": "stop",
                            "secrets": [{"name": "k.1", "env": "OPENAI_API_KEY"}]})"));
  EXPECT_EQ(Parse(EgressSpecToJson(with_env)), with_env);

  EgressSpec b = Parse(json::parse(R"({"block": ["evil.example", "*.ads.example:443"], "judge": ["new.example"]})"));
  EXPECT_EQ(b.mode, EgressMode::kBlocklist);
  EXPECT_EQ(b.block,
            (std::vector<HostRule>{Rule("evil.example", false, std::nullopt), Rule("ads.example", true, 443)}));
  EXPECT_EQ(b.judge, std::vector<HostRule>{Rule("new.example", false, 443)});

  EgressSpec c = Parse(json::parse(R"({"judge": ["maybe.example:8080"]})"));
  EXPECT_EQ(c.mode, EgressMode::kAllowlist);
  EXPECT_TRUE(c.allow.empty());
  EXPECT_EQ(Parse(json::parse(R"({"block": []})")).mode, EgressMode::kBlocklist);

  for (const EgressSpec& spec : {a, b, c, Parse("open"), Parse("none"), Parse(json::parse(R"({"block": []})"))}) {
    EXPECT_EQ(Parse(EgressSpecToJson(spec)), spec) << EgressSpecToJson(spec).dump();
  }
}

TEST(EgressSpecTest, RefusesEachBadEntryNamingItAndTheReason) {
  struct Case {
    json spec;
    const char* message;
  };
  const Case cases[] = {
      {json::parse(R"(["1.2.3.4"])"), "egress entry '1.2.3.4': IP addresses are refused; list the host's name"},
      {json::parse(R"(["0x7f.1:80"])"), "egress entry '0x7f.1:80': IP addresses are refused; list the host's name"},
      {json::parse(R"(["[::1]:443"])"), "egress entry '[::1]:443': IP addresses are refused; list the host's name"},
      {json::parse(R"(["2001:db8::1"])"), "egress entry '2001:db8::1': IP addresses are refused; list the host's name"},
      {json::parse(R"(["[example.com]"])"),
       "egress entry '[example.com]': IP addresses are refused; list the host's name"},
      {json::parse(R"(["*.com"])"), "egress entry '*.com': a wildcard over a whole top-level domain is refused"},
      {json::parse(R"(["*.localhost"])"),
       "egress entry '*.localhost': a wildcard over a whole top-level domain is refused"},
      {json::parse(R"(["*.co.uk"])"),
       "egress entry '*.co.uk': co.uk is a public suffix, so the wildcard would cover names of unrelated owners"},
      {json::parse(R"(["*.GitHub.io."])"),
       "egress entry '*.GitHub.io.': github.io is a public suffix, so the wildcard would cover names of unrelated "
       "owners"},
      {json::parse(R"(["*.anything.ck"])"),
       "egress entry '*.anything.ck': anything.ck is a public suffix, so the wildcard would cover names of unrelated "
       "owners"},
      {json::parse(R"(["*.xn--55qx5d.cn"])"),
       "egress entry '*.xn--55qx5d.cn': xn--55qx5d.cn is a public suffix, so the wildcard would cover names of "
       "unrelated owners"},
      {json::parse(R"(["*"])"), "egress entry '*': a wildcard must be the whole first label, as in *.example.com"},
      {json::parse(R"(["a.*.com"])"),
       "egress entry 'a.*.com': a wildcard must be the whole first label, as in *.example.com"},
      {json::parse(R"(["*example.com"])"),
       "egress entry '*example.com': a wildcard must be the whole first label, as in *.example.com"},
      {json::parse(R"(["*.*.example.com"])"),
       "egress entry '*.*.example.com': a wildcard must be the whole first label, as in *.example.com"},
      {json::parse(R"(["*."])"), "egress entry '*.': the name is empty"},
      {json::parse(R"(["exa mple.com"])"), "egress entry 'exa mple.com': the name contains ' '"},
      {json::parse(R"(["bücher.example"])"),
       "egress entry 'b\\xc3\\xbccher.example': the name is not ASCII; write an international name in its punycode "
       "(xn--) form"},
      {json::parse(R"(["example.com:0"])"), "egress entry 'example.com:0': the port must be a number from 1 to 65535"},
      {json::parse(R"(["example.com:65536"])"),
       "egress entry 'example.com:65536': the port must be a number from 1 to 65535"},
      {json::parse(R"(["example.com:"])"), "egress entry 'example.com:': the port must be a number from 1 to 65535"},
      {json::parse(R"(["example.com:https"])"),
       "egress entry 'example.com:https': the port must be a number from 1 to 65535"},
      {json::parse(R"(["[example.com"])"), "egress entry '[example.com': unbalanced brackets"},
      {json::parse(R"([""])"), "egress entry '': the name is empty"},
      {json::parse(R"([42])"), "egress entry '42': expected a string \"host[:port]\""},
      {json::parse(R"(["none", "example.com"])"),
       "egress entry 'none': \"none\" combines with nothing; give egress: \"none\" alone"},
      {json::parse(R"(["example.com", "none"])"),
       "egress entry 'none': \"none\" combines with nothing; give egress: \"none\" alone"},
      {json::parse(R"({"allow": ["none"]})"),
       "egress entry 'none': \"none\" combines with nothing; give egress: \"none\" alone"},
      {json::parse(R"(["open"])"), "egress entry 'open': \"open\" is a mode, not a host; give egress: \"open\" alone"},
      {json::parse(R"({"block": ["10.0.0.1"]})"),
       "egress entry '10.0.0.1': IP addresses are refused; list the host's name"},
      {json::parse(R"({"judge": ["*.io"]})"),
       "egress entry '*.io': a wildcard over a whole top-level domain is refused"},
      {json::parse(R"({"secrets": [{"name": "K", "hosts": ["*.co.uk"]}], "allow": ["a.example"]})"),
       "egress entry '*.co.uk': co.uk is a public suffix, so the wildcard would cover names of unrelated owners"},
  };
  for (const Case& c : cases) EXPECT_EQ(Refusal(c.spec), c.message) << c.spec.dump();
}

TEST(EgressSpecTest, RefusesBadShapes) {
  const std::string forms =
      "expected \"none\", \"open\", a list of \"host[:port]\", or an object with allow, block, judge and secrets";
  struct Case {
    json spec;
    std::string message;
  };
  const Case cases[] = {
      {json("example.com"), "egress: " + forms + "; got \"example.com\""},
      {json("None"), "egress: " + forms + "; got \"None\""},
      {json(true), "egress: " + forms + "; got true"},
      {json(7), "egress: " + forms + "; got 7"},
      {json::parse(R"({"allow": ["a.example"], "block": ["b.example"]})"),
       "egress: 'allow' and 'block' exclude each other; give one"},
      {json::parse(R"({"block": [], "allow": []})"), "egress: 'allow' and 'block' exclude each other; give one"},
      {json::parse(R"({"allow": "a.example"})"), "egress: 'allow' must be a list of \"host[:port]\""},
      {json::parse(R"({"judge": {}})"), "egress: 'judge' must be a list of \"host[:port]\""},
      {json::parse(R"({"allowed": []})"), "egress: unknown key 'allowed' (" + forms + ")"},
      {json::parse(R"({"secrets": "K", "allow": ["a.example"]})"), "egress: 'secrets' must be a list"},
      {json::parse(R"({"allow": ["a.example"], "secrets": ["bad name"]})"),
       "egress: secret 'bad name': a name is 1 to 128 letters, digits, '_', '-' or '.'"},
      {json::parse(R"({"allow": ["a.example"], "secrets": [""]})"),
       "egress: secret '': a name is 1 to 128 letters, digits, '_', '-' or '.'"},
      {json::parse(R"({"allow": ["a.example"], "secrets": [{"name": "K", "value": "x"}]})"),
       "egress: secret {\"name\":\"K\",\"value\":\"x\"}: unknown or mistyped key 'value'"},
      {json::parse(R"({"allow": ["a.example"], "secrets": [{"name": 5}]})"),
       "egress: secret {\"name\":5}: unknown or mistyped key 'name'"},
      {json::parse(R"({"allow": ["a.example"], "secrets": [7]})"),
       "egress: secret 7: expected \"NAME\" or {\"name\": NAME, \"hosts\": [...]}"},
      {json::parse(R"({"allow": ["a.example"], "secrets": [{"name": "K", "env": "1X"}]})"),
       "egress: secret 'K': '1X' cannot name an environment variable (letters, digits and '_', not starting with a "
       "digit)"},
      {json::parse(R"({"allow": ["a.example"], "secrets": [{"name": "K", "env": "A=B"}]})"),
       "egress: secret 'K': 'A=B' cannot name an environment variable (letters, digits and '_', not starting with a "
       "digit)"},
      {json::parse(R"({"allow": ["a.example"], "secrets": ["9key"]})"),
       "egress: secret '9key': '9key' cannot name an environment variable (letters, digits and '_', not starting "
       "with a digit); give one in \"env\""},
      {json::parse(R"({"allow": ["a.example"], "secrets": ["K", {"name": "K", "env": "OTHER"}]})"),
       "egress: secret 'K' is listed twice"},
      {json::parse(R"({"allow": ["a.example"], "secrets": ["a.b", "a_b"]})"),
       "egress: two secrets are given in the variable 'a_b'"},
      {json::parse(R"({"allow": ["a.example"], "secrets": ["K"], "on_leak": "drop"})"),
       "egress: 'on_leak' is \"pass\", \"block\" or \"stop\"; got \"drop\""},
      {json::parse(R"({"allow": ["a.example"], "on_leak": "block"})"),
       "egress: 'on_leak' is for secrets; none are given"},
  };
  for (const Case& c : cases) EXPECT_EQ(Refusal(c.spec), c.message) << c.spec.dump();
}

TEST(EgressSpecTest, EntryLimit) {
  json big = json::array();
  for (size_t i = 0; i < kMaxEgressEntries; ++i) big.push_back("h" + std::to_string(i) + ".example");
  EXPECT_EQ(Parse(big).allow.size(), kMaxEgressEntries);
  big.push_back("one-more.example");
  EXPECT_EQ(Refusal(big), "egress: more than 16384 entries; isb supports at most that many");
  json split = {{"allow", json::array()}, {"judge", json::array()}};
  for (size_t i = 0; i <= kMaxEgressEntries / 2; ++i) {
    split["allow"].push_back("a" + std::to_string(i) + ".example");
    split["judge"].push_back("j" + std::to_string(i) + ".example");
  }
  EXPECT_EQ(Refusal(split), "egress: more than 16384 entries; isb supports at most that many");
}

TEST(EgressSpecTest, WildcardWithoutTheListFailsClosed) {
  auto load = PublicSuffixList::Load("/nonexistent/psl.dat");
  ASSERT_FALSE(load.ok());
  Result<const PublicSuffixList*> missing = load.error();
  auto exact = ParseEgressSpec(json::parse(R"(["example.com"])"), missing);
  ASSERT_TRUE(exact.ok()) << exact.error().message;  // exact names need no list
  auto wild = ParseEgressSpec(json::parse(R"(["a.example", "*.example.com"])"), missing);
  ASSERT_FALSE(wild.ok());
  EXPECT_EQ(wild.error().code, Code::kUnavailable);
  EXPECT_EQ(wild.error().message,
            "egress entry '*.example.com': cannot check the wildcard: cannot read the public suffix list "
            "/nonexistent/psl.dat (open /nonexistent/psl.dat: No such file or directory); install the Debian package "
            "publicsuffix");
  // The system's list, as isb serve uses it.
  auto system = ParseEgressSpec(json::parse(R"(["*.example.com", "*.bbc.co.uk"])"));
  ASSERT_TRUE(system.ok()) << system.error().message;
  EXPECT_EQ(ParseEgressSpec(json::parse(R"(["*.s3.amazonaws.com"])")).error().message,
            "egress entry '*.s3.amazonaws.com': s3.amazonaws.com is a public suffix, so the wildcard would cover "
            "names of unrelated owners");
}

Decision Check(const EgressPolicy& p, const char* host, uint16_t port) { return p.Check(host, port); }

TEST(EgressPolicyTest, AllowlistMatchesNamesPortsAndWildcards) {
  EgressPolicy p(Parse(json::parse(
      R"({"allow": ["github.com", "*.githubusercontent.com", "ssh.example:22", "*.corp.example:8443"],
          "judge": ["*.wiki.example", "github.com:80"]})")));
  struct Case {
    const char* host;
    uint16_t port;
    Verdict verdict;
    const char* reason;
  };
  const Case cases[] = {
      {"github.com", 443, Verdict::kAllow, "allowed by github.com:443"},
      {"GitHub.COM.", 443, Verdict::kAllow, "allowed by github.com:443"},
      {"github.com", 8443, Verdict::kDeny, "github.com:8443 is not in the egress list"},
      {"github.com", 80, Verdict::kAskJudge, "github.com:80 is for the judge to decide (github.com:80)"},
      {"api.github.com", 443, Verdict::kDeny, "api.github.com:443 is not in the egress list"},
      {"raw.githubusercontent.com", 443, Verdict::kAllow, "allowed by *.githubusercontent.com:443"},
      {"a.b.githubusercontent.com", 443, Verdict::kAllow, "allowed by *.githubusercontent.com:443"},
      {"githubusercontent.com", 443, Verdict::kDeny, "githubusercontent.com:443 is not in the egress list"},
      {"evilgithubusercontent.com", 443, Verdict::kDeny, "evilgithubusercontent.com:443 is not in the egress list"},
      {"githubusercontent.com.evil.example", 443, Verdict::kDeny,
       "githubusercontent.com.evil.example:443 is not in the egress list"},
      {"ssh.example", 22, Verdict::kAllow, "allowed by ssh.example:22"},
      {"ssh.example", 443, Verdict::kDeny, "ssh.example:443 is not in the egress list"},
      {"x.corp.example", 8443, Verdict::kAllow, "allowed by *.corp.example:8443"},
      {"x.corp.example", 443, Verdict::kDeny, "x.corp.example:443 is not in the egress list"},
      {"en.wiki.example", 443, Verdict::kAskJudge,
       "en.wiki.example:443 is for the judge to decide (*.wiki.example:443)"},
      {"wiki.example", 443, Verdict::kDeny, "wiki.example:443 is not in the egress list"},
      {"140.82.112.3", 443, Verdict::kDeny,
       "'140.82.112.3' is an IP address; egress lists hold names, connect by name"},
      {"[::1]", 443, Verdict::kDeny, "'[::1]' is an IP address; egress lists hold names, connect by name"},
      {"github.com\r\nX: y", 443, Verdict::kDeny, "'github.com\\x0d\\x0aX: y' is not a host name: it contains '\\x0d'"},
      {"", 443, Verdict::kDeny, "'' is not a host name: it is empty"},
  };
  for (const Case& c : cases) {
    Decision d = Check(p, c.host, c.port);
    EXPECT_EQ(d.verdict, c.verdict) << c.host << ":" << c.port;
    EXPECT_EQ(d.reason, c.reason) << c.host << ":" << c.port;
  }
  EXPECT_EQ(p.ListedPorts(), (std::vector<uint16_t>{22, 80, 443, 8443}));
}

TEST(EgressPolicyTest, BlocklistAllowsAllButTheListedNames) {
  EgressPolicy p(Parse(json::parse(R"({"block": ["evil.example", "*.ads.example:443"], "judge": ["new.example"]})")));
  EXPECT_EQ(Check(p, "good.example", 443).verdict, Verdict::kAllow);
  EXPECT_EQ(Check(p, "good.example", 443).reason, "good.example:443 is not blocked");
  EXPECT_EQ(Check(p, "evil.example", 22).reason, "evil.example:22 is blocked by evil.example");
  EXPECT_EQ(Check(p, "evil.example", 443).verdict, Verdict::kDeny);
  EXPECT_EQ(Check(p, "sub.evil.example", 443).verdict, Verdict::kAllow);
  EXPECT_EQ(Check(p, "x.ads.example", 443).reason, "x.ads.example:443 is blocked by *.ads.example:443");
  EXPECT_EQ(Check(p, "x.ads.example", 80).verdict, Verdict::kAllow);
  EXPECT_EQ(Check(p, "new.example", 443).verdict, Verdict::kAskJudge);
  EXPECT_EQ(Check(p, "8.8.8.8", 443).verdict, Verdict::kDeny);
  EXPECT_TRUE(p.ListedPorts().empty());
}

TEST(EgressPolicyTest, NoneAndOpen) {
  EgressPolicy none(Parse("none"));
  EXPECT_EQ(Check(none, "github.com", 443).verdict, Verdict::kDeny);
  EXPECT_EQ(Check(none, "github.com", 443).reason, "egress is none: this sandbox has no network");
  EgressPolicy open(Parse("open"));
  EXPECT_EQ(Check(open, "anything.example", 25).verdict, Verdict::kAllow);
  EXPECT_EQ(Check(open, "anything.example", 25).reason, "egress is open");
}

TEST(EgressPolicyTest, ProtocolsWithoutANameUseTheSingleExactHostOnThePort) {
  EgressPolicy p(Parse(json::parse(
      R"({"allow": ["db.example:5432", "a.example:22", "b.example:22", "*.w.example:6379", "github.com"],
          "judge": ["j.example:7000"]})")));
  EXPECT_EQ(*p.SingleHostOnPort(5432), "db.example");
  EXPECT_EQ(p.NamesOnPort(22), (std::vector<HostRule>{Rule("a.example", false, 22), Rule("b.example", false, 22)}));
  struct Case {
    uint16_t port;
    const char* why;
  };
  const Case cases[] = {
      {22, "2 entries are listed on that port (a.example:22, b.example:22)"},
      {6379, "its one entry *.w.example:6379 is a wildcard"},
      {7000, "its one entry j.example:7000 is for the judge, who needs a name"},
      {25, "nothing is listed on that port"},
  };
  for (const Case& c : cases) {
    auto r = p.SingleHostOnPort(c.port);
    ASSERT_FALSE(r.ok()) << c.port;
    EXPECT_EQ(r.error().code, Code::kForbidden);
    EXPECT_EQ(r.error().message,
              "egress: a connection without a name on port " + std::to_string(c.port) + " is refused: " + c.why);
  }
  EXPECT_EQ(*p.SingleHostOnPort(443), "github.com");
  auto open = EgressPolicy(Parse("open")).SingleHostOnPort(443);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().message,
            "egress: a connection without a name on port 443 is refused: only an egress list can name its single host");
}

// The matcher is not linear in the entry count: checks against 16384 entries (half wildcards) cost about what they
// cost against 16, where a scan would be a thousand times slower.
TEST(EgressPolicyTest, LargeListsMatchWithoutScanning) {
  auto make = [](size_t n) {
    json list = json::array();
    for (size_t i = 0; i < n / 2; ++i) {
      list.push_back("host" + std::to_string(i) + ".example.com");
      list.push_back("*.zone" + std::to_string(i) + ".example.net:8443");
    }
    return list;
  };
  auto start = std::chrono::steady_clock::now();
  EgressPolicy big(Parse(make(kMaxEgressEntries)));
  auto parsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(big.spec().allow.size(), kMaxEgressEntries);
  EgressPolicy small(Parse(make(16)));

  std::vector<std::string> hosts;
  for (size_t i = 0; i < 30000; ++i) {
    size_t k = (i * 7919) % 8;  // present in both policies
    hosts.push_back("host" + std::to_string(k) + ".example.com");
    hosts.push_back("a.b.zone" + std::to_string(k) + ".example.net");
    hosts.push_back("nothost" + std::to_string(i) + ".example.com");
  }
  auto run = [&](const EgressPolicy& p, size_t* allowed) {
    auto best = std::chrono::steady_clock::duration::max();
    for (int round = 0; round < 3; ++round) {
      *allowed = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < hosts.size(); ++i) {
        *allowed += p.Check(hosts[i], i % 3 == 1 ? 8443 : 443).verdict == Verdict::kAllow;
      }
      best = std::min(best, std::chrono::steady_clock::now() - t0);
    }
    return best;
  };
  size_t allowed_big = 0, allowed_small = 0;
  auto t_big = run(big, &allowed_big);
  auto t_small = run(small, &allowed_small);
  EXPECT_EQ(allowed_big, 60000u);
  EXPECT_EQ(allowed_small, 60000u);
  EXPECT_LT(parsed, std::chrono::seconds(1));
  EXPECT_LT(t_big, t_small * 4);
  auto ms = [](auto d) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
  };
  std::printf("egress policy: %zu entries parsed in %lld us; %zu checks: %lld us against them, %lld us against 16\n",
              big.spec().allow.size(), ms(parsed), hosts.size(), ms(t_big), ms(t_small));
}

// The hosts a secret names are the ones intercepted, by their own name and port rules.
TEST(EgressPolicyTest, TheHostsOfSecretsAreIntercepted) {
  Result<EgressSpec> spec = ParseEgressSpec(nlohmann::json::parse(R"({
    "allow": ["api.example.com", "*.svc.example.com:8443", "plain.example.com"],
    "secrets": [{"name": "TOKEN", "hosts": ["api.example.com", "*.svc.example.com:8443"]}, "OTHER"]})"));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EgressPolicy policy(*spec);
  EXPECT_TRUE(policy.Intercepted("api.example.com", 443));
  EXPECT_TRUE(policy.Intercepted("API.Example.com", 443));
  EXPECT_FALSE(policy.Intercepted("api.example.com", 80));
  EXPECT_TRUE(policy.Intercepted("a.svc.example.com", 8443));
  EXPECT_FALSE(policy.Intercepted("svc.example.com", 8443));
  EXPECT_FALSE(policy.Intercepted("plain.example.com", 443));
  EXPECT_FALSE(policy.Intercepted("not a name", 443));
  EXPECT_FALSE(
      EgressPolicy(*ParseEgressSpec(nlohmann::json::array({"api.example.com"}))).Intercepted("api.example.com", 443));
}

}  // namespace
}  // namespace isb::egress
