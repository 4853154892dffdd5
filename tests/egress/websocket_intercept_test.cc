// WebSockets through interception end to end on loopback: a real client (python3's websockets) talks TLS to the
// proxy as a sandbox would, the proxy talks verified TLS to a real WebSocket origin (python3's websockets) whose CA
// the test made, and a filter swaps a placeholder for a value in the sandbox's messages and back in the origin's,
// with permessage-deflate and without.
#include <openssl/pem.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "base/file.h"
#include "egress/cert_minter.h"
#include "egress/classify.h"
#include "egress/proxy.h"
#include "egress/replacing_filter.h"
#include "egress/stop_proxy.h"
#include "net/loopback.h"

namespace isb::egress {
namespace {

const std::string kTestdata = ISB_EGRESS_TESTDATA;

// Swaps the placeholder for the value in what the sandbox sends, and the value back in what it receives.
class SwappingFilter : public MessageFilter {
 public:
  std::unique_ptr<BodyFilter> WebSocketMessage(const Exchange&, bool to_origin, bool) override {
    if (to_origin) return std::make_unique<ReplacingBody>("isb_placeholder_abc", "sk-real-value");
    return std::make_unique<ReplacingBody>("sk-real-value", "isb_placeholder_abc");
  }
};

std::string Pem(const TlsIdentity& identity, bool key) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (key) {
    PEM_write_bio_PrivateKey(bio.get(), identity.key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_bio_X509(bio.get(), identity.cert.get());
  }
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

class WebSocketInterceptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/isb-ws-intercept-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto origins_ca = SandboxCa::Create("test origins");
    ASSERT_TRUE(origins_ca.ok());
    ASSERT_TRUE(WriteFile(dir_ + "/origins-ca.pem", (*origins_ca)->pem()).ok());
    Result<TlsIdentity> leaf = (*origins_ca)->Mint("ws.test");
    ASSERT_TRUE(leaf.ok());
    ASSERT_TRUE(WriteFile(dir_ + "/origin.pem", Pem(*leaf, false)).ok());
    ASSERT_TRUE(WriteFile(dir_ + "/origin.key", Pem(*leaf, true)).ok());
    minter_ = std::make_shared<CertMinter>();
    Result<std::string> sandbox_ca = minter_->CaPem("sb1");
    ASSERT_TRUE(sandbox_ca.ok());
    ASSERT_TRUE(WriteFile(dir_ + "/sandbox-ca.pem", *sandbox_ca).ok());
    Result<uint16_t> port = testing::FreeTcpPort();
    ASSERT_TRUE(port.ok());
    origin_port_ = *port;
  }

  void TearDown() override {
    StopProxy(proxy_);
    std::filesystem::remove_all(dir_);
  }

  // The origin (deflate or none) and a proxy that intercepts ws.test through `filter`.
  void Start(const std::string& compression, std::shared_ptr<MessageFilter> filter) {
    Result<testing::Child> origin =
        testing::Child::Start({"/usr/bin/python3", kTestdata + "/ws_origin.py", dir_ + "/origin.pem",
                               dir_ + "/origin.key", std::to_string(origin_port_), compression});
    ASSERT_TRUE(origin.ok()) << origin.error().message;
    origin_.emplace(std::move(*origin));
    bool listening = false;
    for (int i = 0; i < 250 && !listening; ++i) {
      listening = testing::ConnectTcp(origin_port_).ok();
      if (!listening) ::usleep(20000);
    }
    ASSERT_TRUE(listening) << "the origin did not start";
    ProxyHooks h;
    h.classify = ClassifyConnection;
    h.sandbox = [](uint32_t) { return std::optional<std::string>("sb1"); };
    h.host_for_port = [](const std::string&, uint16_t) { return std::optional<std::string>(); };
    h.decide = [](const std::string&, const std::string&, uint16_t, const std::string&, const std::string&) {
      return Admission{true, ""};
    };
    h.dial = [this](const std::string& host, uint16_t) -> Result<Fd> {
      if (host != "ws.test") return Error::Of(Code::kUnavailable, "no route to " + host);
      return testing::ConnectTcp(origin_port_);
    };
    h.on_deny = [](const std::string&, const std::string&, const std::string&, bool) {};
    h.intercept = [](const std::string&, const std::string& host, uint16_t) { return host == "ws.test"; };
    ProxyOptions o;
    o.listen_address = "127.0.0.1";
    o.intercept.minter = minter_;
    o.intercept.upstream_ca_file = dir_ + "/origins-ca.pem";
    o.filter = std::move(filter);
    Result<std::unique_ptr<Proxy>> p = Proxy::Start(o, h);
    ASSERT_TRUE(p.ok()) << p.error().message;
    proxy_ = std::move(*p);
  }

  // The client's output, then the origin's (what it received).
  std::pair<std::string, std::string> Converse(const std::string& compression) {
    Result<testing::Child> client =
        testing::Child::Start({"/usr/bin/python3", kTestdata + "/ws_client.py", dir_ + "/sandbox-ca.pem",
                               std::to_string(proxy_->port()), compression});
    EXPECT_TRUE(client.ok());
    if (!client.ok()) return {};
    std::string said = client->Output(20000);
    std::string heard = origin_->Output(300);
    origin_.reset();
    return {said, heard};
  }

  std::string dir_;
  uint16_t origin_port_ = 0;
  std::shared_ptr<CertMinter> minter_;
  std::optional<testing::Child> origin_;
  std::unique_ptr<Proxy> proxy_;
};

const std::string kLong = std::to_string(19 + 20 * 10000) + " 10000 0\n";

const std::string kSwapped =
    "origin got 23: my key is isb_placeholder_abc\n"
    "b'origin got bytes: \\x00\\x01 isb_placeholder_abc'\n" +
    kLong + "closed 1000\n";
const std::string kValues = "'my key is sk-real-value'\nb'\\x00\\x01 sk-real-value'\n140000 long, 10000 values\n";

TEST_F(WebSocketInterceptTest, APlaceholderBecomesTheValueInCompressedMessagesAndTheValueNeverComesBack) {
  Start("deflate", std::make_shared<SwappingFilter>());
  auto [said, heard] = Converse("deflate");
  EXPECT_EQ(said, "extensions: permessage-deflate; server_max_window_bits=12; client_max_window_bits=12\n" + kSwapped);
  EXPECT_EQ(heard, kValues);
}

TEST_F(WebSocketInterceptTest, APlaceholderBecomesTheValueInUncompressedMessages) {
  Start("none", std::make_shared<SwappingFilter>());
  auto [said, heard] = Converse("none");
  EXPECT_EQ(said, "extensions: None\n" + kSwapped);
  EXPECT_EQ(heard, kValues);
}

TEST_F(WebSocketInterceptTest, WithoutAFilterMessagesPassUnchanged) {
  Start("deflate", nullptr);
  auto [said, heard] = Converse("deflate");
  const std::string placeholder = "isb_placeholder_abc";
  EXPECT_EQ(said,
            "extensions: permessage-deflate; server_max_window_bits=12; client_max_window_bits=12\n"
            "origin got 29: my key is " +
                placeholder + "\nb'origin got bytes: \\x00\\x01 " + placeholder + "'\n" +
                std::to_string(19 + 20 * 10000) + " 10000 0\nclosed 1000\n");
  EXPECT_EQ(heard, "'my key is " + placeholder + "'\nb'\\x00\\x01 " + placeholder + "'\n200000 long, 0 values\n");
}

}  // namespace
}  // namespace isb::egress
