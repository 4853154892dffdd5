// The DNS responder on loopback, asked by the real `dig`.
#include "net/dns_server.h"

#include <netinet/in.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <gtest/gtest.h>

namespace isb::net {
namespace {

std::string Dig(uint16_t port, const std::string& args) {
  std::string cmd = "dig @127.0.0.1 -p " + std::to_string(port) + " +time=2 +tries=1 " + args + " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

class DnsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DnsHooks h;
    h.sandbox = [](uint32_t addr) -> std::optional<std::string> {
      if (addr == INADDR_LOOPBACK) return "sb1";
      return std::nullopt;
    };
    h.listed = [](const std::string& sandbox, std::string_view name) {
      return sandbox == "sb1" && (name == "api.example.com" || name.ends_with(".cdn.example.com"));
    };
    Result<std::unique_ptr<DnsServer>> s = DnsServer::Start("0.0.0.0", 0, h);
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(*s);
  }
  std::unique_ptr<DnsServer> server_;
};

TEST_F(DnsServerTest, ListedNamesResolveToTheAddressAskedAndNothingElseDoes) {
  // The answer is the address the query arrived at: for a sandbox, the host end of its veth, where the proxy is.
  EXPECT_EQ(Dig(server_->port(), "+short api.example.com A"), "127.0.0.1\n");
  EXPECT_EQ(Dig(server_->port(), "+short x.cdn.example.com A"), "127.0.0.1\n");
  EXPECT_EQ(Dig(server_->port(), "+short API.Example.COM A"), "127.0.0.1\n");
  std::string aaaa = Dig(server_->port(), "api.example.com AAAA");
  EXPECT_NE(aaaa.find("status: NOERROR"), std::string::npos) << aaaa;
  EXPECT_NE(aaaa.find("ANSWER: 0"), std::string::npos) << aaaa;
  for (const char* name : {"cdn.example.com", "example.com", "evil.com", "api.example.com.evil.com"}) {
    std::string out = Dig(server_->port(), std::string(name) + " A");
    EXPECT_NE(out.find("status: NXDOMAIN"), std::string::npos) << name << ": " << out;
  }
  EXPECT_EQ(server_->answered(), 8u);
}

}  // namespace
}  // namespace isb::net
