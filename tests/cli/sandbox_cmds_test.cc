// The sandbox commands: flags -> tool input, answers -> output and exit codes, and whole commands against a
// scripted daemon.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>

#include "cli/sandbox_cmds.h"
#include "cli/sandbox_cmds_internal.h"
#include "cli/run_isb.h"
#include "cli/test_server.h"

namespace isb::cli {
namespace {

using testing::BodyOf;
using testing::CmdRun;
using testing::JsonAnswer;
using testing::PathOf;
using testing::RunIsb;
using testing::SeenRequest;
using testing::SendAll;
using testing::TestServer;

TEST(CreateInputTest, EveryFlagMapsToTheSchema) {
  CreateFlags f;
  f.name = "web";
  f.image = "/srv/rootfs";
  f.cpus = "0.5";
  f.memory = "1G";
  f.disk = "10G";
  f.pids = "100";
  f.env = {"A=1", "B=x=y", "C="};
  f.workdir = "/work";
  f.user = "1000:1000";
  f.labels = {"team=core"};
  f.mounts = {"/srv/data", "/srv/cache:/cache:rw"};
  f.publish = {"8080:80", "100.64.1.2:2222:22", "[::1]:9000:9000"};
  f.expires = "2h";
  f.idle_timeout = "30m";
  f.privileged = true;
  f.idmap = {"both:1000:1000", "gid:27:2000:3"};
  auto in = CreateInput(f);
  ASSERT_TRUE(in.ok()) << in.error().message;
  json want = {{"name", "web"},
               {"image", "/srv/rootfs"},
               {"cpus", 0.5},
               {"mem_limit", 1ull << 30},
               {"disk", 10ull << 30},
               {"pids", 100},
               {"environment", {{"A", "1"}, {"B", "x=y"}, {"C", ""}}},
               {"working_dir", "/work"},
               {"user", "1000:1000"},
               {"labels", {{"team", "core"}}},
               {"mounts",
                {{{"source", "/srv/data"}, {"target", "/srv/data"}, {"read_only", true}},
                 {{"source", "/srv/cache"}, {"target", "/cache"}, {"read_only", false}}}},
               {"ports",
                {{{"sandbox_port", 80}, {"host_port", 8080}},
                 {{"sandbox_port", 22}, {"host_port", 2222}, {"host_address", "100.64.1.2"}},
                 {{"sandbox_port", 9000}, {"host_port", 9000}, {"host_address", "::1"}}}},
               {"privileged", true},
               {"idmap",
                {{{"kind", "both"}, {"host", 1000}, {"sandbox", 1000}, {"count", 1}},
                 {{"kind", "gid"}, {"host", 27}, {"sandbox", 2000}, {"count", 3}}}},
               {"expires", 7200},
               {"idle_timeout", 1800}};
  EXPECT_EQ(*in, want) << in->dump();
}

TEST(CreateInputTest, SecretsGoInTheEgressObjectBesideTheList) {
  CreateFlags f;
  f.secrets = {"openai=OPENAI_API_KEY", "gh-token"};
  auto alone = CreateInput(f);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  EXPECT_EQ((*alone)["egress"], json({{"allow", json::array()},
                                      {"secrets", {{{"name", "openai"}, {"env", "OPENAI_API_KEY"}}, "gh-token"}}}));
  f.egress = {"pypi.org,files.pythonhosted.org"};
  auto listed = CreateInput(f);
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ((*listed)["egress"]["allow"], json({"pypi.org", "files.pythonhosted.org"}));
  f.egress = {"none"};
  EXPECT_EQ((*CreateInput(f))["egress"]["allow"], json::array());
  f.egress = {"open"};
  EXPECT_EQ(CreateInput(f).error().message,
            "--secret: a sandbox with secrets reaches a list of hosts, not open egress; give --egress HOST... or leave "
            "it out (the secrets' own hosts)");
  f.egress.clear();
  f.secrets = {"=X"};
  EXPECT_EQ(CreateInput(f).error().message,
            "--secret '=X': NAME, or NAME=ENV (the variable that holds its placeholder)");
  f.secrets = {"k="};
  EXPECT_EQ(CreateInput(f).error().message,
            "--secret 'k=': NAME, or NAME=ENV (the variable that holds its placeholder)");
}

TEST(CreateInputTest, AMalformedIdmapIsAUsageError) {
  CreateFlags f;
  f.idmap = {"both:1000"};
  auto in = CreateInput(f);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().code, Code::kInvalidArgument);
  EXPECT_EQ(in.error().message, "invalid --idmap 'both:1000': use uid|gid|both:HOST:SANDBOX[:COUNT]");
}

TEST(CreateInputTest, AMountWithoutASourceIsAUsageError) {
  CreateFlags f;
  f.mounts = {":/x"};
  EXPECT_EQ(CreateInput(f).error().message, "invalid --mount ':/x': use SRC[:DST][:ro|:rw]");
}

TEST(CreateInputTest, AMalformedPublishIsAUsageError) {
  for (const char* bad : {"80", "0:80", "8080:70000", ":8080:80", "x:80"}) {
    CreateFlags f;
    f.publish = {bad};
    EXPECT_EQ(CreateInput(f).error().message,
              std::string("--publish '") + bad + "': use [ADDR:]HOSTPORT:PORT, e.g. 8080:80");
  }
}

TEST(CreateInputTest, NoFlagsSendsAnEmptySpec) {
  auto in = CreateInput(CreateFlags{});
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(*in, json::object());
}

TEST(CreateInputTest, BadFlagsAreUsageErrorsNamingTheFlag) {
  auto check = [](CreateFlags f, const std::string& flag) {
    auto in = CreateInput(f);
    ASSERT_FALSE(in.ok()) << flag;
    EXPECT_NE(in.error().message.find(flag), std::string::npos) << in.error().message;
  };
  CreateFlags f;
  f.memory = "lots";
  check(f, "--memory");
  f = {};
  f.disk = "2X";
  check(f, "--disk");
  f = {};
  f.cpus = "0";
  check(f, "--cpus");
  f = {};
  f.pids = "-3";
  check(f, "--pids");
  f = {};
  f.env = {"NOEQUALS"};
  check(f, "--env");
  f = {};
  f.labels = {"=v"};
  check(f, "--label");
  f = {};
  f.expires = "1500ms";
  check(f, "--expires");
  f = {};
  f.idle_timeout = "soon";
  check(f, "--idle-timeout");
}

TEST(ExecInputTest, DetachAsksForItWithItsTimeoutAndRefusesStdinAndATerminal) {
  ExecFlags f;
  f.sandbox = "s";
  f.command = {"sleep", "9"};
  f.detach = true;
  auto in = ExecInput(f, "");
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(*in, (json{{"sandbox", "s"}, {"argv", {"sleep", "9"}}, {"detach", true}}));
  f.interactive = true;
  EXPECT_EQ(ExecInput(f, "").error().message,
            "-d cannot be combined with -i or -t: a detached command's stdin is /dev/null");
  f.interactive = false;
  f.tty = true;
  EXPECT_EQ(ExecInput(f, "").error().message,
            "-d cannot be combined with -i or -t: a detached command's stdin is /dev/null");
  f.tty = false;
  f.timeout = "5s";
  in = ExecInput(f, "");
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(*in, (json{{"sandbox", "s"}, {"argv", {"sleep", "9"}}, {"detach", true}, {"timeout", 5}}));
}

TEST(ExecInputTest, Mapping) {
  ExecFlags f;
  f.sandbox = "sb-0123456789abcdef";
  f.command = {"sh", "-c", "echo $A"};
  f.env = {"A=b"};
  f.workdir = "/tmp";
  f.timeout = "2m";
  auto in = ExecInput(f, "ignored without -i");
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(*in, (json{{"sandbox", "sb-0123456789abcdef"},
                       {"argv", {"sh", "-c", "echo $A"}},
                       {"env", {{"A", "b"}}},
                       {"workdir", "/tmp"},
                       {"timeout", 120}}));
  f.interactive = true;
  in = ExecInput(f, std::string("\xff\x00hi", 4));
  ASSERT_TRUE(in.ok());
  EXPECT_EQ((*in)["stdin_base64"], "/wBoaQ==");
  f.timeout = "500ms";
  EXPECT_FALSE(ExecInput(f, "").ok());
  f.timeout = "";
  f.command = {};
  EXPECT_FALSE(ExecInput(f, "").ok());
}

TEST(ExtendInputTest, Mapping) {
  auto in = ExtendInput("web", "24h");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(*in, (json{{"sandbox", "web"}, {"by", 86400}}));
  EXPECT_FALSE(ExtendInput("web", "forever").ok());
}

TEST(CpArgsTest, Directions) {
  auto in = ParseCpArgs("./local.txt", "web:/tmp/x");
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_FALSE(in->src.remote());
  EXPECT_EQ(in->dst.sandbox, "web");
  EXPECT_EQ(in->dst.path, "/tmp/x");

  auto out = ParseCpArgs("sb-0123456789abcdef:/etc/hostname", "-");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->src.sandbox, "sb-0123456789abcdef");
  EXPECT_EQ(out->dst.path, "-");

  // A ':' after a '/' is part of a local name.
  auto colon = ParseCpArgs("./odd:name", "web:/x");
  ASSERT_TRUE(colon.ok());
  EXPECT_EQ(colon->src.path, "./odd:name");

  EXPECT_FALSE(ParseCpArgs("a:/x", "b:/y").ok());
  EXPECT_FALSE(ParseCpArgs("a.txt", "b.txt").ok());
  auto relative = ParseCpArgs("web:etc/x", "here");
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().message.find("must be absolute"), std::string::npos);
}

TEST(ChooseEndpointTest, FlagsOverEnvironmentOverDefault) {
  auto def = ChooseEndpoint({}, nullptr, nullptr);
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->unix_path, "/var/lib/isb/api/isb.sock");

  auto env_socket = ChooseEndpoint({}, "", "/tmp/s.sock");
  ASSERT_TRUE(env_socket.ok());
  EXPECT_EQ(env_socket->unix_path, "/tmp/s.sock");

  auto env_url = ChooseEndpoint({}, "http://127.0.0.1:1234", "/tmp/s.sock");
  ASSERT_TRUE(env_url.ok());
  EXPECT_EQ(env_url->port, 1234);

  auto flag_socket = ChooseEndpoint({"", "/x.sock"}, "http://127.0.0.1:1234", nullptr);
  ASSERT_TRUE(flag_socket.ok());
  EXPECT_EQ(flag_socket->unix_path, "/x.sock");

  auto flag_url = ChooseEndpoint({"http://localhost:5", ""}, nullptr, "/tmp/s.sock");
  ASSERT_TRUE(flag_url.ok());
  EXPECT_EQ(flag_url->host, "localhost");

  EXPECT_FALSE(ChooseEndpoint({"http://h:1", "/x.sock"}, nullptr, nullptr).ok());
  auto bad_env = ChooseEndpoint({}, "ftp://x", nullptr);
  ASSERT_FALSE(bad_env.ok());
  EXPECT_NE(bad_env.error().message.find("ISB_URL"), std::string::npos);
}

TEST(DaemonErrorTest, StatusDecidesWhoFailed) {
  Error nf = DaemonError(404, R"({"error":"not_found","message":"no sandbox 'x'"})");
  EXPECT_EQ(nf.message, "no sandbox 'x'");
  EXPECT_EQ(ExitCodeFor(nf), kExitRefused);

  Error conflict = DaemonError(409, R"({"error":"conflict","message":"name in use"})");
  EXPECT_EQ(ExitCodeFor(conflict), kExitRefused);

  Error internal = DaemonError(500, R"({"error":"internal","message":"boom"})");
  EXPECT_EQ(ExitCodeFor(internal), kExitIsbFailed);

  Error timeout = DaemonError(504, R"({"error":"timeout","message":"slow"})");
  EXPECT_EQ(ExitCodeFor(timeout), kExitIsbFailed);

  Error proxy = DaemonError(502, "<html>bad gateway</html>");
  EXPECT_EQ(ExitCodeFor(proxy), kExitIsbFailed);
  EXPECT_NE(proxy.message.find("HTTP 502"), std::string::npos);

  Error odd = DaemonError(418, R"({"error":"internal","message":"teapot"})");
  EXPECT_EQ(ExitCodeFor(odd), kExitRefused);

  Error auth = DaemonError(401, R"({"error":"unauthenticated","message":"missing bearer token"})");
  EXPECT_EQ(ExitCodeFor(auth), kExitRefused);
  EXPECT_NE(auth.message.find("ISB_TOKEN"), std::string::npos);
}

TEST(FormatTest, ShortUnits) {
  EXPECT_EQ(ShortDuration(-5), "0s");
  EXPECT_EQ(ShortDuration(45), "45s");
  EXPECT_EQ(ShortDuration(300), "5m");
  EXPECT_EQ(ShortDuration(7200), "2h");
  EXPECT_EQ(ShortDuration(7199), "1h59m");
  EXPECT_EQ(ShortDuration(3 * 86400 + 5), "3d");
  EXPECT_EQ(ShortDuration(3 * 86400 + 5 * 3600 + 5), "3d5h");
  EXPECT_EQ(ShortBytes(0), "0B");
  EXPECT_EQ(ShortBytes(1536), "1.5K");
  EXPECT_EQ(ShortBytes(512ull << 20), "512M");
  EXPECT_EQ(ShortBytes(2ull << 30), "2G");
}

TEST(ListTableTest, Columns) {
  json result = {{"sandboxes",
                  {{{"id", "sb-0000000000000001"},
                    {"name", "web"},
                    {"state", "running"},
                    {"spec", {{"mem_limit", 512ull << 20}}},
                    {"created_at", 1000},
                    {"expires_at", 1000 + 86400 - 3600},
                    {"usage", {{"cpu_usec", 1'250'000}, {"memory_bytes", 3670016}, {"pids", 2}}}},
                   {{"id", "sb-0000000000000002"},
                    {"name", ""},
                    {"state", "stopped"},
                    {"created_at", 100},
                    {"expires_at", 500}}}}};
  std::string table = ListTable(result, 1300);
  EXPECT_EQ(table,
            "ID                    NAME   STATE     CPU     MEMORY        AGE   EXPIRES\n"
            "sb-0000000000000001   web    running   1.25s   3.5M / 512M   5m    in 22h55m\n"
            "sb-0000000000000002   -      stopped   0.00s   0B / 0B       20m   expired\n");
  EXPECT_EQ(ListTable(json{{"sandboxes", json::array()}}, 0), "ID   NAME   STATE   CPU   MEMORY   AGE   EXPIRES\n");
}

// ---- whole commands, through CLI11, against a scripted daemon ----

std::string Sse(const std::string& event, const json& data) {
  return "event: " + event + "\ndata: " + data.dump() + "\n\n";
}

TEST(CommandsTest, ExecStreamsOutputAndExitsWithTheCommandsCode) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
    SendAll(fd, Sse("stdout", {{"data", "hello\n"}}));
    SendAll(fd, Sse("stderr", {{"data", "warn\n"}}));
    SendAll(fd, Sse("result", {{"result", {{"exit_code", 3}, {"timed_out", false}, {"stdout", "hello\n"}}}}));
  });
  CmdRun r = RunIsb({"exec", "--socket", server.socket_path(), "--env", "A=1", "--timeout", "5s", "web", "--", "sh",
                     "-c", "echo hello --json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "warn\n");
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(PathOf(seen[0]), "/api/v1/tools/sandbox_exec?stream=1");
  EXPECT_EQ(
      json::parse(BodyOf(seen[0])),
      (json{{"sandbox", "web"}, {"argv", {"sh", "-c", "echo hello --json"}}, {"env", {{"A", "1"}}}, {"timeout", 5}}));
  // The unix socket needs no token, so none is sent.
  EXPECT_EQ(seen[0].head.find("Authorization"), std::string::npos);
}

TEST(CommandsTest, ExecErrorEventIsReported) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" +
                    Sse("error", {{"error", "conflict"}, {"message", "sandbox web is stopped"}}));
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "exec", "web", "--", "true"});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_EQ(r.err, "isb: sandbox web is stopped\n");
}

TEST(CommandsTest, ExecStreamCutBeforeTheResultIsIsbFailing) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + Sse("stdout", {{"data", "partial"}}) +
                    "event: result\ndata: {\"res");
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "exec", "web", "--", "true"});
  EXPECT_EQ(r.exit_code, kExitIsbFailed);
  EXPECT_EQ(r.out, "partial");
  EXPECT_NE(r.err.find("without a result"), std::string::npos) << r.err;
}

// A daemon killed mid-command leaves a chunked body without its last chunk.
TEST(CommandsTest, ExecConnectionLostMidStreamIsIsbFailing) {
  TestServer server([](int fd, const SeenRequest&) {
    std::string ev = Sse("stdout", {{"data", "started\n"}});
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", ev.size());
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    std::string(size) + ev + "\r\n");
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "exec", "web", "--", "true"});
  EXPECT_EQ(r.exit_code, kExitIsbFailed);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_NE(r.err.find("lost the isb daemon before the command finished"), std::string::npos) << r.err;
}

// Runs `isb exec -d` with `fd` as its standard input (the fd is closed).
CmdRun ExecDetachedWithStdin(const TestServer& server, int fd) {
  const int saved_stdin = ::dup(STDIN_FILENO);
  ::dup2(fd, STDIN_FILENO);
  ::close(fd);
  CmdRun r = RunIsb({"--socket", server.socket_path(), "exec", "-d", "web", "--", "cat"}, {}, /*keep_stdin=*/true);
  ::dup2(saved_stdin, STDIN_FILENO);
  ::close(saved_stdin);
  return r;
}

// A pipe holding `data`, its writer closed; returns its reading end.
int PipeHolding(const std::string& data) {
  int p[2];
  if (::pipe(p) != 0) return -1;
  EXPECT_EQ(::write(p[1], data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ::close(p[1]);
  return p[0];
}

// -d cannot pass standard input: data piped or redirected in is said to stay behind (a shell loop that reads its
// own input leaves the rest on each command's stdin, so it is not refused); an empty pipe or a file read to its end
// is no reason to say anything. The command is started either way, without the input.
TEST(CommandsTest, ExecDetachSaysStandardInputThatHoldsDataIsNotPassed) {
  TestServer server(
      [](int fd, const SeenRequest&) { SendAll(fd, JsonAnswer(200, R"({"result":{"detached":true,"log_id":1}})")); });
  const std::string said =
      "isb: standard input is not passed to a detached command (its stdin is /dev/null); copy data into the sandbox "
      "with isb cp\n";
  CmdRun r = ExecDetachedWithStdin(server, PipeHolding("input\n"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  EXPECT_EQ(r.err, said);
  const std::string file = server.dir() + "/input";
  std::ofstream(file) << "input\n";
  r = ExecDetachedWithStdin(server, ::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, said);

  r = ExecDetachedWithStdin(server, PipeHolding(""));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  EXPECT_EQ(r.err, "");
  const int read_to_end = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(::lseek(read_to_end, 0, SEEK_END), 6);
  r = ExecDetachedWithStdin(server, read_to_end);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 4u);
  for (const SeenRequest& req : seen) {
    json body = json::parse(BodyOf(req));
    EXPECT_EQ(body["detach"], true);
    EXPECT_FALSE(body.contains("stdin_base64")) << body.dump();
  }
  ::unlink(file.c_str());
}

// -t without -i: a terminal exec whose output is live; nothing is typed, so no input call is made.
TEST(CommandsTest, ExecTtyAsksForATerminalAndFollowsTheSession) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
    SendAll(fd, Sse("session", {{"session", "ts-0123"}}));
    SendAll(fd, Sse("stdout", {{"data", "on a tty\r\n"}}));
    SendAll(fd, Sse("result", {{"result", {{"exit_code", 4}, {"timed_out", false}, {"session", "ts-0123"}}}}));
  });
  CmdRun r = RunIsb({"exec", "--socket", server.socket_path(), "-t", "web", "--", "tty"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.out, "on a tty\r\n");
  EXPECT_EQ(r.err, "");
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(PathOf(seen[0]), "/api/v1/tools/sandbox_exec?stream=1");
  json body = json::parse(BodyOf(seen[0]));
  EXPECT_EQ(body["tty"], true);
  EXPECT_EQ(body["timeout"], 900) << "a terminal defaults to the longest timeout";
  EXPECT_EQ(body["argv"], json({"tty"}));
  EXPECT_TRUE(body["rows"].is_number_integer() && body["cols"].is_number_integer()) << body.dump();
  EXPECT_FALSE(body.contains("stdin_base64"));
}

// -it: input the daemon refused for too many calls at once took nothing, so it is sent again (nothing typed is
// lost); a failure of another kind is said on stderr, and no more input is sent, while the command's output and
// exit code still come through.
TEST(CommandsTest, ExecItSendsRefusedInputAgainAndSaysWhenInputStops) {
  std::mutex mu;
  std::condition_variable cv;
  int inputs = 0;
  bool finish = false;
  TestServer server(
      [&](int fd, const SeenRequest& req) {
        if (PathOf(req) == "/api/v1/tools/sandbox_exec?stream=1") {
          SendAll(fd,
                  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + Sse("session", {{"session", "ts-1"}}));
          std::unique_lock lock(mu);
          cv.wait_for(lock, std::chrono::seconds(20), [&] { return finish; });
          SendAll(fd, Sse("stdout", {{"data", "done\r\n"}}) +
                          Sse("result", {{"result", {{"exit_code", 5}, {"timed_out", false}, {"session", "ts-1"}}}}));
          return;
        }
        int n = 0;
        {
          std::lock_guard lock(mu);
          n = ++inputs;
        }
        cv.notify_all();
        if (n == 1) {
          SendAll(fd, JsonAnswer(429, R"({"error":"rate_limited","message":"this account has 64 calls running"})"));
        } else if (n == 2) {
          SendAll(fd, JsonAnswer(200, R"({"result":{}})"));
        } else {
          SendAll(fd, JsonAnswer(500, R"({"error":"internal","message":"the input could not be delivered"})"));
        }
      },
      true, /*concurrent=*/true);
  auto wait_for_inputs = [&](int want) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return inputs >= want; });
  };
  // Standard input is a pipe the test types into.
  int keys[2];
  ASSERT_EQ(::pipe(keys), 0);
  const int saved_stdin = ::dup(STDIN_FILENO);
  ASSERT_EQ(::dup2(keys[0], STDIN_FILENO), STDIN_FILENO);
  ::close(keys[0]);
  CmdRun r;
  std::thread cli([&] {
    r = RunIsb({"--socket", server.socket_path(), "exec", "-i", "-t", "web", "--", "cat"}, {}, /*keep_stdin=*/true);
  });
  ASSERT_EQ(::write(keys[1], "one", 3), 3);
  EXPECT_TRUE(wait_for_inputs(2));
  ASSERT_EQ(::write(keys[1], "two", 3), 3);
  EXPECT_TRUE(wait_for_inputs(3));
  ASSERT_EQ(::write(keys[1], "three", 5), 5);
  ::close(keys[1]);
  {
    std::lock_guard lock(mu);
    finish = true;
  }
  cv.notify_all();
  cli.join();
  ::dup2(saved_stdin, STDIN_FILENO);
  ::close(saved_stdin);

  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(r.out, "done\r\n");
  EXPECT_EQ(r.err,
            "\r\nisb: typing into the terminal failed: the input could not be delivered; no more input is sent "
            "(Ctrl-C ends isb and the command)\r\n");
  std::vector<std::string> sent;
  for (const SeenRequest& req : server.requests()) {
    if (PathOf(req) != "/api/v1/tools/sandbox_exec_input") continue;
    json body = json::parse(BodyOf(req));
    EXPECT_EQ(body["session"], "ts-1");
    auto data = Base64Decode(body.value("data_base64", ""));
    sent.push_back(body.contains("eof") ? "EOF" : data.ok() ? *data : "?");
  }
  // "one" twice (refused, then taken), "two" (failed); neither "three" nor the end of input after that.
  EXPECT_EQ(sent, (std::vector<std::string>{"one", "one", "two"}));
}

TEST(CommandsTest, ExecTtyWithJsonIsAUsageError) {
  CmdRun r = RunIsb({"--socket", "/nonexistent/isb.sock", "exec", "-t", "--json", "web", "--", "sh"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_EQ(r.err, "isb: --json cannot be combined with -t: a terminal's output is live\n");
}

TEST(CommandsTest, ExecJsonUsesThePlainCall) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(200, R"({"result":{"exit_code":0,"timed_out":false,"stdout":"x"}})"));
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "exec", "--json", "web", "--", "echo", "x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["stdout"], "x");
  EXPECT_EQ(PathOf(server.requests()[0]), "/api/v1/tools/sandbox_exec");
}

TEST(CommandsTest, CreatePrintsTheId) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(200, R"({"result":{"id":"sb-00000000000000aa","state":"running"}})"));
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "create", "--name", "web", "--memory", "256M", "--label", "a=b",
                     "--label", "c=d", "--expires", "1h"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "sb-00000000000000aa\n");
  auto seen = server.requests();
  EXPECT_EQ(PathOf(seen[0]), "/api/v1/tools/sandbox_create");
  EXPECT_EQ(
      json::parse(BodyOf(seen[0])),
      (json{{"name", "web"}, {"mem_limit", 256u << 20}, {"labels", {{"a", "b"}, {"c", "d"}}}, {"expires", 3600}}));
}

TEST(CommandsTest, RefusalsNameTheFlagRatherThanTheSchemaField) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(400, R"({"error":"invalid_argument","message":"mem_limit: must be at least 1 MiB"})"));
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "create", "--memory", "10"});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_EQ(r.err, "isb: --memory (mem_limit): must be at least 1 MiB\n");
  // A message that merely starts like a field name is left alone.
  TestServer other([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(409, R"({"error":"conflict","message":"names are unique"})"));
  });
  r = RunIsb({"--socket", other.socket_path(), "create", "--name", "x"});
  EXPECT_EQ(r.err, "isb: names are unique\n");
}

TEST(CommandsTest, UsageErrorsExitTwoWithoutCallingTheDaemon) {
  CmdRun r = RunIsb({"--socket", "/nonexistent/isb.sock", "create", "--memory", "much"});
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_NE(r.err.find("--memory"), std::string::npos) << r.err;
  EXPECT_EQ(RunIsb({"extend", "web"}).exit_code, kExitUsage);
  EXPECT_EQ(RunIsb({"cp", "a", "b"}).exit_code, kExitUsage);
  EXPECT_EQ(RunIsb({"--url", "https://h:1", "ls"}).exit_code, kExitUsage);
  EXPECT_EQ(RunIsb({"--url", "http://h:1", "--socket", "/s", "ls"}).exit_code, kExitUsage);
  EXPECT_EQ(RunIsb({"exec", "web", "ls", "-l"}).exit_code, kExitUsage);
}

TEST(CommandsTest, RefusalExitsOneUnreachableExits125) {
  TestServer server([](int fd, const SeenRequest&) {
    SendAll(fd, JsonAnswer(404, R"({"error":"not_found","message":"no sandbox 'ghost'"})"));
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "inspect", "ghost"});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_EQ(r.err, "isb: no sandbox 'ghost'\n");

  CmdRun down = RunIsb({"ls", "--socket", "/nonexistent/isb.sock"});
  EXPECT_EQ(down.exit_code, kExitIsbFailed);
  EXPECT_NE(down.err.find("is `isb serve` running?"), std::string::npos) << down.err;
}

TEST(CommandsTest, RmGoesOnAfterAFailureAndReportsTheWorst) {
  TestServer server([](int fd, const SeenRequest& req) {
    if (req.body.find("ghost") != std::string::npos) {
      SendAll(fd, JsonAnswer(404, R"({"error":"not_found","message":"no sandbox 'ghost'"})"));
    } else {
      SendAll(fd, JsonAnswer(200, R"({"result":{"sandbox":"a","removed":true}})"));
    }
  });
  CmdRun r = RunIsb({"--socket", server.socket_path(), "rm", "ghost", "a"});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_EQ(r.out, "a\n");
  EXPECT_EQ(server.requests().size(), 2u);
}

// The unix socket's caller is trusted without a token; ISB_TOKEN is for HTTP only and is not spread further.
TEST(CommandsTest, TokenIsNotSentOverTheUnixSocket) {
  TestServer server([](int fd, const SeenRequest&) { SendAll(fd, JsonAnswer(200, R"({"result":{"ok":1}})")); });
  Endpoint unix_ep;
  unix_ep.unix_path = server.socket_path();
  auto r = ToolClient(HttpClient(unix_ep), "secret").Call("sandbox_list", json::object());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(server.requests()[0].head.find("secret"), std::string::npos);
}

TEST(CommandsTest, CopyInKeepsTheModeAndCopyOutWritesTheFile) {
  TestServer server([](int fd, const SeenRequest& req) {
    if (req.head.find("sandbox_file_write") != std::string::npos) {
      SendAll(fd, JsonAnswer(200, R"({"result":{"path":"/tmp/run.sh","size":10,"mode":"0750"}})"));
    } else {
      SendAll(fd, JsonAnswer(200, R"({"result":{"path":"/etc/motd","size":3,"mode":"0600","content_base64":"AP9h"}})"));
    }
  });
  std::string local = server.dir() + "/run.sh";
  {
    std::ofstream f(local);
    f << "#!/bin/sh\n";
  }
  ASSERT_EQ(::chmod(local.c_str(), 0750), 0);
  CmdRun in = RunIsb({"--socket", server.socket_path(), "cp", local, "web:/tmp/"});
  EXPECT_EQ(in.exit_code, 0) << in.err;
  json sent = json::parse(server.requests()[0].body);
  EXPECT_EQ(
      sent,
      (json{{"sandbox", "web"}, {"path", "/tmp/run.sh"}, {"content_base64", "IyEvYmluL3NoCg=="}, {"mode", "0750"}}));

  CmdRun out = RunIsb({"--socket", server.socket_path(), "cp", "web:/etc/motd", server.dir()});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  json asked = json::parse(server.requests()[1].body);
  EXPECT_EQ(asked, (json{{"sandbox", "web"}, {"path", "/etc/motd"}, {"encoding", "base64"}}));
  std::ifstream f(server.dir() + "/motd", std::ios::binary);
  std::stringstream got;
  got << f.rdbuf();
  EXPECT_EQ(got.str(), std::string("\0\xff"
                                   "a",
                                   3));

  CmdRun to_stdout = RunIsb({"--socket", server.socket_path(), "cp", "web:/etc/motd", "-"});
  EXPECT_EQ(to_stdout.exit_code, 0);
  EXPECT_EQ(to_stdout.out, std::string("\0\xff"
                                       "a",
                                       3));
}

TEST(CommandsTest, CopyInRefusesWhatTheDaemonWouldRefuse) {
  char tmpl[] = "/tmp/isb-cli-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string big = std::string(tmpl) + "/big";
  {
    std::ofstream f(big);
    f << std::string((2u << 20) + 1, 'b');
  }
  CmdRun r = RunIsb({"--socket", "/nonexistent/isb.sock", "cp", big, "web:/big"});
  EXPECT_EQ(r.exit_code, kExitRefused);
  EXPECT_NE(r.err.find("larger than 2M"), std::string::npos) << r.err;
  CmdRun dir = RunIsb({"--socket", "/nonexistent/isb.sock", "cp", tmpl, "web:/d"});
  EXPECT_EQ(dir.exit_code, kExitUsage);
  CmdRun missing = RunIsb({"--socket", "/nonexistent/isb.sock", "cp", std::string(tmpl) + "/nope", "web:/d"});
  EXPECT_EQ(missing.exit_code, kExitRefused);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos);
  ::unlink(big.c_str());
  ::rmdir(tmpl);
}

}  // namespace
}  // namespace isb::cli
