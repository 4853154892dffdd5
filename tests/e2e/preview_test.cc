// Port previews end to end: a real `isb serve`, a real sandbox running a small dev server (preview_app.py), and
// clients on raw sockets that send the Host of a preview: links spent once, refused when expired or elsewhere, what
// the app receives and sends back, WebSockets, and previews ending with membership, the port and the sandbox.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "e2e/daemon_fixture.h"

#ifndef ISB_PREVIEW_APP
#error "ISB_PREVIEW_APP must be defined (the path of preview_app.py)"
#endif

namespace isb::e2e {
namespace {

constexpr int kAppPort = 8080;

// One TCP connection to the daemon's port (or to `address`:`port`), read until a condition holds, the peer ends or a
// deadline passes.
class Client {
 public:
  explicit Client(uint16_t port, uint32_t address = INADDR_LOOPBACK) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(address);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool Send(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
  }
  // Reads into got() until `done(got())`, the end of the stream (ended() then) or `timeout`.
  void ReadUntil(const std::function<bool(const std::string&)>& done, std::chrono::milliseconds timeout = 10s) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done(got_) && !ended_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        ended_ = true;
        return;
      }
      got_.append(buf, static_cast<size_t>(n));
    }
  }
  void ReadToEnd(std::chrono::milliseconds timeout = 10s) {
    ReadUntil([](const std::string&) { return false; }, timeout);
  }
  const std::string& got() const { return got_; }
  bool ended() const { return ended_; }
  void Clear() { got_.clear(); }

 private:
  int fd_ = -1;
  std::string got_;
  bool ended_ = false;
};

// "Name: value" lines of a raw response's head, in order (Set-Cookie comes more than once).
std::vector<std::string> FieldLines(const std::string& raw, std::string_view name) {
  std::vector<std::string> out;
  const std::string head = raw.substr(0, raw.find("\r\n\r\n"));
  std::regex line("(^|\r\n)([^:\r\n]+): ([^\r\n]*)");
  for (auto it = std::sregex_iterator(head.begin(), head.end(), line); it != std::sregex_iterator(); ++it) {
    std::string n = (*it)[2];
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        }))
      out.push_back((*it)[3]);
  }
  return out;
}

class PreviewTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    // Viewers checked again every second rather than every minute, links good for 10 s rather than 60.
    ASSERT_EQ(StopDaemon(), 0);
    StartDaemon({"--preview-recheck", "1s", "--preview-link-life", "10s"});
  }

  // A running sandbox of `spec` with the app listening on its loopback's kAppPort.
  std::string SandboxWithApp(const json& spec = json::object()) {
    std::string id = CreateSandbox(spec);
    if (!id.empty()) StartApp(id);
    return id;
  }
  // The app in sandbox `id`, listening on its loopback's kAppPort once this returns.
  void StartApp(const std::string& id) {
    MustTool("sandbox_file_write",
             {{"sandbox", id}, {"path", "/tmp/app.py"}, {"content_base64", Base64(ReadFileOrEmpty(ISB_PREVIEW_APP))}});
    json up =
        Exec(id, {"sh", "-c",
                  "setsid python3 /tmp/app.py " + std::to_string(kAppPort) +
                      " </dev/null >/tmp/app.log 2>&1 &\n"
                      "for i in $(seq 200); do grep -q ' 0100007F:1F90 ' /proc/net/tcp && exit 0; sleep 0.05; done; "
                      "cat /tmp/app.log; exit 1"});
    EXPECT_EQ(up.value("exit_code", -1), 0) << up.dump();
  }
  std::string HostOf(const std::string& id, int port = kAppPort, const std::string& org = "default") const {
    return std::to_string(port) + "-" + id + "-" + org + ".localhost:" + std::to_string(this->port());
  }
  // sandbox_port_open over the unix socket: the link's path ("/.isb-preview/<token>").
  std::string OpenLink(const std::string& id, int port = kAppPort) {
    json link = MustTool("sandbox_port_open", {{"sandbox", id}, {"port", port}});
    const std::string url = link.value("url", "");
    const std::string prefix = "http://" + HostOf(id, port);
    EXPECT_EQ(url.rfind(prefix + "/.isb-preview/", 0), 0u) << url;
    return url.size() > prefix.size() ? url.substr(prefix.size()) : "";
  }
  // One request with the preview's Host on a connection of its own, read to its end; the raw response.
  std::string Raw(const std::string& host, const std::string& path, const std::vector<std::string>& fields = {}) {
    Client c(port());
    EXPECT_TRUE(c.ok());
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n";
    for (const std::string& f : fields) req += f + "\r\n";
    c.Send(req + "Connection: close\r\n\r\n");
    c.ReadToEnd();
    return c.got();
  }
  // Spends a link: the isb_preview cookie's value.
  std::string Spend(const std::string& host, const std::string& link) {
    std::string raw = Raw(host, link);
    std::smatch m;
    std::string cookie = FieldLines(raw, "Set-Cookie").empty() ? "" : FieldLines(raw, "Set-Cookie")[0];
    EXPECT_TRUE(std::regex_match(cookie, m,
                                 std::regex("isb_preview=([0-9a-f]{64}); Path=/; Max-Age=28800; HttpOnly; "
                                            "SameSite=Strict")))
        << raw;
    return m.size() > 1 ? m[1].str() : "";
  }
  // A new member `user` opens the app's preview with a token of their own, over TCP, and spends the link: the
  // token_create answer and the isb_preview cookie (empty when something failed, with the reason reported).
  std::pair<json, std::string> SpentByNewMember(const std::string& id, const std::string& host,
                                                const std::string& user) {
    MustTool("user_create", {{"name", user}});
    MustTool("member_add", {{"user", user}, {"role", "member"}});
    json minted = MustTool("token_create", {{"name", user}, {"user", user}});
    CurlResult opened =
        CurlTcp("POST", "/api/v1/tools/sandbox_port_open", json{{"sandbox", id}, {"port", kAppPort}}.dump(),
                {"Content-Type: application/json"}, minted.value("token", ""));
    EXPECT_EQ(opened.http.status, 200) << opened.Describe();
    const std::string url = opened.http.j.value("result", json::object()).value("url", "");
    const size_t link = url.find("/.isb-preview/");
    EXPECT_NE(link, std::string::npos) << opened.Describe();
    if (link == std::string::npos) return {minted, ""};
    return {minted, Spend(host, url.substr(link))};
  }
  // A WebSocket on the app's /ws through the preview, after its 101.
  std::unique_ptr<Client> OpenSocket(const std::string& host, const std::string& cookie) {
    auto c = std::make_unique<Client>(port());
    c->Send("GET /ws HTTP/1.1\r\nHost: " + host + "\r\nCookie: isb_preview=" + cookie +
            "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n");
    c->ReadUntil([](const std::string& s) { return s.find("\r\n\r\n") != std::string::npos; });
    EXPECT_EQ(c->got().rfind("HTTP/1.1 101 ", 0), 0u) << c->got();
    EXPECT_EQ(FieldLines(c->got(), "Sec-WebSocket-Accept"), std::vector<std::string>{"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="});
    c->Clear();
    return c;
  }
  // The daemon's open descriptors once the count has held still for half a second (a create's pool refill may
  // still be opening a sandbox's control socket on a loaded machine).
  size_t QuietDaemonDescriptors() const {
    size_t before = DaemonDescriptors();
    for (int i = 0, same = 0; i < 150 && same < 5; ++i) {
      std::this_thread::sleep_for(100ms);
      const size_t now = DaemonDescriptors();
      same = now == before ? same + 1 : 0;
      before = now;
    }
    return before;
  }
  size_t DaemonDescriptors() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e :
         std::filesystem::directory_iterator("/proc/" + std::to_string(daemon_pid()) + "/fd"))
      ++n;
    return n;
  }
  static std::string MaskedText(const std::string& text) {
    std::string f = {'\x81', static_cast<char>(0x80 | text.size()), 1, 2, 3, 4};
    for (size_t i = 0; i < text.size(); ++i) f.push_back(static_cast<char>(text[i] ^ (1 + i % 4)));
    return f;
  }

  static constexpr char kNoSession[] =
      "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
      "Referrer-Policy: no-referrer\r\nContent-Length: 84\r\nConnection: close\r\n\r\n"
      "no preview session here: open this preview with a link from isb (sandbox_port_open)\n";
};

TEST_F(PreviewTest, ALinkOpensThePreviewOnceAndTheAppReceivesNoneOfIsbsCredentials) {
  const std::string id = SandboxWithApp();
  const std::string host = HostOf(id);
  const std::string link = OpenLink(id);
  const std::string spent = Raw(host, link);
  EXPECT_EQ(spent.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << spent;
  EXPECT_EQ(FieldLines(spent, "Referrer-Policy"), std::vector<std::string>{"no-referrer"});
  EXPECT_EQ(FieldLines(spent, "Cache-Control"), std::vector<std::string>{"no-store"});
  EXPECT_NE(spent.find("<meta http-equiv=\"refresh\" content=\"0;url=/\">"), std::string::npos) << spent;
  EXPECT_TRUE(FieldLines(spent, "Content-Security-Policy").empty()) << "isb's headers on a preview host: " << spent;
  const std::string cookie = Spend(host, OpenLink(id));
  ASSERT_FALSE(cookie.empty());

  // Spent: refused, with the reason.
  EXPECT_EQ(Raw(host, link),
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\nContent-Length: 109\r\nConnection: close\r\n\r\n"
            "this preview link was used already: a link opens its preview once; ask isb for a new one "
            "(sandbox_port_open)\n");

  // What the app gets: none of isb's cookies or tokens, no Cloudflare Access assertion, no made-up forwarding.
  const std::string raw =
      Raw(host, "/echo",
          {"Cookie: isb_preview=" + cookie + "; isb_session=isb_sess_stolen; app=1; CF_Authorization=cfjwt",
           "Authorization: Bearer " + token(), "Cf-Access-Jwt-Assertion: cfjwt", "X-Forwarded-For: 6.6.6.6",
           "X-Forwarded-Host: isb.example", "Forwarded: for=6.6.6.6", "X-Real-IP: 6.6.6.6", "X-Custom: kept"});
  ASSERT_EQ(raw.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << raw;
  HttpResponse r = ParseHttpResponse(raw);
  ASSERT_TRUE(r.j.is_object()) << raw;
  EXPECT_EQ(r.j["path"], "/echo");
  EXPECT_EQ(r.j["headers"], json::parse(R"([["Host",")" + host +
                                        R"("],["Cookie","app=1"],["X-Custom","kept"],)"
                                        R"(["Connection","close"]])"));
  // The app's own headers as they are, but its Set-Cookie without Domain and none named like isb's.
  EXPECT_EQ(FieldLines(raw, "Set-Cookie"), std::vector<std::string>{"app=1; Path=/; HttpOnly"});
  EXPECT_EQ(FieldLines(raw, "X-App"), std::vector<std::string>{"preview-app"});
  EXPECT_EQ(FieldLines(raw, "Server").size(), 1u);
  EXPECT_EQ(FieldLines(raw, "Server")[0].rfind("BaseHTTP/", 0), 0u) << raw;
  EXPECT_TRUE(FieldLines(raw, "Content-Security-Policy").empty()) << raw;
}

TEST_F(PreviewTest, IsbsApiAndPagesAreNeverServedOnAPreviewHost) {
  const std::string id = SandboxWithApp();
  const std::string host = HostOf(id);
  // Without a session: the preview's refusal, not isb's health, API or UI, whatever the credential.
  EXPECT_EQ(Raw(host, "/healthz"), kNoSession);
  EXPECT_EQ(Raw(host, "/api/v1/tools/whoami", {"Authorization: Bearer " + token()}), kNoSession);
  EXPECT_EQ(Raw(host, "/"), kNoSession);
  // With one: the app answers every path, isb's included.
  const std::string cookie = Spend(host, OpenLink(id));
  HttpResponse r = ParseHttpResponse(
      Raw(host, "/api/v1/tools/whoami", {"Cookie: isb_preview=" + cookie, "Authorization: Bearer " + token()}));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.j.value("path", ""), "/api/v1/tools/whoami") << r.Describe();
  // isb's own host is isb's still.
  EXPECT_EQ(Request(tcp_endpoint(), "GET", "/healthz").status, 200);
}

TEST_F(PreviewTest, ALinkIsRefusedOnAnotherPreviewsHostAndOnceExpired) {
  const std::string id = SandboxWithApp();
  EXPECT_EQ(Raw(HostOf(id, 8081), OpenLink(id)),
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\nContent-Length: 74\r\nConnection: close\r\n\r\n"
            "this preview link is for another preview: open it at the address isb gave\n");
  const std::string link = OpenLink(id);
  std::this_thread::sleep_for(11s);  // the fixture's --preview-link-life 10s
  EXPECT_EQ(Raw(HostOf(id), link),
            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\nContent-Length: 99\r\nConnection: close\r\n\r\n"
            "this preview link has expired (a link is good for 10 s): ask isb for a new one (sandbox_port_open)\n");
}

// A link is good for 60 s at most (the spec's bound); shorter is the operator's choice.
TEST_F(PreviewTest, ALinksLifeIsSixtySecondsOrShorter) {
  for (const char* life : {"61s", "500ms"}) {
    ProcResult refused =
        RunProcess({ISB_BINARY, "serve", "--state-dir", temp_dir() + "/x", "--preview-link-life", life});
    EXPECT_EQ(refused.exit_status, 2) << refused.Describe();
    EXPECT_EQ(refused.err,
              "isb serve: --preview-link-life: must be from 1s to 60s (a link is good for 60 s at most)\n");
  }
}

TEST_F(PreviewTest, AWebSocketPassesThrough) {
  const std::string id = SandboxWithApp();
  const std::string host = HostOf(id);
  auto ws = OpenSocket(host, Spend(host, OpenLink(id)));
  ASSERT_TRUE(ws->Send(MaskedText("hello")));
  ws->ReadUntil([](const std::string& s) { return s.size() >= 12; });
  EXPECT_EQ(ws->got(), std::string("\x81\x0a") + "echo:hello");
}

// Behind a front that terminates TLS (--preview-domain https://DOMAIN): the link names https and no port, and the
// cookie the front passes on is Secure; the front forwards the preview's Host as it is, and the app answers.
TEST_F(PreviewTest, UnderAnHttpsPreviewDomainTheLinkIsHttpsAndTheCookieSecure) {
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--preview-recheck", "1s", "--preview-domain", "https://previews.isb-test.net"});
  const std::string id = SandboxWithApp();
  json link = MustTool("sandbox_port_open", {{"sandbox", id}, {"port", kAppPort}});
  const std::string host = std::to_string(kAppPort) + "-" + id + "-default.previews.isb-test.net";
  const std::string url = link.value("url", "");
  const std::string prefix = "https://" + host + "/.isb-preview/";
  ASSERT_EQ(url.rfind(prefix, 0), 0u) << url;
  ASSERT_EQ(url.size(), prefix.size() + 64) << url;
  const std::string spent = Raw(host, url.substr(url.find("/.isb-preview/")));
  std::smatch m;
  const std::vector<std::string> cookies = FieldLines(spent, "Set-Cookie");
  ASSERT_EQ(cookies.size(), 1u) << spent;
  ASSERT_TRUE(std::regex_match(
      cookies[0], m,
      std::regex("isb_preview=([0-9a-f]{64}); Path=/; Max-Age=28800; HttpOnly; SameSite=Strict; Secure")))
      << spent;
  const std::string raw = Raw(host, "/echo", {"Cookie: isb_preview=" + m[1].str()});
  ASSERT_EQ(raw.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << raw;
  HttpResponse r = ParseHttpResponse(raw);
  ASSERT_TRUE(r.j.is_object()) << raw;
  EXPECT_EQ(r.j["headers"][0], json::array({"Host", host})) << "the app sees the preview's host as the front gave it";
}

// An app that takes a request and never answers: the browser gets the proxy's own 504 once the response timeout (1 s
// here) has passed, the app sees its connection closed, and neither the sandbox nor the daemon holds anything more.
TEST_F(PreviewTest, AnAppThatNeverAnswersGetsTheBrowserA504AndItsConnectionIsClosed) {
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--preview-recheck", "1s", "--preview-response-timeout", "1s"});
  const std::string id = SandboxWithApp();
  const std::string host = HostOf(id);
  const std::string cookie = Spend(host, OpenLink(id));
  ASSERT_FALSE(cookie.empty());
  // A first request, for what the daemon makes once to reach a sandbox's app.
  EXPECT_EQ(ParseHttpResponse(Raw(host, "/", {"Cookie: isb_preview=" + cookie})).status, 200);
  const size_t before = QuietDaemonDescriptors();

  Client c(port());
  ASSERT_TRUE(c.ok());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send("GET /silent HTTP/1.1\r\nHost: " + host + "\r\nCookie: isb_preview=" + cookie + "\r\n\r\n"));
  c.ReadToEnd(10s);
  const auto took = std::chrono::steady_clock::now() - start;
  const std::string text =
      "port " + std::to_string(kAppPort) + " in sandbox " + id + " took the request but sent no response within 1 s\n";
  EXPECT_EQ(c.got(),
            "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
            "Referrer-Policy: no-referrer\r\nContent-Length: " +
                std::to_string(text.size()) + "\r\nConnection: close\r\n\r\n" + text);
  EXPECT_TRUE(c.ended()) << "the connection was left open after the 504";
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 5s);

  // The app saw the connection end (it never closes it itself).
  json log;
  for (int i = 0; i < 50; ++i) {
    log = Exec(id, {"cat", "/tmp/silent.log"});
    if (log.value("stdout", "") == "taken\nended\n") break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(log.value("stdout", ""), "taken\nended\n") << log.dump();
  // No connection to or from the app's port is left in the sandbox but the listener and the proxy's TIME_WAIT (the
  // app logs "ended" before its socket is closed: looked at again for up to 5 s).
  json open;
  for (int i = 0; i < 50; ++i) {
    open = Exec(id, {"sh", "-c",
                     "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | "
                     "awk '($2 ~ /:1F90$/ || $3 ~ /:1F90$/) && $4 != \"0A\" && $4 != \"06\"'"});
    if (open.value("exit_code", -1) == 0 && open.value("stdout", "?").empty()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(open.value("exit_code", -1), 0) << open.dump();
  EXPECT_EQ(open.value("stdout", "?"), "") << open.dump();
  // And the daemon holds no descriptor more than before.
  size_t now = DaemonDescriptors();
  for (int i = 0; i < 100 && now != before; ++i) {
    std::this_thread::sleep_for(100ms);
    now = DaemonDescriptors();
  }
  EXPECT_EQ(now, before);
}

// A browser that hangs up while its connection to the app waits for a dial worker costs the app nothing: every
// worker is held by a dial of a port whose accept queue is full (its SYNs dropped, so each dial waits out its time),
// a fifth request for another port is queued behind them and its client hangs up; that port's app never sees a
// connection, and the next request for it is served.
TEST_F(PreviewTest, AClientThatHangsUpWhileItsDialIsQueuedNeverReachesTheApp) {
  const std::string id = SandboxWithApp();
  const std::string apps =
      "import socket\n"
      "held = []\n"
      "for family, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n"
      "    try:\n"
      "        s = socket.socket(family); s.bind((host, 8081)); s.listen(0)\n"
      "        c = socket.socket(family); c.connect((host, 8081)); held += [s, c]\n"
      "    except OSError:\n"
      "        pass\n"
      "l = socket.socket(); l.bind(('127.0.0.1', 8082)); l.listen(16)\n"
      "while True:\n"
      "    c, _ = l.accept()\n"
      "    with open('/tmp/accepted.log', 'a') as f: f.write('accepted\\n')\n"
      "    c.recv(65536)\n"
      "    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok')\n"
      "    c.close()\n";
  MustTool("sandbox_file_write", {{"sandbox", id}, {"path", "/tmp/apps.py"}, {"content_base64", Base64(apps)}});
  json up = Exec(id, {"sh", "-c",
                      "setsid python3 /tmp/apps.py </dev/null >/tmp/apps.log 2>&1 &\n"
                      "for i in $(seq 200); do grep -q ' 0100007F:1F92 ' /proc/net/tcp && exit 0; sleep 0.05; done; "
                      "cat /tmp/apps.log; exit 1"});
  ASSERT_EQ(up.value("exit_code", -1), 0) << up.dump();
  const std::string full = HostOf(id, 8081), counted = HostOf(id, 8082);
  const std::string full_cookie = Spend(full, OpenLink(id, 8081));
  const std::string counted_cookie = Spend(counted, OpenLink(id, 8082));
  ASSERT_FALSE(full_cookie.empty());
  ASSERT_FALSE(counted_cookie.empty());
  const auto request = [](const std::string& host, const std::string& cookie) {
    return "GET / HTTP/1.1\r\nHost: " + host + "\r\nCookie: isb_preview=" + cookie + "\r\n\r\n";
  };

  // Four dials (the daemon's four workers) of the full port, each connecting until its time is out.
  std::vector<std::unique_ptr<Client>> holding;
  for (int i = 0; i < 4; ++i) {
    holding.push_back(std::make_unique<Client>(port()));
    ASSERT_TRUE(holding.back()->Send(request(full, full_cookie)));
  }
  json connecting;
  for (int i = 0; i < 100; ++i) {
    connecting = Exec(id, {"sh", "-c", "grep -c ':1F91 02 ' /proc/net/tcp"});
    if (connecting.value("stdout", "") == "4\n") break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(connecting.value("stdout", ""), "4\n") << "the four dials are not connecting: " << connecting.dump();
  {
    Client gone(port());
    ASSERT_TRUE(gone.Send(request(counted, counted_cookie)));
    std::this_thread::sleep_for(200ms);  // its dial is queued behind the four
  }
  for (auto& c : holding) {
    c->ReadToEnd(30s);
    EXPECT_EQ(c->got().rfind("HTTP/1.1 502 Bad Gateway\r\n", 0), 0u) << c->got();
  }
  std::this_thread::sleep_for(500ms);  // time for the gone client's dial, had it been made
  EXPECT_EQ(Exec(id, {"cat", "/tmp/accepted.log"}).value("exit_code", -1), 1) << "the app saw the gone client";
  EXPECT_EQ(Raw(counted, "/", {"Cookie: isb_preview=" + counted_cookie}),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  EXPECT_EQ(Exec(id, {"cat", "/tmp/accepted.log"}).value("stdout", ""), "accepted\n");
}

TEST_F(PreviewTest, AViewerRemovedFromTheOrgLosesThePreviewWithinTheRecheck) {
  const std::string id = SandboxWithApp();
  const std::string host = HostOf(id);
  auto [minted, cookie] = SpentByNewMember(id, host, "mia");
  ASSERT_FALSE(cookie.empty());
  auto ws = OpenSocket(host, cookie);
  EXPECT_EQ(ParseHttpResponse(Raw(host, "/", {"Cookie: isb_preview=" + cookie})).status, 200);

  MustTool("member_remove", {{"user", "mia"}});
  // The open WebSocket is cut and the cookie refused within the recheck (1 s here), with time to spare.
  ws->ReadToEnd(5s);
  EXPECT_TRUE(ws->ended()) << "the WebSocket outlived the membership";
  EXPECT_EQ(Raw(host, "/", {"Cookie: isb_preview=" + cookie}), kNoSession);
}

// The credential a preview was opened with is checked again too: revoking the token ends its previews, though its
// user is still a member.
TEST_F(PreviewTest, RevokingTheTokenAPreviewWasOpenedWithEndsItWithinTheRecheck) {
  const std::string id = SandboxWithApp();
  const std::string host = HostOf(id);
  auto [minted, cookie] = SpentByNewMember(id, host, "max");
  ASSERT_FALSE(cookie.empty());
  auto ws = OpenSocket(host, cookie);
  EXPECT_EQ(ParseHttpResponse(Raw(host, "/", {"Cookie: isb_preview=" + cookie})).status, 200);

  MustTool("token_revoke", {{"id", minted["record"].value("id", 0)}});
  ws->ReadToEnd(5s);
  EXPECT_TRUE(ws->ended()) << "the WebSocket outlived the token";
  EXPECT_EQ(Raw(host, "/", {"Cookie: isb_preview=" + cookie}), kNoSession);
}

TEST_F(PreviewTest, StoppingTheSandboxOrClosingThePortEndsItsPreviews) {
  const std::string id = SandboxWithApp();
  const std::string host = HostOf(id);
  const std::string closed = Spend(host, OpenLink(id));
  auto ws = OpenSocket(host, closed);
  json out = MustTool("sandbox_port_close", {{"sandbox", id}, {"port", kAppPort}});
  EXPECT_EQ(out, (json{{"sandbox", id}, {"port", kAppPort}, {"sessions_ended", 1}}));
  ws->ReadToEnd(5s);
  EXPECT_TRUE(ws->ended()) << "the WebSocket outlived sandbox_port_close";
  EXPECT_EQ(Raw(host, "/", {"Cookie: isb_preview=" + closed}), kNoSession);

  const std::string cookie = Spend(host, OpenLink(id));
  auto ws2 = OpenSocket(host, cookie);
  MustTool("sandbox_stop", {{"sandbox", id}});
  ws2->ReadToEnd(5s);
  EXPECT_TRUE(ws2->ended()) << "the WebSocket outlived its sandbox";
  EXPECT_EQ(Raw(host, "/", {"Cookie: isb_preview=" + cookie}), kNoSession);
  // And a stopped sandbox gives no links.
  HttpResponse refused = Tool("sandbox_port_open", {{"sandbox", id}, {"port", kAppPort}});
  EXPECT_EQ(refused.status, 409) << refused.Describe();
  EXPECT_EQ(refused.j.value("message", ""),
            "sandbox " + id + " is stopped: start it (sandbox_start) to preview its ports");
}

// Where ports are published unless a spec says otherwise (127.0.0.2: localhost's cookies never reach it).
constexpr uint32_t kPublishAddress = INADDR_LOOPBACK + 1;

// A port free on kPublishAddress now (0 if none could be had).
uint16_t FreePublishPort() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(kPublishAddress);
  socklen_t len = sizeof a;
  const bool bound = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                     ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(s);
  return bound ? ntohs(a.sin_port) : 0;
}

// A published port relays to the app on the sandbox's own loopback, in the network namespace its runtime opens, and
// again after a stop and a start (another run of the sandbox, another namespace); stopped, nothing listens there.
TEST_F(PreviewTest, APublishedPortReachesTheAppInTheSandboxAgainAfterARestart) {
  const uint16_t host_port = FreePublishPort();
  ASSERT_NE(host_port, 0);
  const std::string id = SandboxWithApp({{"ports", {{{"sandbox_port", kAppPort}, {"host_port", host_port}}}}});
  ASSERT_FALSE(id.empty());
  auto expect_app = [&](const char* when) {
    Client c(host_port, kPublishAddress);
    ASSERT_TRUE(c.ok()) << when << ": nothing listens on the published port";
    ASSERT_TRUE(c.Send("GET /published HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    c.ReadToEnd();
    ASSERT_EQ(c.got().rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << when << ": " << c.got();
    EXPECT_EQ(ParseHttpResponse(c.got()).j.value("path", ""), "/published") << when;
  };
  expect_app("the first run");
  MustTool("sandbox_stop", {{"sandbox", id}});
  EXPECT_FALSE(Client(host_port, kPublishAddress).ok()) << "the published port outlived its sandbox's run";
  MustTool("sandbox_start", {{"sandbox", id}});
  StartApp(id);
  expect_app("after a restart");
}

}  // namespace
}  // namespace isb::e2e
