// A sandbox's terminal over a WebSocket (GET /api/v1/sandboxes/<id>/terminal) end to end, with a raw client: the
// handshake, output and input, a resize, the end, the limit of sessions, the refusals (a session's foreign Origin, a
// sandbox that does not exist, a request that is not an upgrade), and a shell kept for a reattach after its
// connection dropped.
#include <sqlite3.h>

#include <regex>
#include <thread>

#include "e2e/daemon_fixture.h"
#include "net/websocket_frame.h"
#include "net/websocket_message.h"

namespace isb::e2e {
namespace {

namespace op = net::ws_opcode;

// RFC 6455's own example key and the accept value it calls for.
constexpr const char* kKey = "dGhlIHNhbXBsZSBub25jZQ==";
constexpr const char* kAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

std::string ClientFrame(uint8_t opcode, std::string_view payload) {
  net::WsFrameHeader header{.fin = true, .opcode = opcode, .masked = true, .mask = {0x12, 0x34, 0x56, 0x78}};
  return net::EncodeFrame(header, payload);
}

// One WebSocket to the terminal route: the 101's head, then every frame the server sent until it closed.
struct TerminalClient {
  RawConnection conn;
  std::string head;         // the response head (status line and headers); the whole response when refused
  std::string output;       // binary frames' payloads, in order
  std::vector<json> texts;  // text frames, parsed
  int close_code = 0;
  std::string close_reason;
  // Told of the output so far after each binary frame (and may send).
  std::function<void(const std::string& output)> on_output;

  TerminalClient(const Endpoint& ep, const std::string& target, const std::vector<std::string>& headers) : conn(ep) {
    std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(ep.port) +
                          "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                          "Sec-WebSocket-Key: " +
                          std::string(kKey) + "\r\n";
    for (const std::string& h : headers) request += h + "\r\n";
    conn.Send(request + "\r\n");
  }

  // Reads until the server closes; `on_text` sees each text frame (and may send).
  void Run(const std::function<void(const json&)>& on_text, std::chrono::milliseconds timeout = 30s) {
    std::string pending;
    bool in_frames = false, refused = false;
    net::WsFrameParser parser({.sender = net::WsSender::kServer});
    std::string payload;
    conn.ReadAll(timeout, [&](std::string_view data) {
      pending.append(data);
      if (!in_frames) {
        size_t end = pending.find("\r\n\r\n");
        if (end == std::string::npos) return;
        head = pending.substr(0, end + 4);
        pending.erase(0, end + 4);
        in_frames = true;
        refused = head.rfind("HTTP/1.1 101 ", 0) != 0;
      }
      if (refused) {
        // A refusal's body; the server keeps the connection for another request, so the client ends it.
        head += pending;
        pending.clear();
        HttpResponse r = ParseHttpResponse(head);
        if (r.status != 0 && r.body.size() >= std::stoul("0" + r.Header("content-length"))) conn.Shutdown();
        return;
      }
      while (!pending.empty()) {
        net::WsFrameParser::Step step = parser.Feed(pending, payload);
        pending.erase(0, step.used);
        if (step.state != net::WsFrameParser::State::kFrame) return;
        const uint8_t opcode = parser.header().opcode;
        if (opcode == op::kBinary) {
          output += payload;
          if (on_output) on_output(output);
        }
        if (opcode == op::kText) {
          texts.push_back(json::parse(payload, nullptr, false));
          if (on_text) on_text(texts.back());
        }
        if (opcode == op::kClose) {
          Result<net::WsClose> close = net::ParseClosePayload(payload);
          close_code = close.ok() ? close->code : -1;
          if (close.ok()) close_reason = close->reason;
          conn.Send(ClientFrame(op::kClose, payload));
        }
        payload.clear();
      }
    });
  }
};

class TerminalSocketTest : public E2eTest {
 protected:
  std::string Target(const std::string& sandbox) {
    return "/api/v1/sandboxes/" + sandbox + "/terminal?rows=30&cols=90";
  }
  std::vector<std::string> Bearer() { return {"Authorization: Bearer " + token()}; }
  // The first platform admin, made with the setup token, signed in: the session cookie's header line.
  std::string SessionCookie() {
    std::string setup = ReadFileOrEmpty(state_dir() + "/setup-token");
    while (!setup.empty() && setup.back() == '\n') setup.pop_back();
    const std::vector<std::string> browser = {"Content-Type: application/json", "X-Isb-Csrf: 1"};
    HttpResponse made =
        Http(tcp_endpoint(), "POST", "/api/v1/auth/setup",
             json({{"setup_token", setup}, {"user", "web"}, {"password", "pw-for-the-web"}}).dump(), browser);
    EXPECT_EQ(made.status, 200) << made.Describe();
    HttpResponse in = Http(tcp_endpoint(), "POST", "/api/v1/auth/signin",
                           json({{"user", "web"}, {"password", "pw-for-the-web"}}).dump(), browser);
    EXPECT_EQ(in.status, 200) << in.Describe();
    std::smatch m;
    std::string cookie = in.Header("set-cookie");
    EXPECT_TRUE(std::regex_search(cookie, m, std::regex("isb_session=([^;]+)"))) << cookie;
    return "Cookie: isb_session=" + m[1].str();
  }
};

TEST_F(TerminalSocketTest, AShellRunsOverTheWebSocketTakesInputAndResizesAndEndsWithItsExitCode) {
  std::string id = CreateSandbox();
  TerminalClient client(tcp_endpoint(), Target(id), Bearer());
  client.Run([&](const json& msg) {
    if (msg.value("type", "") != "session") return;
    client.conn.Send(ClientFrame(op::kBinary, "echo $((6*7))\n"));
    client.conn.Send(ClientFrame(op::kText, R"({"type":"resize","rows":40,"cols":120})"));
    client.conn.Send(ClientFrame(op::kText, R"({"type":"input","data":"stty size; exit 3\n"})"));
  });
  ASSERT_EQ(client.head.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0), 0u) << client.head;
  EXPECT_NE(client.head.find("\r\nSec-WebSocket-Accept: " + std::string(kAccept) + "\r\n"), std::string::npos)
      << client.head;
  ASSERT_GE(client.texts.size(), 2u) << client.output;
  EXPECT_EQ(client.texts.front()["type"], "session");
  EXPECT_EQ(client.texts.front()["session"].get<std::string>().rfind("ts-", 0), 0u);
  EXPECT_EQ(client.texts.back(), json({{"type", "exit"}, {"exit_code", 3}})) << client.output;
  EXPECT_EQ(client.close_code, net::ws_close::kNormal);
  // Each answer on a line of its own (bash ends its bracketed-paste mode with a carriage return before it).
  EXPECT_TRUE(std::regex_search(client.output, std::regex("[\r\n]42\r\n"))) << client.output;
  EXPECT_TRUE(std::regex_search(client.output, std::regex("[\r\n]40 120\r\n"))) << client.output;
  // The exec as REST records it, with as many inputs and resizes as the client sent.
  ExpectedRow input = ByToken("rest", "sandbox_exec_input"), resize = ByToken("rest", "sandbox_exec_resize");
  input.rows = resize.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("the terminal WebSocket", {ByToken("rest", "sandbox_exec"), input, resize});
}

TEST_F(TerminalSocketTest, ASessionWebSocketMustComeFromIsbsOwnOrigin) {
  SkipAuditCheck();  // the setup, sign-in and refused credentials are another suite's to count
  std::string id = CreateSandbox();
  const std::string cookie = SessionCookie();
  const std::string own = "Origin: http://127.0.0.1:" + std::to_string(port());
  for (const auto& [origin, shown] :
       std::vector<std::pair<std::string, std::string>>{{"Origin: http://evil.example", "http://evil.example"},
                                                        {"", ""},
                                                        {"Origin: http://localhost:1", "http://localhost:1"}}) {
    TerminalClient refused(tcp_endpoint(), Target(id),
                           origin.empty() ? std::vector{cookie} : std::vector{cookie, origin});
    refused.Run(nullptr, 10s);
    HttpResponse r = ParseHttpResponse(refused.head);
    EXPECT_EQ(r.status, 403) << refused.head;
    EXPECT_EQ(r.j, json({{"error", "forbidden"},
                         {"message", "a session WebSocket must come from isb's own page: Origin '" + shown +
                                         "' is not this daemon's"}}))
        << refused.head;
  }
  TerminalClient allowed(tcp_endpoint(), Target(id), {cookie, own});
  allowed.Run([&](const json& msg) {
    if (msg.value("type", "") == "session") allowed.conn.Send(ClientFrame(op::kBinary, "exit\n"));
  });
  EXPECT_EQ(allowed.head.rfind("HTTP/1.1 101 ", 0), 0u) << allowed.head;
  ASSERT_FALSE(allowed.texts.empty());
  EXPECT_EQ(allowed.texts.back(), json({{"type", "exit"}, {"exit_code", 0}}));
}

TEST_F(TerminalSocketTest, ATerminalTheCallerCouldNotStartIsRefusedBeforeTheUpgrade) {
  SkipAuditCheck();  // refusals of a sandbox that does not exist are counted by the REST suite
  TerminalClient missing(tcp_endpoint(), Target("nope"), Bearer());
  missing.Run(nullptr, 10s);
  HttpResponse r = ParseHttpResponse(missing.head);
  EXPECT_EQ(r.status, 404) << missing.head;
  EXPECT_EQ(r.j, json({{"error", "not_found"}, {"message", "no sandbox 'nope'"}})) << missing.head;

  HttpResponse plain = Http(tcp_endpoint(), "GET", Target("nope"), "", Bearer());
  EXPECT_EQ(plain.status, 426) << plain.Describe();
  EXPECT_EQ(plain.Header("upgrade"), "websocket");
  EXPECT_EQ(plain.j, json({{"error", "invalid_argument"},
                           {"message", "a terminal is a WebSocket: send \"Upgrade: websocket\""}}));
  HttpResponse none = Http(tcp_endpoint(), "GET", Target("nope"));
  EXPECT_EQ(none.status, 401) << none.Describe();
}

TEST_F(TerminalSocketTest, TheNinthTerminalOfASandboxEndsWithTheLimitsError) {
  std::string id = CreateSandbox();
  std::vector<std::unique_ptr<TerminalClient>> open;
  std::vector<std::thread> readers;
  std::atomic<int> started{0};
  for (int i = 0; i < 8; ++i) {
    open.push_back(std::make_unique<TerminalClient>(tcp_endpoint(), Target(id), Bearer()));
    TerminalClient* c = open.back().get();
    readers.emplace_back([c, &started] {
      c->Run(
          [&](const json& msg) {
            if (msg.value("type", "") == "session") ++started;
          },
          60s);
    });
  }
  for (auto until = std::chrono::steady_clock::now() + 30s; started < 8 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(started.load(), 8);
  TerminalClient ninth(tcp_endpoint(), Target(id), Bearer());
  ninth.Run(nullptr, 20s);
  EXPECT_EQ(ninth.head.rfind("HTTP/1.1 101 ", 0), 0u) << ninth.head;
  ASSERT_EQ(ninth.texts.size(), 1u);
  EXPECT_EQ(ninth.texts[0], json({{"type", "error"},
                                  {"error", "conflict"},
                                  {"message", "sandbox '" + id +
                                                  "' has 8 live terminal sessions, the most it may "
                                                  "have; end one first"}}));
  for (auto& c : open) c->conn.Send(ClientFrame(op::kBinary, "exit\n"));
  for (auto& t : readers) t.join();
  for (auto& c : open) {
    ASSERT_FALSE(c->texts.empty());
    EXPECT_EQ(c->texts.back(), json({{"type", "exit"}, {"exit_code", 0}}));
  }
  // Eight shells, each with its input; the ninth refused.
  ExpectedRow input = ByToken("rest", "sandbox_exec_input");
  input.rows = ExpectedRow::Rows::kAny;
  std::vector<ExpectedRow> rows(8, ByToken("rest", "sandbox_exec"));
  rows.push_back(ByToken("rest", "sandbox_exec", "conflict"));
  rows.push_back(input);
  ExpectAudit("nine terminals", rows);
}

// A tab closed or a network gone with no grace for a reattach (reattach_grace=0): the shell is killed within the
// exec's cancel check (1 s) and its slot is free.
TEST_F(TerminalSocketTest, AShellWhoseClientWentAwayIsKilledAndItsSlotFreed) {
  std::string id = CreateSandbox();
  // A shell that reaches its session message, whose client then leaves without a word; false when the daemon
  // answered with an error instead (no free slot).
  auto open_and_leave = [&] {
    TerminalClient c(tcp_endpoint(), Target(id) + "&reattach_grace=0", Bearer());
    c.Run([&c](const json&) { c.conn.Shutdown(); }, 20s);
    EXPECT_FALSE(c.texts.empty()) << c.head;
    return !c.texts.empty() && c.texts.front()["type"] == "session";
  };
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(open_and_leave()) << "shell " << i;
  // Eight more, twice the limit in all: each slot comes back once its shell is killed (the exec asks once a second).
  const auto until = std::chrono::steady_clock::now() + 10s;
  for (int i = 0; i < 8; ++i) {
    bool got = false;
    while (!(got = open_and_leave()) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(200ms);
    ASSERT_TRUE(got) << "slot " << i << " was not freed within 10 s of its client leaving";
  }
  // Each shell ended as a call whose caller went away; a try before its slot was free, as a conflict.
  ExpectedRow gone = ByToken("rest", "sandbox_exec", "unavailable"), busy = ByToken("rest", "sandbox_exec", "conflict");
  gone.rows = busy.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("shells left behind", {gone, busy});
}

// A paste larger than one sandbox_exec_input call takes (64 KiB) goes in as several calls, every byte in order.
TEST_F(TerminalSocketTest, APasteLargerThanOneInputCallArrivesWhole) {
  std::string id = CreateSandbox();
  std::string paste;
  for (int i = 0; i < 2000; ++i) paste += std::string(99, 'a' + static_cast<char>(i % 26)) + "\n";
  ASSERT_EQ(paste.size(), 200000u);
  TerminalClient client(tcp_endpoint(), Target(id), Bearer());
  bool pasted = false;
  client.on_output = [&](const std::string& output) {
    if (pasted || output.find("READY\r\n") == std::string::npos) return;
    pasted = true;
    client.conn.Send(ClientFrame(op::kBinary, paste));  // one message of 200000 bytes
    client.conn.Send(ClientFrame(op::kBinary, "\x04"));
    client.conn.Send(ClientFrame(op::kText, R"({"type":"input","data":"exit\n"})"));
  };
  client.Run(
      [&](const json& msg) {
        if (msg.value("type", "") == "session")
          client.conn.Send(ClientFrame(op::kBinary, "stty -echo; echo READY; md5sum\n"));
      },
      60s);
  ASSERT_TRUE(pasted) << client.output;
  ASSERT_FALSE(client.texts.empty());
  EXPECT_EQ(client.texts.back(), json({{"type", "exit"}, {"exit_code", 0}})) << client.output;
  // The sum of exactly what was pasted.
  ProcResult sum = RunProcess({"md5sum"}, paste);
  ASSERT_EQ(sum.exit_status, 0);
  const std::string digest = sum.out.substr(0, 32);
  EXPECT_NE(client.output.find(digest + "  -\r\n"), std::string::npos) << digest << "\n" << client.output;
  ExpectedRow input = ByToken("rest", "sandbox_exec_input");
  input.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("the paste", {ByToken("rest", "sandbox_exec"), input});
}

// The shell is interactive, not a command with the exec limit: typed into every second for 6 s, three times its
// idle limit of 2 s (asked for in the query), it lives on; left alone it ends, told why, within the limit and the
// daemon's once-a-second check.
TEST_F(TerminalSocketTest, ATerminalLivesWhileUsedPastItsIdleLimitAndEndsOnceLeftAlone) {
  std::string id = CreateSandbox();
  TerminalClient client(tcp_endpoint(), Target(id) + "&idle_timeout=2", Bearer());
  int answered = 0;
  std::chrono::steady_clock::time_point last_answer{};
  client.on_output = [&](const std::string& output) {
    if (answered >= 6 || output.find("tick" + std::to_string(answered + 1) + "\r\n") == std::string::npos) return;
    last_answer = std::chrono::steady_clock::now();
    if (++answered == 6) return;
    std::this_thread::sleep_for(1s);
    client.conn.Send(ClientFrame(op::kBinary, "echo tick$((" + std::to_string(answered) + "+1))\n"));
  };
  const auto start = std::chrono::steady_clock::now();
  client.Run(
      [&](const json& msg) {
        if (msg.value("type", "") == "session") client.conn.Send(ClientFrame(op::kBinary, "echo tick$((0+1))\n"));
      },
      40s);
  ASSERT_EQ(answered, 6) << client.output;
  EXPECT_GE(last_answer - start, 5s);
  const auto quiet = std::chrono::steady_clock::now() - last_answer;
  EXPECT_GE(quiet, 2s);
  EXPECT_LT(quiet, 5s);
  EXPECT_EQ(client.texts.back(), json({{"type", "error"},
                                       {"error", "timeout"},
                                       {"message",
                                        "the terminal had no input for 2 s (its idle_timeout) and was ended; "
                                        "open a new one"}}));
  EXPECT_EQ(client.close_code, net::ws_close::kNormal);
  EXPECT_EQ(client.close_reason, "the command ended");
  ExpectedRow input = ByToken("rest", "sandbox_exec_input");
  input.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("the idle terminal", {ByToken("rest", "sandbox_exec", "timeout"), input});
}

std::string NoReattachMessage(const std::string& session, const std::string& sandbox) {
  return "no terminal session '" + session + "' to reattach in sandbox '" + sandbox +
         "': it ended (its shell exited, or it was left with no connection past its grace period), or it is not "
         "this caller's";
}

// A shell whose connection dropped (no close frame: a network gone, a laptop asleep) keeps running: its caller
// attaches again with its session id and finds its shell's state and the output it missed; another caller (another
// token of the same user) is refused with the answer a made-up id gets.
TEST_F(TerminalSocketTest, AShellWhoseConnectionDroppedIsReattachedByItsCallerAndNoOneElse) {
  std::string id = CreateSandbox();
  std::string session;
  TerminalClient first(tcp_endpoint(), Target(id) + "&reattach_grace=30", Bearer());
  first.on_output = [&](const std::string& output) {
    if (output.find("set-42\r\n") != std::string::npos) first.conn.Shutdown();  // no close frame: dropped
  };
  first.Run(
      [&](const json& msg) {
        if (msg.value("type", "") != "session") return;
        session = msg.value("session", "");
        first.conn.Send(ClientFrame(op::kBinary, "export X=42; echo set-$((40+2)); sleep 1; echo late-$((2+3))\n"));
      },
      30s);
  ASSERT_FALSE(session.empty()) << first.head;
  EXPECT_EQ(first.texts.front(), json({{"type", "session"}, {"session", session}, {"offset", 0}}));
  ASSERT_NE(first.output.find("set-42\r\n"), std::string::npos) << first.output;
  const auto dropped = std::chrono::steady_clock::now();

  json minted = MustTool("token_create", {{"name", "another"}, {"user", "e2e"}});
  ASSERT_TRUE(minted.is_object() && minted["token"].is_string()) << minted.dump();
  TerminalClient other(tcp_endpoint(), Target(id) + "&session=" + session,
                       {"Authorization: Bearer " + minted["token"].get<std::string>()});
  other.Run(nullptr, 20s);
  EXPECT_EQ(other.head.rfind("HTTP/1.1 101 ", 0), 0u) << other.head;
  EXPECT_EQ(
      other.texts,
      std::vector<json>({{{"type", "error"}, {"error", "not_found"}, {"message", NoReattachMessage(session, id)}}}));
  EXPECT_EQ(other.close_code, 4404);
  EXPECT_EQ(other.close_reason, "no terminal session to reattach");
  EXPECT_EQ(other.output, "");
  const std::string made_up = "ts-" + RandomHex(16);
  TerminalClient guess(tcp_endpoint(), Target(id) + "&session=" + made_up, Bearer());
  guess.Run(nullptr, 20s);
  EXPECT_EQ(
      guess.texts,
      std::vector<json>({{{"type", "error"}, {"error", "not_found"}, {"message", NoReattachMessage(made_up, id)}}}));
  EXPECT_EQ(guess.close_code, 4404);

  // The owner, with everything it saw: only what came after it (what the shell wrote with no one attached), then the
  // live shell, still with X.
  std::this_thread::sleep_until(dropped + 1500ms);
  const size_t seen = first.output.size();
  TerminalClient again(tcp_endpoint(), Target(id) + "&session=" + session + "&seen=" + std::to_string(seen), Bearer());
  bool exited = false;
  again.on_output = [&](const std::string& output) {
    if (exited || output.find("[42]\r\n") == std::string::npos) return;
    exited = true;
    again.conn.Send(ClientFrame(op::kBinary, "exit 5\n"));
  };
  again.Run(
      [&](const json& msg) {
        if (msg.value("type", "") == "session") again.conn.Send(ClientFrame(op::kBinary, "echo \"[$X]\"\n"));
      },
      30s);
  ASSERT_FALSE(again.texts.empty()) << again.head;
  EXPECT_EQ(again.texts.front(), json({{"type", "session"}, {"session", session}, {"offset", seen}}));
  EXPECT_EQ(again.texts.back(), json({{"type", "exit"}, {"exit_code", 5}})) << again.output;
  EXPECT_EQ(again.close_code, net::ws_close::kNormal);
  EXPECT_NE(again.output.find("[42]\r\n"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("late-5\r\n"), 0u) << again.output;
  EXPECT_EQ(again.output.find("set-42"), std::string::npos) << "sent again what the client had: " << again.output;
  // Ended: no reattach.
  TerminalClient late(tcp_endpoint(), Target(id) + "&session=" + session, Bearer());
  late.Run(nullptr, 20s);
  EXPECT_EQ(
      late.texts,
      std::vector<json>({{{"type", "error"}, {"error", "not_found"}, {"message", NoReattachMessage(session, id)}}}));

  ExpectedRow input = ByToken("rest", "sandbox_exec_input");
  input.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("the shell, its reattaches and their refusals",
              {ByToken("rest", "sandbox_exec"), input, ByToken("rest", "sandbox_terminal_reattach", "not_found"),
               ByToken("rest", "sandbox_terminal_reattach", "not_found"), ByToken("rest", "sandbox_terminal_reattach"),
               ByToken("rest", "sandbox_exec_resize"), ByToken("rest", "sandbox_terminal_reattach", "not_found")});
}

// A second connection to a shell that has one takes it over (the newest wins, as with tmux): the first is closed
// with 4000 and says why; a reload's close (1001) leaves the shell for a reattach just as a dropped one does.
TEST_F(TerminalSocketTest, ASecondConnectionTakesTheShellOverAndAReloadLeavesItRunning) {
  std::string id = CreateSandbox();
  std::string session;
  std::atomic<bool> announced{false}, taken{false};
  TerminalClient first(tcp_endpoint(), Target(id), Bearer());
  std::thread reader([&] {
    first.Run(
        [&](const json& msg) {
          if (msg.value("type", "") != "session") return;
          session = msg.value("session", "");
          announced = true;
        },
        30s);
    taken = true;
  });
  for (auto until = std::chrono::steady_clock::now() + 20s; !announced && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(50ms);
  if (!announced) reader.join();  // fails below, with what the client saw
  ASSERT_TRUE(announced.load()) << first.head;
  TerminalClient second(tcp_endpoint(), Target(id) + "&session=" + session, Bearer());
  second.Run(
      [&](const json& msg) {
        if (msg.value("type", "") != "session") return;
        second.conn.Send(ClientFrame(op::kBinary, "echo one-$((0+1))\n"));
      },
      5s);  // cut short by the test's timeout while the shell runs
  reader.join();
  EXPECT_TRUE(taken.load());
  EXPECT_EQ(first.close_code, 4000);
  EXPECT_EQ(first.close_reason, "the terminal was attached from another connection");
  ASSERT_FALSE(second.texts.empty());
  EXPECT_EQ(second.texts.front()["type"], "session");
  EXPECT_NE(second.output.find("one-1\r\n"), std::string::npos) << second.output;
  // A browser's reload: a close with 1001 (going away).
  second.conn.Send(ClientFrame(op::kClose, net::EncodeClosePayload(net::ws_close::kGoingAway, "")));
  second.conn.Shutdown();
  TerminalClient third(tcp_endpoint(), Target(id) + "&session=" + session, Bearer());
  third.Run(
      [&](const json& msg) {
        if (msg.value("type", "") == "session") third.conn.Send(ClientFrame(op::kBinary, "exit 4\n"));
      },
      30s);
  ASSERT_FALSE(third.texts.empty()) << third.head;
  EXPECT_EQ(third.texts.back(), json({{"type", "exit"}, {"exit_code", 4}})) << third.output;
  // A reload has nothing: it is sent all the shell wrote (well under the 64 KiB kept).
  EXPECT_EQ(third.texts.front()["offset"], 0);
  EXPECT_NE(third.output.find("one-1\r\n"), std::string::npos) << third.output;

  ExpectedRow input = ByToken("rest", "sandbox_exec_input"), resize = ByToken("rest", "sandbox_exec_resize");
  input.rows = resize.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("the takeover and the reload",
              {ByToken("rest", "sandbox_exec"), input, resize, ByToken("rest", "sandbox_terminal_reattach"),
               ByToken("rest", "sandbox_terminal_reattach")});
}

// With no one attached past its grace period (reattach_grace=2 here), the shell is killed with what it ran: nothing
// is left in the sandbox, and the session is gone.
TEST_F(TerminalSocketTest, ADetachedShellEndsAfterItsGracePeriodLeavingNothingBehind) {
  std::string id = CreateSandbox();
  std::string session;
  TerminalClient client(tcp_endpoint(), Target(id) + "&reattach_grace=2", Bearer());
  client.on_output = [&](const std::string& output) {
    if (output.find("ready-7\r\n") != std::string::npos) client.conn.Shutdown();
  };
  client.Run(
      [&](const json& msg) {
        if (msg.value("type", "") != "session") return;
        session = msg.value("session", "");
        client.conn.Send(ClientFrame(op::kBinary, "sleep 4242 & echo ready-$((3+4)); sleep 4343\n"));
      },
      30s);
  ASSERT_FALSE(session.empty()) << client.head;
  const auto dropped = std::chrono::steady_clock::now();
  // The command lines of the sandbox's processes, one a line (this listing's own among them).
  auto processes = [&] {
    json r = Exec(id, {"sh", "-c", "for p in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $p 2>/dev/null; echo; done"});
    return r.value("stdout", "");
  };
  auto shell_left = [](const std::string& ps) {
    return ps.find("sleep 4242") != std::string::npos || ps.find("sleep 4343") != std::string::npos ||
           ps.find("bash -l") != std::string::npos;
  };
  std::string ps = processes();
  EXPECT_NE(ps.find("sleep 4242"), std::string::npos) << "the shell runs on, detached: " << ps;
  EXPECT_NE(ps.find("sleep 4343"), std::string::npos) << ps;
  while (shell_left(ps) && std::chrono::steady_clock::now() - dropped < 15s) {
    std::this_thread::sleep_for(500ms);
    ps = processes();
  }
  EXPECT_GE(std::chrono::steady_clock::now() - dropped, 2s);
  EXPECT_FALSE(shell_left(ps)) << ps;
  TerminalClient late(tcp_endpoint(), Target(id) + "&session=" + session, Bearer());
  late.Run(nullptr, 20s);
  EXPECT_EQ(
      late.texts,
      std::vector<json>({{{"type", "error"}, {"error", "not_found"}, {"message", NoReattachMessage(session, id)}}}));
  EXPECT_EQ(late.close_code, 4404);
  ExpectedRow input = ByToken("rest", "sandbox_exec_input");
  input.rows = ExpectedRow::Rows::kAny;
  ExpectAudit("the shell left past its grace", {ByToken("rest", "sandbox_exec", "unavailable"), input,
                                                ByToken("rest", "sandbox_terminal_reattach", "not_found")});
}

// A sandbox stopped while its shell waits for a reattach ends the shell: the session is gone.
TEST_F(TerminalSocketTest, StoppingTheSandboxEndsItsDetachedShell) {
  std::string id = CreateSandbox();
  std::string session;
  TerminalClient client(tcp_endpoint(), Target(id), Bearer());
  client.Run(
      [&](const json& msg) {
        if (msg.value("type", "") != "session") return;
        session = msg.value("session", "");
        client.conn.Shutdown();
      },
      30s);
  ASSERT_FALSE(session.empty()) << client.head;
  MustTool("sandbox_stop", {{"sandbox", id}});
  std::this_thread::sleep_for(2s);
  MustTool("sandbox_start", {{"sandbox", id}});
  TerminalClient late(tcp_endpoint(), Target(id) + "&session=" + session, Bearer());
  late.Run(nullptr, 20s);
  EXPECT_EQ(
      late.texts,
      std::vector<json>({{{"type", "error"}, {"error", "not_found"}, {"message", NoReattachMessage(session, id)}}}));
  EXPECT_EQ(late.close_code, 4404);
  ExpectAudit("the shell of a stopped sandbox", {ByToken("rest", "sandbox_exec", "unavailable"),
                                                 ByToken("rest", "sandbox_terminal_reattach", "not_found")});
}

// A token revoked while its terminal is open: within the daemon's re-check (5 s) the terminal ends, told why.
TEST_F(TerminalSocketTest, ATerminalEndsWithAPolicyCloseOnceItsTokenIsRevoked) {
  SkipAuditCheck();  // the refused credential the re-check finds is the auth suite's to count
  std::string id = CreateSandbox();
  json minted = MustTool("token_create", {{"name", "short-lived"}, {"user", "e2e"}});
  ASSERT_TRUE(minted.is_object() && minted["token"].is_string()) << minted.dump();
  TerminalClient client(tcp_endpoint(), Target(id), {"Authorization: Bearer " + minted["token"].get<std::string>()});
  std::chrono::steady_clock::time_point revoked_at{};
  client.Run(
      [&](const json& msg) {
        if (msg.value("type", "") != "session") return;
        MustTool("token_revoke", {{"id", minted["record"]["id"]}});
        revoked_at = std::chrono::steady_clock::now();
      },
      30s);
  ASSERT_NE(revoked_at, std::chrono::steady_clock::time_point{}) << client.head;
  EXPECT_LT(std::chrono::steady_clock::now() - revoked_at, 8s);
  EXPECT_EQ(client.close_code, net::ws_close::kPolicy);
  EXPECT_EQ(client.close_reason,
            "the terminal ended: the server is stopping, or the caller's credential or access changed");
}

// A browser session whose expiry passes while its terminal is open (moved to 2 s from now in the daemon's database,
// as 12 hours would pass): within the daemon's re-check (5 s) the terminal ends, told why.
TEST_F(TerminalSocketTest, ATerminalEndsWithAPolicyCloseOnceItsBrowserSessionExpires) {
  SkipAuditCheck();  // the setup, sign-in and the expired credential the re-check finds are another suite's to count
  std::string id = CreateSandbox();
  const std::string cookie = SessionCookie();
  TerminalClient client(tcp_endpoint(), Target(id), {cookie, "Origin: http://127.0.0.1:" + std::to_string(port())});
  std::chrono::steady_clock::time_point expires{};
  client.Run(
      [&](const json& msg) {
        if (msg.value("type", "") != "session") return;
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open((state_dir() + "/isb.db").c_str(), &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        char* error = nullptr;
        const int rc = sqlite3_exec(db,
                                    "UPDATE sessions SET expires_at = CAST(strftime('%s', 'now') AS INTEGER) + 2 "
                                    "WHERE revoked_at IS NULL",
                                    nullptr, nullptr, &error);
        EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
        EXPECT_EQ(sqlite3_changes(db), 1);
        sqlite3_free(error);
        sqlite3_close(db);
        expires = std::chrono::steady_clock::now() + 2s;
      },
      30s);
  ASSERT_NE(expires, std::chrono::steady_clock::time_point{}) << client.head;
  const auto after = std::chrono::steady_clock::now() - expires;
  EXPECT_GT(after, -1s);  // not before the expiry (the database holds whole seconds)
  EXPECT_LT(after, 7s);
  EXPECT_EQ(client.close_code, net::ws_close::kPolicy);
  EXPECT_EQ(client.close_reason,
            "the terminal ended: the server is stopping, or the caller's credential or access changed");
}

}  // namespace
}  // namespace isb::e2e
