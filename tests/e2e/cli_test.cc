// The CLI against a real daemon through --socket: every sandbox command, its output and its exit code.
#include <sys/stat.h>

#include <regex>
#include <sstream>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class CliTest : public E2eTest {};

// isb cp keeps permission bits only, both ways: a set-id program written inside a sandbox never arrives on the
// host as one, and a local set-id file is copied in (as its permission bits) instead of refused.
TEST_F(CliTest, CpLeavesSetIdBitsBehind) {
  ProcResult created = Isb({"create"});
  ExpectAudit("isb create", {Unix("sandbox_create")});
  ASSERT_EQ(created.exit_status, 0) << created.Describe();
  const std::string id = created.out.substr(0, created.out.find('\n'));
  ProcResult made = Isb({"exec", id, "--", "sh", "-c", "cp /bin/true /tmp/suid && chmod 6755 /tmp/suid"});
  ExpectAudit("isb exec chmod 6755", {Unix("sandbox_exec")});
  ASSERT_EQ(made.exit_status, 0) << made.Describe();
  const std::string out = temp_dir() + "/suid";
  ProcResult cp_out = Isb({"cp", id + ":/tmp/suid", out});
  ASSERT_EQ(cp_out.exit_status, 0) << cp_out.Describe();
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ::chmod(out.c_str(), 04755);
  ProcResult cp_in = Isb({"cp", out, id + ":/tmp/back"});
  ExpectAudit("isb cp in", {Unix("sandbox_file_write")});
  EXPECT_EQ(cp_in.exit_status, 0) << cp_in.Describe();
  ProcResult mode = Isb({"exec", id, "--", "stat", "-c", "%a", "/tmp/back"});
  ExpectAudit("isb exec stat", {Unix("sandbox_exec")});
  EXPECT_EQ(mode.out, "755\n") << mode.Describe();
  EXPECT_EQ(Isb({"rm", id}).exit_status, 0);
  ExpectAudit("isb rm", {Unix("sandbox_remove")});
}

TEST_F(CliTest, SandboxCommandsThroughTheSocket) {
  // create: the id alone on stdout; --json: the tool's result
  ProcResult created =
      Isb({"create", "--name", "e2e-cli", "--memory", "64M", "--label", "suite=cli", "--env", "WHO=cli"});
  ExpectAudit("isb create", {Unix("sandbox_create")});
  ASSERT_EQ(created.exit_status, 0) << created.Describe();
  std::smatch m;
  ASSERT_TRUE(std::regex_match(created.out, m, std::regex("(sb-[0-9a-f]{16})\n"))) << created.Describe();
  const std::string id = m[1].str();
  ProcResult created_json = Isb({"create", "--json", "--label", "suite=cli"});
  ExpectAudit("isb create --json", {Unix("sandbox_create")});
  ASSERT_EQ(created_json.exit_status, 0) << created_json.Describe();
  json second = json::parse(created_json.out, nullptr, false);
  ASSERT_TRUE(second.is_object() && second["id"].is_string()) << created_json.Describe();
  EXPECT_EQ(second["state"], "running");
  const std::string id2 = second["id"].get<std::string>();
  ProcResult dup = Isb({"create", "--name", "e2e-cli"});
  ExpectAudit("isb create (a name in use)", {Unix("sandbox_create", "conflict")});
  EXPECT_EQ(dup.exit_status, 1) << "a name in use is a refusal: " << dup.Describe();

  // exec: the command's exit code, its stdout and stderr apart, stdin with -i, the spec's environment
  ProcResult ran = Isb({"exec", id, "--", "sh", "-c", "printf 'out:%s\\n' \"$WHO\"; printf 'err\\n' >&2; exit 3"});
  ExpectAudit("isb exec", {Unix("sandbox_exec")});
  EXPECT_EQ(ran.exit_status, 3) << ran.Describe();
  EXPECT_EQ(ran.out, "out:cli\n");
  EXPECT_EQ(ran.err, "err\n");
  ProcResult piped = Isb({"exec", "-i", "e2e-cli", "--", "tr", "a-z", "A-Z"}, "shout this");
  ExpectAudit("isb exec -i", {Unix("sandbox_exec")});
  EXPECT_EQ(piped.exit_status, 0) << piped.Describe();
  EXPECT_EQ(piped.out, "SHOUT THIS");
  ProcResult as_json = Isb({"exec", "--json", id, "--", "sh", "-c", "echo hi; exit 5"});
  ExpectAudit("isb exec --json", {Unix("sandbox_exec")});
  EXPECT_EQ(as_json.exit_status, 5) << as_json.Describe();
  json exec_result = json::parse(as_json.out, nullptr, false);
  EXPECT_EQ(exec_result.value("stdout", ""), "hi\n") << as_json.Describe();
  EXPECT_EQ(exec_result.value("exit_code", -1), 5) << as_json.Describe();
  EXPECT_EQ(Isb({"exec", id, "--", "sh", "-c", "kill -9 $$"}).exit_status, 137);
  ExpectAudit("isb exec (killed)", {Unix("sandbox_exec")});
  EXPECT_EQ(Isb({"exec", "sb-0000000000000000", "--", "true"}).exit_status, 1) << "an unknown sandbox is a refusal";
  ExpectAudit("isb exec (an unknown sandbox)", {Unix("sandbox_exec", "not_found")});
  // ls and inspect read: no rows.

  // ls and inspect
  ProcResult ls = Isb({"ls"});
  EXPECT_EQ(ls.exit_status, 0) << ls.Describe();
  EXPECT_NE(ls.out.find(id), std::string::npos) << ls.Describe();
  EXPECT_NE(ls.out.find("e2e-cli"), std::string::npos) << ls.Describe();
  EXPECT_NE(ls.out.find(id2), std::string::npos) << ls.Describe();
  ProcResult ls_json = Isb({"ls", "--json", "--label", "suite=cli"});
  ASSERT_EQ(ls_json.exit_status, 0) << ls_json.Describe();
  json listed = json::parse(ls_json.out, nullptr, false);
  ASSERT_TRUE(listed.is_object()) << ls_json.Describe();
  EXPECT_EQ(listed["sandboxes"].size(), 2u) << ls_json.Describe();
  ProcResult inspect = Isb({"inspect", "e2e-cli"});
  ASSERT_EQ(inspect.exit_status, 0) << inspect.Describe();
  json info = json::parse(inspect.out, nullptr, false);
  EXPECT_EQ(info.value("id", ""), id) << inspect.Describe();
  EXPECT_EQ(info.value("state", ""), "running") << inspect.Describe();
  EXPECT_EQ(info["spec"]["mem_limit"], 64 << 20) << inspect.Describe();

  // cp in (mode kept) and out (to stdout and to a file), binary-safe
  std::string blob;
  for (int i = 0; i < 3000; ++i) blob.push_back(static_cast<char>((i * 7) & 0xff));
  std::string local = temp_dir() + "/local.bin";
  {
    FILE* f = std::fopen(local.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(blob.data(), 1, blob.size(), f);
    std::fclose(f);
    ::chmod(local.c_str(), 0700);
  }
  ProcResult cp_in = Isb({"cp", local, id + ":/root/copied.bin"});
  ExpectAudit("isb cp in", {Unix("sandbox_file_write")});
  EXPECT_EQ(cp_in.exit_status, 0) << cp_in.Describe();
  ProcResult mode = Isb({"exec", id, "--", "stat", "-c", "%a %s", "/root/copied.bin"});
  ExpectAudit("isb exec stat", {Unix("sandbox_exec")});
  EXPECT_EQ(mode.out, "700 3000\n") << mode.Describe();
  ProcResult cp_out = Isb({"cp", id + ":/root/copied.bin", "-"});
  EXPECT_EQ(cp_out.exit_status, 0) << cp_out.Describe();
  EXPECT_TRUE(cp_out.out == blob) << "cp to stdout returned " << cp_out.out.size() << " bytes";
  ProcResult cp_stdin = Isb({"cp", "-", "e2e-cli:/tmp/from-stdin.txt"}, "via stdin\n");
  ExpectAudit("isb cp - in", {Unix("sandbox_file_write")});
  EXPECT_EQ(cp_stdin.exit_status, 0) << cp_stdin.Describe();
  EXPECT_EQ(Isb({"exec", id, "--", "cat", "/tmp/from-stdin.txt"}).out, "via stdin\n");
  ExpectAudit("isb exec cat", {Unix("sandbox_exec")});
  ProcResult missing = Isb({"cp", id + ":/tmp/no-such-file", temp_dir() + "/x"});
  ExpectAudit("isb cp out (a missing file)", {Unix("sandbox_file_read", "not_found")});
  EXPECT_EQ(missing.exit_status, 1) << missing.Describe();

  // stop: exec is refused (1); start: the files are still there
  ProcResult stop = Isb({"stop", id});
  ExpectAudit("isb stop", {Unix("sandbox_stop")});
  EXPECT_EQ(stop.exit_status, 0) << stop.Describe();
  EXPECT_EQ(stop.out, id + "\n");
  EXPECT_EQ(json::parse(Isb({"inspect", id}).out, nullptr, false).value("state", ""), "stopped");
  ProcResult refused = Isb({"exec", id, "--", "true"});
  ExpectAudit("isb exec (stopped)", {Unix("sandbox_exec", "conflict")});
  EXPECT_EQ(refused.exit_status, 1) << refused.Describe();
  EXPECT_FALSE(refused.err.empty());
  ProcResult start = Isb({"start", id});
  ExpectAudit("isb start", {Unix("sandbox_start")});
  EXPECT_EQ(start.exit_status, 0) << start.Describe();
  std::string copied_back = temp_dir() + "/copied-back.bin";
  EXPECT_EQ(Isb({"cp", id + ":/root/copied.bin", copied_back}).exit_status, 0);
  EXPECT_TRUE(ReadFileOrEmpty(copied_back) == blob) << "the file did not survive stop/start";

  // extend
  ProcResult extend = Isb({"extend", "--json", id, "2h"});
  ExpectAudit("isb extend", {Unix("sandbox_extend")});
  EXPECT_EQ(extend.exit_status, 0) << extend.Describe();
  json extended = json::parse(extend.out, nullptr, false);
  EXPECT_EQ(extended.value("expires_at", int64_t{0}), info.value("expires_at", int64_t{0}) + 7200) << extend.Describe();

  // rm both; then they are unknown (1)
  ProcResult rm = Isb({"rm", id, id2});
  ExpectAudit("isb rm", {Unix("sandbox_remove")});
  ExpectAudit("isb rm (the second)", {Unix("sandbox_remove")});
  EXPECT_EQ(rm.exit_status, 0) << rm.Describe();
  EXPECT_EQ(rm.out, id + "\n" + id2 + "\n");
  ProcResult gone = Isb({"inspect", id});
  ExpectAudit("isb inspect (removed)", {Unix("sandbox_get", "not_found")});
  EXPECT_EQ(gone.exit_status, 1) << gone.Describe();
  EXPECT_NE(gone.err.find(id), std::string::npos) << gone.Describe();
  // --json: one object, whatever happened to each.
  ProcResult rm_json = Isb({"rm", "--json", id, id2});
  ExpectAudit("isb rm (removed)", {Unix("sandbox_remove", "not_found")});
  ExpectAudit("isb rm (removed, the second)", {Unix("sandbox_remove", "not_found")});
  EXPECT_EQ(rm_json.exit_status, 1) << rm_json.Describe();
  json rm_report = json::parse(rm_json.out, nullptr, false);
  ASSERT_TRUE(rm_report.is_object()) << rm_json.Describe();
  EXPECT_EQ(rm_report["removed"], json::array()) << rm_json.out;
  ASSERT_EQ(rm_report["failed"].size(), 2u) << rm_json.out;
  EXPECT_EQ(rm_report["failed"][1]["sandbox"], id2) << rm_json.out;
  EXPECT_EQ(rm_report["failed"][1]["error"], "not_found") << rm_json.out;
  EXPECT_EQ(json::parse(Isb({"ls", "--json"}).out, nullptr, false), json({{"sandboxes", json::array()}}));

  // usage errors are 2; an unreachable daemon is isb failing, 125
  EXPECT_EQ(Isb({"exec"}).exit_status, 2);
  ProcResult unreachable = RunProcess({ISB_BINARY, "ls", "--socket", temp_dir() + "/no.sock"}, "", 30s,
                                      {"ISB_URL", "ISB_TOKEN", "ISB_SOCKET"});
  EXPECT_EQ(unreachable.exit_status, 125) << unreachable.Describe();
  // A token read from a file with its line break is a usage error naming the variable, never showing the token.
  const std::string secret = "isb_tok_" + std::string(43, 'Q');
  ProcResult crlf = RunProcess({ISB_BINARY, "ls", "--url", "http://127.0.0.1:1"}, "", 30s,
                               {"ISB_TOKEN=" + secret + "\r", "ISB_SOCKET", "ISB_URL"});
  EXPECT_EQ(crlf.exit_status, 2) << crlf.Describe();
  EXPECT_EQ(crlf.err, "isb: ISB_TOKEN holds a control character (a line break?); remove it\n");
  EXPECT_EQ(crlf.out.find(secret), std::string::npos);
  EXPECT_EQ(crlf.err.find(secret), std::string::npos);
}

// isb egress: show and change a running sandbox's list, refusals that say what to do, and the refused connections.
TEST_F(CliTest, EgressShowSetAndLogThroughTheSocket) {
  ProcResult created = Isb({"create", "--egress", "a.test:80"});
  ExpectAudit("isb create --egress", {Unix("sandbox_create")});
  ASSERT_EQ(created.exit_status, 0) << created.Describe();
  const std::string id = created.out.substr(0, created.out.find('\n'));
  ProcResult shown = Isb({"egress", "show", id});
  EXPECT_EQ(shown.exit_status, 0) << shown.Describe();
  EXPECT_EQ(shown.out, "a.test:80\n");

  ProcResult set = Isb({"egress", "set", id, "b.test:80", "c.test"});
  ExpectAudit("isb egress set", {Unix("sandbox_egress_set")});
  EXPECT_EQ(set.exit_status, 0) << set.Describe();
  EXPECT_EQ(set.out, "b.test:80\nc.test\n");
  ProcResult changed = Isb({"egress", "set", id, "--add", "d.test", "--rm", "b.test:80"});
  ExpectAudit("isb egress set --add --rm", {Unix("sandbox_egress_set")});
  EXPECT_EQ(changed.exit_status, 0) << changed.Describe();
  EXPECT_EQ(changed.out, "c.test\nd.test\n");
  EXPECT_EQ(Isb({"egress", "show", "--json", id}).out, "[\n  \"c.test\",\n  \"d.test\"\n]\n");

  ProcResult missing = Isb({"egress", "set", id, "--rm", "z.test"});
  EXPECT_EQ(missing.exit_status, 1) << missing.Describe();
  EXPECT_EQ(missing.err, "isb: --rm 'z.test': not in " + id + "'s egress (isb egress show " + id + ")\n");
  ProcResult url = Isb({"egress", "set", id, "https://pypi.org"});
  EXPECT_EQ(url.exit_status, 2) << url.Describe();
  EXPECT_EQ(url.err, "isb: host 'https://pypi.org': give a host name, not a URL: pypi.org (port 443 is the default)\n");
  // The daemon's refusal names egress once.
  ProcResult to_open = Isb({"egress", "set", id, "open"});
  ExpectAudit("isb egress set open", {Unix("sandbox_egress_set", "invalid_argument")});
  EXPECT_EQ(to_open.exit_status, 1) << to_open.Describe();
  EXPECT_EQ(to_open.err, "isb: egress can change between lists while the sandbox runs, not to or from none or open\n");

  // A connection the list does not allow: refused by the proxy, and listed with its reason.
  ProcResult curl = Isb({"exec", id, "--", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://e.test/"});
  ExpectAudit("isb exec curl", {Unix("sandbox_exec")});
  EXPECT_EQ(curl.out, "403") << curl.Describe();
  ProcResult log = Isb({"egress", "log", id});
  EXPECT_EQ(log.exit_status, 0) << log.Describe();
  EXPECT_TRUE(std::regex_match(log.out, std::regex("TIME                 TARGET                         REASON\n"
                                                   "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z e\\.test:80 +"
                                                   "e\\.test:80 is not in the egress list\n")))
      << log.Describe();

  ProcResult plain = Isb({"create"});
  ExpectAudit("isb create", {Unix("sandbox_create")});
  const std::string none = plain.out.substr(0, plain.out.find('\n'));
  EXPECT_EQ(Isb({"egress", "show", none}).out, "none\n");
  ProcResult from_none = Isb({"egress", "set", none, "--add", "a.test"});
  EXPECT_EQ(from_none.exit_status, 1) << from_none.Describe();
  EXPECT_EQ(from_none.err, "isb: --add/--rm change a list of hosts, and " + none +
                               "'s egress is none; give the whole list instead: isb egress set " + none + " HOST...\n");
  ProcResult listed = Isb({"egress", "set", none, "a.test"});
  ExpectAudit("isb egress set (egress none)", {Unix("sandbox_egress_set", "invalid_argument")});
  EXPECT_EQ(listed.exit_status, 1) << listed.Describe();
  EXPECT_EQ(listed.err, "isb: egress: the sandbox was created with egress none; it has no network to change\n");
  EXPECT_EQ(Isb({"rm", id, none}).exit_status, 0);
  ExpectAudit("isb rm", {Unix("sandbox_remove"), Unix("sandbox_remove")});
}

// isb member and isb history: the org's members by name and role, and a sandbox's life as a table.
TEST_F(CliTest, MembersAndHistoryThroughTheSocket) {
  ASSERT_EQ(Isb({"user", "create", "bob"}).exit_status, 0);
  ExpectAudit("isb user create", {Unix("user_create")});
  ProcResult added = Isb({"member", "add", "bob", "viewer"});
  ExpectAudit("isb member add", {Unix("member_add")});
  EXPECT_EQ(added.exit_status, 0) << added.Describe();
  EXPECT_EQ(added.out, "bob viewer\n");
  ProcResult role = Isb({"member", "set-role", "bob", "member"});
  ExpectAudit("isb member set-role", {Unix("member_update")});
  EXPECT_EQ(role.out, "bob member\n") << role.Describe();
  ProcResult ls = Isb({"member", "ls"});
  EXPECT_EQ(ls.exit_status, 0) << ls.Describe();
  // The test's own user (the org's owner) is listed too.
  EXPECT_TRUE(std::regex_match(ls.out, std::regex("ID     USER                             ROLE\n"
                                                  "[0-9]+ +bob {30}member\n"
                                                  "[0-9]+ +e2e {30}owner\n")))
      << ls.Describe();
  ProcResult removed = Isb({"member", "rm", "bob"});
  ExpectAudit("isb member rm", {Unix("member_remove")});
  EXPECT_EQ(removed.out, "removed bob\n") << removed.Describe();
  EXPECT_TRUE(std::regex_match(Isb({"member", "ls"}).out, std::regex("ID     USER                             ROLE\n"
                                                                     "[0-9]+ +e2e {30}owner\n")));
  ProcResult again = Isb({"member", "set-role", "bob", "admin"});
  ExpectAudit("isb member set-role (not a member)", {Unix("member_update", "not_found")});
  EXPECT_EQ(again.exit_status, 1) << again.Describe();
  EXPECT_EQ(again.err.rfind("isb: user ", 0), 0u) << again.Describe();

  ProcResult created = Isb({"create", "--name", "hist"});
  ExpectAudit("isb create", {Unix("sandbox_create")});
  const std::string id = created.out.substr(0, created.out.find('\n'));
  ASSERT_EQ(Isb({"rm", "hist"}).exit_status, 0);
  ExpectAudit("isb rm", {Unix("sandbox_remove")});
  // A removed sandbox is named by no reference any more: its events show in the org's whole history.
  ProcResult history = Isb({"history"});
  EXPECT_EQ(history.exit_status, 0) << history.Describe();
  EXPECT_EQ(history.out.substr(0, history.out.find('\n') + 1),
            "ID       TIME                 SANDBOX              EVENT          ACTOR                    REASON\n");
  std::vector<std::string> events;
  std::istringstream rows(history.out.substr(history.out.find('\n') + 1));
  for (std::string line; std::getline(rows, line);) {
    std::istringstream cols(line);
    std::string row_id, time, sandbox, event;
    cols >> row_id >> time >> sandbox >> event;
    if (sandbox == id) events.push_back(event);
  }
  ASSERT_FALSE(events.empty()) << history.Describe();
  EXPECT_EQ(events.front(), "created") << history.Describe();
  EXPECT_EQ(events.back(), "removed") << history.Describe();
  ProcResult unknown = Isb({"history", "sb-0000000000000000"});
  ExpectAudit("isb history (an unknown sandbox)", {Unix("history_query", "not_found")});
  EXPECT_EQ(unknown.exit_status, 1) << unknown.Describe();
  EXPECT_EQ(unknown.err, "isb: no sandbox 'sb-0000000000000000'\n");
}

// isb serve refuses to listen beyond loopback and the tailnet at start-up, before it touches anything: a flag given
// wrong, so a usage error (2), with the way out in the message.
TEST_F(CliTest, ServeRefusesAPublicListenAddressAsAUsageError) {
  const std::string state = temp_dir() + "/refused";
  ProcResult r = RunProcess({ISB_BINARY, "serve", "--state-dir", state, "--listen", "0.0.0.0:8092"});
  EXPECT_EQ(r.exit_status, 2) << r.Describe();
  EXPECT_EQ(r.err.rfind("isb serve: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("put a tunnel (e.g. Tailscale, ssh -L) or a TLS reverse proxy in front of 127.0.0.1"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(state));
}

// What a failing test prints (Describe) never shows a credential.
TEST(RedactSecretsTest, EverySecretIsCutToItsPrefix) {
  EXPECT_EQ(RedactSecrets("Set-Cookie: isb_session=isb_sess_Ab-_9; Path=/ and isb_tok_x, isb_inv_y\nisb_setup_z"),
            "Set-Cookie: isb_session=isb_sess_[redacted]; Path=/ and isb_tok_[redacted], isb_inv_[redacted]\n"
            "isb_setup_[redacted]");
  EXPECT_EQ(RedactSecrets("no secret here, isb_session="), "no secret here, isb_session=");
}

}  // namespace
}  // namespace isb::e2e
