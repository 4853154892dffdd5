// Secrets from inside real sandboxes, with real clients (curl, python, node): the sandbox holds a placeholder, the
// proxy swaps it for the value on the way to an approved host (header, Basic auth, query, JSON and form bodies,
// chunked or not, WebSocket), and turns the value back into the placeholder in every answer (plain, gzip, deflate,
// br, zstd, chunked, WebSocket). The origin (echo_origin.py) answers with exactly what it received and logs it, so
// the log shows what left isb and the answer shows what the sandbox saw. The value is never printed by a failure.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "e2e/origin_fixture.h"

namespace isb::e2e {
namespace {

// The secret's value. Tests match it in the sandbox with kValuePattern, a regex that is not the value itself, so no
// command line inside ever holds it.
constexpr char kValue[] = "sk-live-8f3Kq9ZtW2xYvB7nR4mPe";
constexpr char kValuePattern[] = "sk-live-8f3Kq9Zt[W]2xYvB7nR4mPe";

// `text` with the value shown as <VALUE>, for failure messages.
std::string Shown(std::string text) {
  for (size_t at = text.find(kValue); at != std::string::npos; at = text.find(kValue, at))
    text.replace(at, sizeof kValue - 1, "<VALUE>");
  return text;
}

bool HasValue(const std::string& text) { return text.find(kValue) != std::string::npos; }

class SecretsTest : public OriginTest {
 protected:
  // The echo origin: HTTPS on port_ (echo.test, ws on ws_port_ as ws.test), plain HTTP on plain_port_ (plain.test),
  // each name pinned; the daemon trusts the origin's certificate.
  void StartEcho() {
    PrepareOrigin();
    ws_port_ = FreeLoopbackPort();
    plain_port_ = FreeLoopbackPort();
    ProcResult gen = RunProcess({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                                 "-nodes", "-days", "1", "-subj", "/CN=echo.test", "-addext",
                                 "subjectAltName=DNS:echo.test,DNS:ws.test,DNS:other.test", "-keyout",
                                 origin_dir_ + "/key.pem", "-out", origin_dir_ + "/cert.pem"});
    ASSERT_EQ(gen.exit_status, 0) << gen.Describe();
    log_ = origin_dir_ + "/received.log";
    const std::string probe = "https://echo.test:" + std::to_string(port_) + "/probe";
    bool up = RunOrigin({"/usr/bin/python3", ISB_ECHO_ORIGIN, std::to_string(port_), std::to_string(ws_port_),
                         std::to_string(plain_port_), origin_dir_ + "/cert.pem", origin_dir_ + "/key.pem", log_},
                        [&] {
                          return RunProcess({"curl", "-s", "-m", "1", "-o", "/dev/null", "-w", "%{http_code}",
                                             "--cacert", origin_dir_ + "/cert.pem", "--resolve",
                                             "echo.test:" + std::to_string(port_) + ":127.0.0.1", probe})
                                     .out == "200";
                        });
    ASSERT_TRUE(up) << "the echo origin did not come up";
    ASSERT_EQ(StopDaemon(), 0);
    const std::string at = "=127.0.0.1:";
    StartDaemon({"--egress-ca", origin_dir_ + "/cert.pem", "--egress-pin", "echo.test" + at + std::to_string(port_),
                 "--egress-pin", "other.test" + at + std::to_string(port_), "--egress-pin",
                 "ws.test" + at + std::to_string(ws_port_), "--egress-pin",
                 "plain.test" + at + std::to_string(plain_port_)});
  }

  // What the origin received since the last call.
  std::string Received() {
    std::string all = ReadFileOrEmpty(log_);
    std::string fresh = all.substr(std::min(seen_, all.size()));
    seen_ = all.size();
    return fresh;
  }

  // sh -c SCRIPT inside, with the secret's placeholder in $KEY: stdout.
  std::string Sh(const std::string& id, const std::string& script) {
    json r = Exec(id, {"sh", "-c", script});
    EXPECT_EQ(r["exit_code"], 0) << Shown(r.dump());
    return r.value("stdout", "");
  }

  std::string CreateWithKey(const json& egress) {
    std::string id = CreateSandbox({{"egress", egress}});
    placeholder_ = MustTool("sandbox_get", {{"sandbox", id}})["spec"]["environment"].value("KEY", "");
    return id;
  }

  int ws_port_ = 0, plain_port_ = 0;
  std::string log_, placeholder_;
  size_t seen_ = 0;
};

TEST_F(SecretsTest, APlaceholderIsSwappedInEveryPartOfARequestAndTheValueNeverComesBack) {
  StartEcho();
  // Opted in to the query and bodies (headers are always): the echo origin's answers are scrubbed.
  MustTool("secret_create", {{"name", "api-key"},
                             {"value", kValue},
                             {"hosts", {"echo.test", "ws.test"}},
                             {"substitute", {"header", "query", "body"}}});
  std::string id = CreateWithKey({{"allow", json::array()}, {"secrets", {{{"name", "api-key"}, {"env", "KEY"}}}}});
  ASSERT_FALSE(id.empty());
  // The sandbox holds a placeholder, stable for it and the variable; its spec names the secret's hosts.
  ASSERT_EQ(placeholder_.size(), 16u + 32u);
  EXPECT_EQ(placeholder_.substr(0, 16), "isb_placeholder_");
  json spec = MustTool("sandbox_get", {{"sandbox", id}})["spec"];
  EXPECT_EQ(spec["egress"], json::parse(R"({"allow": ["echo.test:443", "ws.test:443"],
      "secrets": [{"name": "api-key", "env": "KEY", "hosts": ["echo.test:443", "ws.test:443"]}]})"));
  Received();

  struct Case {
    const char* what;
    std::string script;         // run inside; its answer must hold the placeholder and not the value
    std::string received;       // what the origin must have been sent
    std::string answered = "";  // what the answer must hold; default the placeholder
  };
  const std::string basic = "Authorization: Basic " + Base64("user:" + std::string(kValue));
  const Case cases[] = {
      {"a header", "curl -s -H \"Authorization: Bearer $KEY\" https://echo.test/h",
       "Authorization: Bearer " + std::string(kValue)},
      // The echo's base64 of the value is scrubbed into the placeholder's, but for the run's last characters.
      {"basic auth", "curl -s -u \"user:$KEY\" https://echo.test/b", basic,
       "Authorization: Basic " + Base64("user:" + placeholder_).substr(0, 68)},
      {"the query", "curl -s \"https://echo.test/q?key=$KEY&x=1\"",
       "GET /q?key=" + std::string(kValue) + "&x=1 HTTP/1.1"},
      {"a JSON body",
       "curl -s -H 'Content-Type: application/json' -d \"{\\\"key\\\": \\\"$KEY\\\"}\" https://echo.test/j",
       "{\"key\": \"" + std::string(kValue) + "\"}"},
      {"a form body", "curl -s --data-urlencode \"key=$KEY\" https://echo.test/f", "key=" + std::string(kValue)},
      {"a chunked body",
       "printf 'a%.0s' $(seq 1 5000) > /tmp/pad; { cat /tmp/pad; printf \"$KEY\"; cat /tmp/pad; } > /tmp/body; "
       "curl -s -H 'Transfer-Encoding: chunked' --data-binary @/tmp/body https://echo.test/c | tail -c 6000",
       std::string(kValue) + "aaaa"},
      {"python",
       "python3 -c \"import os, urllib.request as u; print(u.urlopen(u.Request('https://echo.test/p', "
       "headers={'X-Api-Key': os.environ['KEY']})).read().decode())\"",
       "X-Api-Key: " + std::string(kValue)},
      {"node",
       "node -e \"fetch('https://echo.test/n', {headers: {'x-api-key': process.env.KEY}})"
       ".then(r => r.text()).then(t => console.log(t))\"",
       "x-api-key: " + std::string(kValue)},
  };
  for (const Case& c : cases) {
    std::string answer = Sh(id, c.script);
    std::string received = Received();
    EXPECT_NE(received.find(c.received), std::string::npos) << c.what << ": the origin got " << Shown(received);
    EXPECT_FALSE(HasValue(answer)) << c.what << ": the sandbox saw the value: " << Shown(answer);
    EXPECT_NE(answer.find(c.answered.empty() ? placeholder_ : c.answered), std::string::npos)
        << c.what << ": " << Shown(answer);
  }

  // Every answer the origin encodes or chunks is scrubbed too; the sandbox's Accept-Encoding is what the origin got.
  for (const char* form : {"gzip", "deflate", "br", "zstd", "chunked", "json"}) {
    std::string answer =
        Sh(id, std::string("curl -s -i --compressed -H \"X-Api-Key: $KEY\" https://echo.test/") + form);
    std::string received = Received();
    EXPECT_NE(received.find("X-Api-Key: " + std::string(kValue)), std::string::npos) << form << ": " << Shown(received);
    EXPECT_NE(received.find("Accept-Encoding: deflate, gzip, br, zstd"), std::string::npos)
        << form << ": " << Shown(received);
    EXPECT_FALSE(HasValue(answer)) << form << ": " << Shown(answer);
    EXPECT_NE(answer.find("X-Api-Key: " + placeholder_), std::string::npos) << form << ": " << Shown(answer);
  }
  // The origin's header naming the value comes back with the placeholder.
  std::string head = Sh(id, "curl -s -o /dev/null -D - -H \"Authorization: Bearer $KEY\" https://echo.test/h");
  EXPECT_NE(head.find("X-Echo-Authorization: Bearer " + placeholder_), std::string::npos) << Shown(head);

  // WebSocket (permessage-deflate, as the library offers it): swapped on the way out, scrubbed on the way back.
  std::string ws = Sh(id,
                      "python3 -c \"import asyncio, os, websockets\n"
                      "async def main():\n"
                      "  async with websockets.connect('wss://ws.test/') as s:\n"
                      "    await s.send('key ' + os.environ['KEY'])\n"
                      "    print(await s.recv())\n"
                      "asyncio.run(main())\"");
  EXPECT_EQ(ws, "echo: key " + placeholder_ + "\n") << Shown(ws);
  EXPECT_NE(Received().find("ws: key " + std::string(kValue)), std::string::npos);

  // What the proxy did, by secret: 15 requests and a WebSocket message swapped, as many answers scrubbed.
  json use = MustTool("sandbox_get", {{"sandbox", id}})["secrets"]["api-key"];
  EXPECT_GE(use.value("swapped", 0), 16) << use.dump();
  EXPECT_GE(use.value("scrubbed", 0), 16) << use.dump();
  EXPECT_EQ(use.value("held", -1), 0) << use.dump();

  // Nothing the sandbox can read holds the value: its environment and every process's, its files.
  std::string scan =
      Sh(id, std::string("cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | grep -ac '") + kValuePattern +
                 "'; grep -rlI '" + kValuePattern + "' /etc /tmp /root /run /var /home /dev/shm 2>/dev/null; true");
  EXPECT_EQ(scan, "0\n") << Shown(scan);
  // Nor the sandbox's spec, the daemon's log, the state dir (beside the age files) or the audit log.
  EXPECT_FALSE(HasValue(MustTool("sandbox_get", {{"sandbox", id}}).dump()));
  EXPECT_FALSE(HasValue(DaemonLog()));
  ProcResult grep = RunProcess({"sh", "-c",
                                "find '" + state_dir() +
                                    "' -type f -size -64M ! -name '*.age' -print0 | "
                                    "xargs -0 grep -la -e '" +
                                    kValuePattern + "'; true"});
  EXPECT_EQ(grep.out, "") << "files in the state dir hold the value";
  // The read of the value is an audit row; the value is not in it.
  EXPECT_EQ(MustTool("secret_get", {{"name", "api-key"}}).value("value", ""), kValue);
  json rows = MustTool("audit_list", {{"action", "secret_get"}})["records"];
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["details"], json({{"name", "api-key"}}));
}

// A placeholder headed where its secret may not go (here plain HTTP to another host) goes as it is with on_leak
// pass, is refused with block, and stops the sandbox with stop; each is an audit row naming the secret and host.
TEST_F(SecretsTest, APlaceholderHeadedElsewhereIsPassedRefusedOrStopsTheSandbox) {
  StartEcho();
  MustTool("secret_create", {{"name", "api-key"}, {"value", kValue}, {"hosts", {"echo.test"}}});
  auto egress = [](const char* on_leak) {
    return json{
        {"allow", {"plain.test:80"}}, {"on_leak", on_leak}, {"secrets", {{{"name", "api-key"}, {"env", "KEY"}}}}};
  };
  std::string pass = CreateWithKey(egress("pass"));
  Received();
  std::string answer = Sh(pass, "curl -s -H \"X-Key: $KEY\" http://plain.test/");
  EXPECT_NE(Received().find("X-Key: " + placeholder_), std::string::npos);
  EXPECT_NE(answer.find("X-Key: " + placeholder_), std::string::npos) << Shown(answer);

  std::string block = CreateWithKey(egress("block"));
  answer = Sh(block, "curl -s -w ' %{http_code}' -H \"X-Key: $KEY\" http://plain.test/");
  EXPECT_EQ(answer, "isb: secret api-key may not be sent to plain.test\n 403") << Shown(answer);
  EXPECT_EQ(Received(), "");

  std::string stop = CreateWithKey(egress("stop"));
  // Stopped under the exec that sent it.
  HttpResponse sent =
      Tool("sandbox_exec",
           {{"sandbox", stop}, {"argv", {"sh", "-c", "curl -s -H \"X-Key: $KEY\" http://plain.test/; sleep 10"}}});
  EXPECT_EQ(sent.status, 503) << Shown(sent.Describe());
  EXPECT_EQ(sent.j.value("message", ""), "the sandbox stopped during the exec") << Shown(sent.Describe());
  std::string state;
  for (int i = 0; i < 50 && state != "stopped"; ++i) {
    ::usleep(100000);
    state = MustTool("sandbox_get", {{"sandbox", stop}}).value("state", "");
  }
  EXPECT_EQ(state, "stopped");
  EXPECT_EQ(Received(), "");

  EXPECT_EQ(MustTool("sandbox_get", {{"sandbox", block}})["secrets"]["api-key"]["held"], 1);
  json rows = MustTool("audit_list", {{"action", "secret_leak"}})["records"];
  std::vector<std::string> seen;
  for (const json& r : rows)
    seen.push_back(r.value("actor", "") + " " + r["details"].value("secret", "") + " " +
                   r["details"].value("host", "") + " " + r["details"].value("action", "") + " " +
                   r.value("outcome", ""));
  EXPECT_EQ(seen, (std::vector<std::string>{"sandbox:" + pass + " api-key plain.test:80 pass ok",
                                            "sandbox:" + block + " api-key plain.test:80 block forbidden",
                                            "sandbox:" + stop + " api-key plain.test:80 stop forbidden"}));
}

// A secret's hosts bound a sandbox: a spec may narrow them, never widen them; a secret with no hosts, one that does
// not exist, or one too long for a header cannot be a placeholder.
TEST_F(SecretsTest, ASandboxMayNarrowASecretsHostsButNotWidenThem) {
  MustTool("secret_create", {{"name", "api-key"}, {"value", kValue}, {"hosts", {"*.example.com"}}});
  MustTool("secret_create", {{"name", "files-only"}, {"value", "x"}});
  MustTool("secret_create", {{"name", "two-lines"}, {"value", "line-one\nline-two"}, {"hosts", {"a.example.com"}}});
  auto create = [&](const json& secret) {
    return Tool("sandbox_create", {{"egress", {{"allow", json::array()}, {"secrets", {secret}}}}});
  };
  HttpResponse narrowed = create({{"name", "api-key"}, {"hosts", {"api.example.com"}}});
  ASSERT_EQ(narrowed.status, 200) << narrowed.Describe();
  TrackFrom(narrowed.j["result"]);
  EXPECT_EQ(narrowed.j["result"]["spec"]["egress"]["allow"], json::array({"api.example.com:443"}));
  HttpResponse widened = create({{"name", "api-key"}, {"hosts", {"evil.test"}}});
  EXPECT_EQ(widened.status, 403) << widened.Describe();
  EXPECT_EQ(widened.j["message"],
            "egress: secret 'api-key' may not be sent to evil.test:443: the secret allows only its own hosts "
            "(secret_inspect)");
  HttpResponse none = create("files-only");
  EXPECT_EQ(none.status, 403) << none.Describe();
  EXPECT_EQ(none.j["message"],
            "egress: secret 'files-only' may be sent to no host: an admin names its hosts (secret_set hosts)");
  HttpResponse missing = create("nope");
  EXPECT_EQ(missing.status, 404) << missing.Describe();
  EXPECT_EQ(missing.j["message"], "egress: secret 'nope': org 'default' has no such secret");
  HttpResponse lines = create("two-lines");
  EXPECT_EQ(lines.status, 400) << lines.Describe();
  EXPECT_EQ(lines.j["message"],
            "egress: secret 'two-lines': value: holds a CR or LF, which a placeholder cannot "
            "carry into an HTTP header; deliver it as a file instead, which takes any bytes");
}

// A secret given as a file: on the sandbox's own tmpfs at /run/secrets, owned by its user with the mode asked for,
// rewritten when the secret gets a new version and removed when it is deleted; the spec keeps names and places
// only. Whoever execs in the sandbox reads the file, so a deploy token (no secret_get) may not give one.
TEST_F(SecretsTest, ASecretFileIsOnTheSandboxsOwnTmpfsAndFollowsItsSecret) {
  MustTool("secret_create", {{"name", "db-pass"}, {"value", "first-version"}});
  std::string id = CreateSandbox(
      {{"secrets", {"db-pass", {{"name", "db-pass"}, {"target", "/run/secrets/copy"}, {"mode", "0440"}}}}});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Exec(id, {"cat", "/run/secrets/db-pass"})["stdout"], "first-version");
  EXPECT_EQ(Exec(id, {"stat", "-c", "%a %u %g", "/run/secrets/db-pass", "/run/secrets/copy"})["stdout"],
            "400 0 0\n440 0 0\n");
  EXPECT_EQ(Exec(id, {"stat", "-f", "-c", "%T", "/run/secrets"})["stdout"], "tmpfs\n");
  EXPECT_EQ(MustTool("sandbox_get", {{"sandbox", id}})["spec"]["secrets"],
            json::parse(R"([{"name": "db-pass", "target": "/run/secrets/db-pass", "mode": "0400"},
                            {"name": "db-pass", "target": "/run/secrets/copy", "mode": "0440"}])"));
  // Not on the sandbox's root file system (its layer): a device of its own.
  std::string devices = Exec(id, {"stat", "-c", "%d", "/", "/run/secrets"})["stdout"];
  EXPECT_NE(devices.substr(0, devices.find('\n')), devices.substr(devices.find('\n') + 1)) << devices;
  MustTool("secret_set", {{"name", "db-pass"}, {"value", "second-version"}});
  EXPECT_EQ(Exec(id, {"cat", "/run/secrets/db-pass", "/run/secrets/copy"})["stdout"], "second-versionsecond-version");
  MustTool("secret_delete", {{"name", "db-pass"}});
  EXPECT_EQ(Exec(id, {"ls", "-A", "/run/secrets"})["stdout"], "");

  MustTool("secret_create", {{"name", "db-pass"}, {"value", "third"}});
  std::string deploy =
      MustTool("token_create", {{"name", "dep"}, {"user", "e2e"}, {"scopes", "deploy"}}).value("token", "");
  CurlResult refused = CurlTcp("POST", "/api/v1/tools/sandbox_create", R"({"secrets": ["db-pass"]})",
                               {"Content-Type: application/json"}, deploy);
  EXPECT_EQ(refused.http.status, 403) << refused.http.body;
  EXPECT_EQ(refused.http.j.value("message", ""),
            "secrets: whoever execs in the sandbox reads its secret files, so giving them takes what secret_get "
            "takes: token scopes (deploy) do not cover secret_get; it needs scope admin, or tool:secret_get");
}

// `isb secret`: the value from stdin (one final newline dropped) or a file (bytes as they are, text or not), back
// from `get` byte for byte; `ls` and `inspect` never show it; `rm` removes it.
TEST_F(SecretsTest, TheCliTakesValuesFromStdinOrAFileAndGivesThemBackByteForByte) {
  ProcResult made =
      Isb({"secret", "create", "cli-key", "--host", "api.example.com", "--label", "team=blue"}, "typed-value\n");
  ExpectAudit("isb secret create", {Unix("secret_create")});
  ASSERT_EQ(made.exit_status, 0) << made.Describe();
  EXPECT_EQ(made.out, "cli-key v1 hosts=api.example.com:443\n");
  ProcResult got = Isb({"secret", "get", "cli-key"});
  ExpectAudit("isb secret get", {Unix("secret_get")});
  EXPECT_EQ(got.exit_status, 0) << got.Describe();
  EXPECT_EQ(got.out, "typed-value");
  // isb create --secret: the sandbox holds a placeholder in the variable named, never the value.
  ProcResult made_sandbox = Isb({"create", "--name", "with-secret", "--secret", "cli-key=KEY"});
  ExpectAudit("isb create --secret", {Unix("sandbox_create")});
  ASSERT_EQ(made_sandbox.exit_status, 0) << made_sandbox.Describe();
  ProcResult env = Isb({"exec", "with-secret", "--", "sh", "-c", "echo \"$KEY\""});
  ExpectAudit("isb exec echo $KEY", {Unix("sandbox_exec")});
  EXPECT_TRUE(env.out.starts_with("isb_placeholder_")) << env.Describe();
  EXPECT_EQ(env.out.find("typed-value"), std::string::npos);
  ASSERT_EQ(Isb({"rm", "with-secret"}).exit_status, 0);
  ExpectAudit("isb rm with-secret", {Unix("sandbox_remove")});

  const std::string bytes = std::string("\xff\x00binary\n", 9);  // at least 8 bytes: the secret has hosts
  std::ofstream(temp_dir() + "/value.bin", std::ios::binary) << bytes;
  ProcResult set = Isb({"secret", "set", "cli-key", "--from-file", temp_dir() + "/value.bin"});
  ExpectAudit("isb secret set", {Unix("secret_set")});
  EXPECT_EQ(set.out, "cli-key v2 hosts=api.example.com:443 (files only: over 64 KiB or has CR/LF)\n") << set.Describe();
  got = Isb({"secret", "get", "cli-key"});
  ExpectAudit("isb secret get v2", {Unix("secret_get")});
  EXPECT_TRUE(got.out == bytes) << got.Describe();
  got = Isb({"secret", "get", "cli-key", "--version", "1"});
  ExpectAudit("isb secret get v1", {Unix("secret_get")});
  EXPECT_EQ(got.out, "typed-value");
  // --header names a header to swap it in beside the standard ones; --no-headers goes back to those alone.
  ProcResult headers = Isb({"secret", "set", "cli-key", "--header", "X-Custom-Key"});
  ExpectAudit("isb secret set --header", {Unix("secret_set")});
  EXPECT_EQ(headers.out,
            "cli-key v2 hosts=api.example.com:443 headers=X-Custom-Key (files only: over 64 KiB or has "
            "CR/LF)\n")
      << headers.Describe();
  ProcResult cleared = Isb({"secret", "set", "cli-key", "--no-headers"});
  ExpectAudit("isb secret set --no-headers", {Unix("secret_set")});
  EXPECT_EQ(cleared.out, "cli-key v2 hosts=api.example.com:443 (files only: over 64 KiB or has CR/LF)\n")
      << cleared.Describe();
  ProcResult both = Isb({"secret", "set", "cli-key", "--no-headers", "--header", "X-Custom-Key"});
  EXPECT_EQ(both.exit_status, 2) << both.Describe();
  EXPECT_EQ(both.err, "isb: --header and --no-headers: give one or the other\n");

  ProcResult listed = Isb({"secret", "ls"});
  EXPECT_EQ(listed.out,
            "NAME                             VERSION  HOSTS\ncli-key                          2        "
            "api.example.com:443\n");
  EXPECT_EQ(Isb({"secret", "inspect", "cli-key"}).out.find("typed-value"), std::string::npos);
  ProcResult removed = Isb({"secret", "rm", "cli-key"});
  ExpectAudit("isb secret rm", {Unix("secret_delete")});
  EXPECT_EQ(removed.out, "deleted cli-key\n");
  ProcResult gone = Isb({"secret", "get", "cli-key"});
  ExpectAudit("isb secret get gone", {Unix("secret_get", "not_found")});
  EXPECT_EQ(gone.exit_status, 1) << gone.Describe();
}

// Without an admin's opt-in a placeholder is swapped in headers only: in the query and the body it reaches the
// origin as it is, so an origin that echoes them hands back nothing secret. Each use is a secret_use audit row, at
// most one a minute per sandbox, secret and host, with the count and never the value.
TEST_F(SecretsTest, WithoutOptInOnlyHeadersAreSwappedAndUsesAreCountedInTheAuditLog) {
  StartEcho();
  MustTool("secret_create", {{"name", "api-key"}, {"value", kValue}, {"hosts", {"echo.test"}}});
  EXPECT_EQ(MustTool("secret_inspect", {{"name", "api-key"}})["substitute"], json({"header"}));
  std::string id = CreateWithKey({{"allow", json::array()}, {"secrets", {{{"name", "api-key"}, {"env", "KEY"}}}}});
  ASSERT_FALSE(id.empty());
  Received();
  std::string answer = Sh(id,
                          "curl -s -H \"X-Api-Key: $KEY\" -H 'Content-Type: application/json' "
                          "-d \"{\\\"k\\\": \\\"$KEY\\\"}\" \"https://echo.test/s?q=$KEY\"");
  std::string received = Received();
  EXPECT_NE(received.find("POST /s?q=" + placeholder_ + " HTTP/1.1"), std::string::npos) << Shown(received);
  EXPECT_NE(received.find("X-Api-Key: " + std::string(kValue)), std::string::npos) << Shown(received);
  EXPECT_NE(received.find("{\"k\": \"" + placeholder_ + "\"}"), std::string::npos) << Shown(received);
  EXPECT_FALSE(HasValue(answer)) << Shown(answer);
  EXPECT_NE(answer.find("{\"k\": \"" + placeholder_ + "\"}"), std::string::npos) << Shown(answer);
  Sh(id, "curl -s -o /dev/null -H \"X-Api-Key: $KEY\" https://echo.test/again");
  // In a header that carries no credential (one an origin may reflect or store) the placeholder arrives as it is.
  Received();
  answer = Sh(id, "curl -s -H \"X-Debug: $KEY\" https://echo.test/reflect");
  received = Received();
  EXPECT_NE(received.find("X-Debug: " + placeholder_), std::string::npos) << Shown(received);
  EXPECT_FALSE(HasValue(received)) << Shown(received);
  EXPECT_FALSE(HasValue(answer)) << Shown(answer);
  json use = MustTool("sandbox_get", {{"sandbox", id}})["secrets"]["api-key"];
  EXPECT_EQ(use.value("swapped", 0), 2) << use.dump();
  EXPECT_EQ(use.value("held", -1), 0) << use.dump();
  json rows = MustTool("audit_list", {{"action", "secret_use"}})["records"];
  ASSERT_EQ(rows.size(), 1u) << rows.dump();
  EXPECT_EQ(rows[0].value("actor", ""), "sandbox:" + id);
  EXPECT_EQ(rows[0]["details"], json({{"secret", "api-key"}, {"host", "echo.test:443"}, {"swapped", 1}}));
  EXPECT_FALSE(HasValue(rows.dump()));
}

// The pids whose parent is `parent`.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = ReadFileOrEmpty(entry.path() / "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %*c %d", &ppid) == 1 && ppid == parent) out.push_back(std::stoi(name));
  }
  return out;
}

// Whether `needle` is in any readable mapping of `pid`'s memory, or its environ.
bool MemoryHolds(pid_t pid, const std::string& needle) {
  const std::string proc = "/proc/" + std::to_string(pid);
  if (ReadFileOrEmpty(proc + "/environ").find(needle) != std::string::npos) return true;
  std::ifstream maps(proc + "/maps");
  std::ifstream mem(proc + "/mem", std::ios::binary);
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long start = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar]") != std::string::npos || line.find("[vsyscall]") != std::string::npos) continue;
    std::string bytes(end - start, '\0');
    mem.clear();
    mem.seekg(static_cast<std::streamoff>(start));
    mem.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(std::max<std::streamsize>(mem.gcount(), 0)));
    if (bytes.find(needle) != std::string::npos) return true;
  }
  return false;
}

// The key given in $ISB_AGE_KEY is in no process the daemon forked (the spawner, forked before the key is read
// into ordinary memory): not in its memory, not in its environment; the daemon's own environ has it wiped.
TEST_F(SecretsTest, TheAgeKeyFromTheEnvironmentIsNotInTheSpawnersMemory) {
  ProcResult made = RunProcess({"age-keygen", "-o", temp_dir() + "/age.key"});
  ASSERT_EQ(made.exit_status, 0) << made.Describe();
  std::string text = ReadFileOrEmpty(temp_dir() + "/age.key");
  const size_t at = text.find("AGE-SECRET-KEY-1");
  ASSERT_NE(at, std::string::npos);
  const std::string key = text.substr(at, text.find('\n', at) - at);
  ASSERT_EQ(StopDaemon(), 0);
  std::filesystem::remove_all(state_dir() + "/secrets");
  ASSERT_EQ(::setenv("ISB_AGE_KEY", key.c_str(), 1), 0);
  StartDaemon();
  ::unsetenv("ISB_AGE_KEY");
  ASSERT_TRUE(daemon_running());
  // The daemon uses that key: its recipient is the key's.
  ProcResult recipient = RunProcess({"age-keygen", "-y", temp_dir() + "/age.key"});
  EXPECT_EQ(MustTool("secret_recipient", json::object()).value("recipient", "") + "\n", recipient.out);
  std::vector<pid_t> children = ChildrenOf(daemon_pid());
  ASSERT_FALSE(children.empty());
  const std::filesystem::path isb = std::filesystem::canonical(ISB_BINARY);
  int forks_scanned = 0;
  for (pid_t child : children) {
    // The scan reads the memory of each fork of the daemon (the spawner): the state dir's path, which it was given,
    // is there. A child running another program (a helper it ran), or gone before the scan ended, is not one.
    const std::string proc = "/proc/" + std::to_string(child);
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink(proc + "/exe", ec);
    const bool read = MemoryHolds(child, state_dir());
    if (!ec && exe == isb && ::kill(child, 0) == 0) {
      EXPECT_TRUE(read) << "cannot read the memory of " << child;
      ++forks_scanned;
    }
    EXPECT_FALSE(MemoryHolds(child, key))
        << "pid " << child << " (" << ReadFileOrEmpty("/proc/" + std::to_string(child) + "/comm") << ") holds the key";
    EXPECT_FALSE(MemoryHolds(child, key.substr(16, 24))) << "pid " << child << " holds part of the key";
  }
  EXPECT_GE(forks_scanned, 1) << "no fork of the daemon (the spawner) was found to scan";
  EXPECT_EQ(ReadFileOrEmpty("/proc/" + std::to_string(daemon_pid()) + "/environ").find(key.substr(16)),
            std::string::npos);
}

}  // namespace
}  // namespace isb::e2e
