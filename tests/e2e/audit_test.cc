// The sandbox history's hash chain, end to end: a real daemon records each lifecycle event on it, `isb audit verify`
// walks it, and an edit made straight in the SQLite file is found at its row.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <thread>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

class AuditTest : public E2eTest {};

// Rows of the audit log, as "action target outcome" lines, read from the state file.
std::vector<std::string> AuditRows(const std::string& db_path) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return rows;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT action, target, outcome, surface FROM audit_log ORDER BY id", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    std::string row;
    for (int i = 0; i < 4; ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      row += (i ? " " : "") + std::string(t ? reinterpret_cast<const char*>(t) : "");
    }
    rows.push_back(row);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

// Writes zeros to `path` until its file system is full; returns the errno that stopped it.
int FillFileSystem(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  static const std::string chunk(1 << 20, '\0');
  int err = 0;
  for (;;) {
    ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n < 0) {
      err = errno;
      break;
    }
  }
  ::close(fd);
  return err;
}

// A daemon whose audit log cannot be written (its state dir's file system is full) runs no call that would change
// something: the caller gets 503 with the reason, the operator a line in the log, and nothing changes. An exec that
// was recorded as started when the disk filled under it finishes, and its caller is told that its end is not in the
// log. Once there is room again, calls run and are recorded.
TEST_F(AuditTest, ACallTheAuditLogCannotRecordChangesNothingAndAnUnrecordedEndIsReported) {
  // The state dir on a small file system of its own, with the daemon's state so far.
  ASSERT_EQ(StopDaemon(), 0);
  const std::string kept = temp_dir() + "/state-on-disk";
  ASSERT_EQ(::rename(state_dir().c_str(), kept.c_str()), 0) << std::strerror(errno);
  struct stat st {};
  ASSERT_EQ(::stat(kept.c_str(), &st), 0);
  ASSERT_EQ(::mkdir(state_dir().c_str(), st.st_mode & 07777), 0) << std::strerror(errno);
  ASSERT_EQ(::mount("isb-e2e-full", state_dir().c_str(), "tmpfs", 0, "size=64m,mode=0711"), 0) << std::strerror(errno);
  struct Unmount {
    std::string dir, kept;
    ~Unmount() {
      ::umount2(dir.c_str(), MNT_DETACH);
      ::rmdir(dir.c_str());
      ::rename(kept.c_str(), dir.c_str());  // the state as it was, for the fixture's checks
    }
  } unmount{state_dir(), kept};
  ProcResult copied = RunProcess({"cp", "-a", kept + "/.", state_dir()});
  ASSERT_EQ(copied.exit_status, 0) << copied.Describe();
  StartDaemon();
  SkipAuditCheck();  // the refused calls leave no row by design; the rows are checked below

  const std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  // An exec that is running when the disk fills: recorded as started, it ends with no room for its outcome.
  auto long_exec = std::async(std::launch::async, [&] {
    return Tool("sandbox_exec", {{"sandbox", id}, {"argv", {"sh", "-c", "touch /tmp/running; sleep 3; echo done"}}});
  });
  bool running = false;
  for (int i = 0; i < 500 && !running; ++i) {
    running = Exec(id, {"test", "-e", "/tmp/running"})["exit_code"] == 0;
    if (!running) std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(running) << "the long exec never ran";
  const std::string fill = state_dir() + "/fill";
  ASSERT_EQ(FillFileSystem(fill), ENOSPC);

  HttpResponse refused = Tool("sandbox_create", {{"name", "unrecorded"}});
  EXPECT_EQ(refused.status, 503) << refused.body;
  json error = json::parse(refused.body, nullptr, false);
  EXPECT_EQ(error.value("error", ""), "unavailable") << refused.body;
  const std::string why = "the audit log could not record it (";
  EXPECT_EQ(error.value("message", "").rfind("sandbox_create was not run, so nothing changed: " + why, 0), 0u)
      << refused.body;
  HttpResponse list = Tool("sandbox_list", json::object());
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(json::parse(list.body)["result"]["sandboxes"].size(), 1u) << list.body;
  EXPECT_NE(DaemonLog().find("audit: a sandbox_create call was refused: the audit log could not record it: "),
            std::string::npos)
      << DaemonLog();

  HttpResponse ended = long_exec.get();
  ASSERT_EQ(ended.status, 200) << ended.body;
  json done = json::parse(ended.body);
  EXPECT_EQ(done["result"]["stdout"], "done\n") << ended.body;
  const std::string unrecorded = done.value("audit_unrecorded", "");
  EXPECT_EQ(unrecorded.rfind("the audit log could not record its outcome (", 0), 0u) << ended.body;
  EXPECT_TRUE(unrecorded.ends_with("); it is there as started")) << ended.body;
  EXPECT_NE(DaemonLog().find("audit: the outcome of a sandbox_exec call was not recorded: "), std::string::npos)
      << DaemonLog();

  // Room again: calls run and are recorded.
  ASSERT_EQ(::unlink(fill.c_str()), 0);
  const std::string second = CreateSandbox({{"name", "recorded"}});
  ASSERT_FALSE(second.empty());
  MustTool("sandbox_remove", {{"sandbox", id}});
  MustTool("sandbox_remove", {{"sandbox", second}});
  ASSERT_EQ(StopDaemon(), 0);

  using Row = std::pair<std::string, std::string>;
  std::vector<Row> rows;
  for (const std::string& line : AuditRows(state_dir() + "/isb.db")) {  // "action target outcome surface"
    const size_t surface = line.rfind(' '), outcome = line.rfind(' ', surface - 1);
    rows.emplace_back(line.substr(0, line.find(' ')), line.substr(outcome + 1, surface - outcome - 1));
  }
  // The last rows: the poll that saw the long exec run, and the calls once there was room. The long exec's start is
  // in the log and its end is not; the refused create is absent.
  std::vector<Row> tail(rows.end() - std::min<size_t>(rows.size(), 8), rows.end());
  EXPECT_EQ(tail, (std::vector<Row>{{"sandbox_exec", "started"},
                                    {"sandbox_exec", "ok"},
                                    {"sandbox_create", "started"},
                                    {"sandbox_create", "ok"},
                                    {"sandbox_remove", "started"},
                                    {"sandbox_remove", "ok"},
                                    {"sandbox_remove", "started"},
                                    {"sandbox_remove", "ok"}}));
  size_t exec_starts = 0, exec_ends = 0, creates = 0;
  for (const Row& r : rows) {
    if (r.first == "sandbox_exec") ++(r.second == "started" ? exec_starts : exec_ends);
    if (r == Row{"sandbox_create", "started"}) ++creates;
  }
  EXPECT_EQ(exec_starts, exec_ends + 1) << "one exec, the long one, has no end";
  EXPECT_EQ(creates, 2u) << "the refused create left no row";
}

TEST_F(AuditTest, HistoryRecordsTheLifecycleAndVerifyFindsAnEditedRow) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  MustTool("sandbox_stop", {{"sandbox", id}});
  MustTool("sandbox_start", {{"sandbox", id}});
  MustTool("sandbox_remove", {{"sandbox", id}});

  ProcResult ok = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir(), "--json"});
  ASSERT_EQ(ok.exit_status, 0) << ok.Describe();
  json report = json::parse(ok.out);
  EXPECT_EQ(report["history"]["ok"], true) << ok.out;
  EXPECT_EQ(report["history"]["rows"], 4) << "created, stopped, started, removed: " << ok.out;
  EXPECT_EQ(report["history"]["first_broken"], nullptr) << ok.out;
  EXPECT_EQ(report["audit_log"]["ok"], true) << ok.out;

  // An attacker with the file: drops the trigger that refuses edits, then changes the second event's reason.
  ASSERT_EQ(StopDaemon(), 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((state_dir() + "/isb.db").c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db,
                        "DROP TRIGGER sandbox_history_no_update;"
                        "UPDATE sandbox_history SET reason = 'nothing happened' WHERE id = 2;",
                        nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);

  ProcResult broken = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir()});
  EXPECT_EQ(broken.exit_status, 1) << broken.Describe();
  EXPECT_NE(broken.out.find("\nhistory BROKEN at row 2: "), std::string::npos) << broken.out;

  // A head hash that is not even text (a byte that is no UTF-8): the JSON report still comes, the byte replaced.
  ASSERT_EQ(sqlite3_open((state_dir() + "/isb.db").c_str(), &db), SQLITE_OK);
  rc = sqlite3_exec(db, "UPDATE sandbox_history SET hash = CAST(x'ff' AS TEXT) WHERE id = 4;", nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  ProcResult odd = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir(), "--json"});
  EXPECT_EQ(odd.exit_status, 1) << odd.Describe();
  json odd_report = json::parse(odd.out, nullptr, false);
  ASSERT_TRUE(odd_report.is_object()) << odd.Describe();
  EXPECT_EQ(odd_report["history"]["ok"], false) << odd.out;
  EXPECT_EQ(odd_report["history"]["head"]["hash"], "\xef\xbf\xbd") << odd.out;

  ProcResult nowhere = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", temp_dir() + "/none"});
  EXPECT_EQ(nowhere.exit_status, 125) << nowhere.Describe();
  EXPECT_EQ(nowhere.err, "isb audit verify: no isb state at " + temp_dir() + "/none (see --state-dir)\n");
}

// Rows deleted from the end of a chain leave a shorter chain that verifies: the head kept from an earlier verify
// is what finds them (--audit-head), and a bad head is a usage error.
TEST_F(AuditTest, AHeadKeptFromAnEarlierVerifyFindsRowsDeletedFromTheEnd) {
  SkipAuditCheck();  // the test deletes audit rows on purpose
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  MustTool("sandbox_remove", {{"sandbox", id}});
  ASSERT_EQ(StopDaemon(), 0);
  ProcResult before = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir(), "--json"});
  ASSERT_EQ(before.exit_status, 0) << before.Describe();
  json head = json::parse(before.out)["audit_log"]["head"];
  const std::string pinned = std::to_string(head["id"].get<int64_t>()) + ":" + head["hash"].get<std::string>();
  ProcResult same = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir(), "--audit-head", pinned});
  EXPECT_EQ(same.exit_status, 0) << same.Describe();

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((state_dir() + "/isb.db").c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db,
                        "DROP TRIGGER audit_log_no_delete;"
                        "DELETE FROM audit_log WHERE id >= (SELECT max(id) - 1 FROM audit_log);",
                        nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);

  ProcResult unpinned = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir()});
  EXPECT_EQ(unpinned.exit_status, 0) << "a shorter chain is a valid chain: " << unpinned.Describe();
  ProcResult caught = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir(), "--audit-head", pinned});
  EXPECT_EQ(caught.exit_status, 1) << caught.Describe();
  // The first of the two rows deleted.
  EXPECT_EQ(caught.out.rfind("audit log BROKEN at row " + std::to_string(head["id"].get<int64_t>() - 1) +
                                 ": row missing: the chain ends before the pinned head",
                             0),
            0u)
      << caught.out;
  ProcResult bad = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir(), "--audit-head", "7:zz"});
  EXPECT_EQ(bad.exit_status, 2) << bad.Describe();
  EXPECT_EQ(bad.err, "isb audit verify: --audit-head: the hash must be 64 lowercase hex digits\n");
}

TEST_F(AuditTest, EveryChangeAndEveryRefusalIsRecordedAndNoValueIsKept) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  json r = Exec(id, {"sh", "-c", "test -n \"$API_KEY\""}, {{"env", {{"API_KEY", "s3cr3t-value-1f2e"}}}});
  EXPECT_EQ(r["exit_code"], 0) << r.dump();
  MustTool("sandbox_get", {{"sandbox", id}});  // a read that succeeds: not recorded
  EXPECT_EQ(Tool("sandbox_get", {{"sandbox", "sb-doesnotexist"}}).status, 404);
  EXPECT_EQ(Tool("sandbox_create", {{"cpus", 0}}).status, 400);
  MustTool("sandbox_remove", {{"sandbox", id}});
  ASSERT_EQ(StopDaemon(), 0);

  // The fixture's set-up on the socket (its user, membership and token), then the test's calls: each change's start
  // before it runs (a create's names no sandbox yet) and its outcome; a refusal before any handler ran, once.
  std::vector<std::string> want = {"user_create e2e started unix",
                                   "user_create e2e ok unix",
                                   "member_add e2e started unix",
                                   "member_add e2e ok unix",
                                   "token_create e2e started unix",
                                   "token_create e2e ok unix",
                                   "sandbox_create  started unix",
                                   "sandbox_create " + id + " ok unix",
                                   "sandbox_exec " + id + " started unix",
                                   "sandbox_exec " + id + " ok unix",
                                   "sandbox_get sb-doesnotexist not_found unix",
                                   "sandbox_create  invalid_argument unix",
                                   "sandbox_remove " + id + " started unix",
                                   "sandbox_remove " + id + " ok unix"};
  EXPECT_EQ(AuditRows(state_dir() + "/isb.db"), want);
  ProcResult ok = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir()});
  EXPECT_EQ(ok.exit_status, 0) << ok.Describe();
  EXPECT_EQ(ok.out.rfind("audit log ok: 14 rows, head 14 ", 0), 0u) << ok.out;
  // The exec's env key is kept, its value nowhere in the state files.
  std::string files;
  for (const char* f : {"/isb.db", "/isb.db-wal"}) files += ReadFileOrEmpty(state_dir() + f);
  EXPECT_NE(files.find("API_KEY"), std::string::npos);
  EXPECT_EQ(files.find("s3cr3t-value-1f2e"), std::string::npos) << "an env value reached the database";
}

// "id action target outcome surface actor actor_kind org" of a record as audit_list returns it.
std::string Summary(const json& r) {
  return std::to_string(r.value("id", int64_t{0})) + " " + r.value("action", "") + " " + r.value("target", "") + " " +
         r.value("outcome", "") + " " + r.value("surface", "") + " " + r.value("actor", "") + " " +
         r.value("actor_kind", "") + " " + r.value("org", "");
}

// Each line of `text` parsed as JSON; a line that is not JSON fails the test.
std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    EXPECT_NE(end, std::string::npos) << "the last line has no newline";
    if (end == std::string::npos) break;
    json j = json::parse(text.substr(start, end - start), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << text.substr(start, end - start);
    out.push_back(std::move(j));
    start = end + 1;
  }
  return out;
}

// Sign-ins belong to no org (no org is known yet): platform admins list them with --platform; an org's listing
// never shows them, and an org admin cannot ask for them.
TEST_F(AuditTest, RowsOfNoOrgAreListedForPlatformAdmins) {
  HttpResponse refused =
      Http(tcp_endpoint(), "POST", "/api/v1/auth/signin", R"({"user":"nobody","password":"not this"})",
           {"Content-Type: application/json", "X-Isb-Csrf: 1"});
  ASSERT_EQ(refused.status, 401) << refused.Describe();
  ExpectedRow sign_in = ByToken("rest", "sign_in", "unauthenticated");
  sign_in.actor_kind = "user";
  ExpectAudit("a failed sign-in", {sign_in});
  auto audit = [&](std::vector<std::string> args, const std::vector<std::string>& env = {"ISB_TOKEN", "ISB_URL"}) {
    args.insert(args.begin(), {ISB_BINARY, "audit"});
    return RunProcess(args, "", 60s, env);
  };
  ProcResult platform = audit({"ls", "--socket", socket_path(), "--json", "--platform"});
  ASSERT_EQ(platform.exit_status, 0) << platform.Describe();
  json rows = json::parse(platform.out, nullptr, false)["records"];
  ASSERT_EQ(rows.size(), 1u) << platform.out;
  EXPECT_EQ(rows[0]["action"], "sign_in");
  EXPECT_EQ(rows[0]["actor"], "user:nobody");
  EXPECT_EQ(rows[0]["outcome"], "unauthenticated");
  EXPECT_EQ(rows[0]["org"], "");
  ProcResult exported = audit({"export", "--socket", socket_path(), "--platform"});
  ASSERT_EQ(exported.exit_status, 0) << exported.Describe();
  EXPECT_EQ(json(JsonLines(exported.out)), rows);
  ProcResult org = audit({"ls", "--socket", socket_path(), "--json"});
  ASSERT_EQ(org.exit_status, 0) << org.Describe();
  for (const json& r : json::parse(org.out, nullptr, false)["records"]) EXPECT_NE(r["action"], "sign_in") << org.out;
  // An admin of the org who is no platform admin may not.
  MustTool("user_create", {{"name", "ada"}});
  MustTool("member_add", {{"user", "ada"}, {"role", "admin"}});
  json minted = MustTool("token_create", {{"name", "ada"}, {"user", "ada"}});
  ASSERT_TRUE(minted.is_object());
  ProcResult admin = audit({"ls", "--url", base_url(), "--platform"},
                           {"ISB_URL", "ISB_SOCKET", "ISB_TOKEN=" + minted.value("token", "")});
  ExpectAudit("isb audit ls --platform as an org admin", {ByToken("rest", "audit_list", "forbidden")});
  EXPECT_EQ(admin.exit_status, 1) << admin.Describe();
  EXPECT_EQ(admin.err, "isb: platform: only platform admins read the rows of no org\n");
}

// A request with no credential at all is refused before any tool sees it, and is recorded all the same: a row of
// no one, in no org, with its surface and address.
TEST_F(AuditTest, ARequestWithNoCredentialIsRecorded) {
  CurlResult rest = CurlTcp("POST", "/api/v1/tools/sandbox_list", "{}", {"Content-Type: application/json"}, "");
  ASSERT_EQ(rest.http.status, 401) << rest.Describe();
  CurlResult mcp = CurlTcp("POST", "/mcp", "{}", {"Content-Type: application/json"}, "");
  ASSERT_EQ(mcp.http.status, 401) << mcp.Describe();
  HttpResponse platform = Tool("audit_list", {{"platform", true}});
  ASSERT_EQ(platform.status, 200) << platform.Describe();
  std::vector<std::string> rows;
  for (const json& r : platform.j["result"]["records"])
    rows.push_back(r.value("action", "") + " " + r.value("actor", "") + " " + r.value("actor_kind", "") + " " +
                   r.value("surface", "") + " " + r.value("outcome", "") + " " + r.value("ip", "") + " [" +
                   r.value("org", "") + "]");
  EXPECT_EQ(rows, (std::vector<std::string>{"authenticate anonymous anonymous rest unauthenticated 127.0.0.1 []",
                                            "authenticate anonymous anonymous mcp unauthenticated 127.0.0.1 []"}))
      << platform.Describe();
}

TEST_F(AuditTest, LsAndExportShowTheOrgsRowsAndRefuseAViewer) {
  std::string id = CreateSandbox();
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Tool("sandbox_get", {{"sandbox", "sb-doesnotexist"}}).status, 404);
  MustTool("sandbox_remove", {{"sandbox", id}});
  // The org's history without naming a sandbox: the removed one's events are still there.
  json history = MustTool("history_query", json::object());
  ASSERT_TRUE(history.is_object());
  std::vector<std::string> events;
  for (const json& e : history["events"]) events.push_back(e.value("sandbox", "") + " " + e.value("event", ""));
  EXPECT_EQ(events, (std::vector<std::string>{id + " created", id + " removed"}));
  // Who asked, for both: the fixture's calls here go over the unix socket, as the host; each with its request id.
  for (const json& e : history["events"]) {
    EXPECT_EQ(e.value("actor", ""), "superadmin") << e.dump();
    EXPECT_EQ(e.value("actor_kind", ""), "superadmin") << e.dump();
    EXPECT_TRUE(e.value("request_id", "").starts_with("e2e-")) << e.dump();
  }

  auto audit = [&](std::vector<std::string> args, const std::vector<std::string>& env = {"ISB_TOKEN", "ISB_URL"}) {
    args.insert(args.begin(), {ISB_BINARY, "audit"});
    return RunProcess(args, "", 60s, env);
  };
  ProcResult ls = audit({"ls", "--socket", socket_path(), "--json"});
  ASSERT_EQ(ls.exit_status, 0) << ls.Describe();
  json listed = json::parse(ls.out, nullptr, false);
  ASSERT_TRUE(listed.is_object()) << ls.out;
  std::vector<std::string> rows;
  for (const json& r : listed["records"]) rows.push_back(Summary(r));
  // The fixture's set-up, then this test's calls; reads that succeed (history_query, audit_list) are not recorded.
  const std::string host = " unix superadmin superadmin default";
  EXPECT_EQ(rows,
            (std::vector<std::string>{
                "1 user_create e2e started" + host, "2 user_create e2e ok" + host, "3 member_add e2e started" + host,
                "4 member_add e2e ok" + host, "5 token_create e2e started" + host, "6 token_create e2e ok" + host,
                "7 sandbox_create  started" + host, "8 sandbox_create " + id + " ok" + host,
                "9 sandbox_get sb-doesnotexist not_found" + host, "10 sandbox_remove " + id + " started" + host,
                "11 sandbox_remove " + id + " ok" + host}));
  EXPECT_EQ(listed["next_after"], nullptr);
  ASSERT_EQ(listed["records"].size(), 11u);
  EXPECT_EQ(listed["records"][0]["prev_hash"], std::string(64, '0'));
  for (size_t i = 1; i < 11; ++i) EXPECT_EQ(listed["records"][i]["prev_hash"], listed["records"][i - 1]["hash"]) << i;
  // The sandbox is the row's target; the details policy keeps nothing else of sandbox_remove's input.
  EXPECT_EQ(listed["records"][10]["details"], json::object());

  ProcResult page = audit({"ls", "--socket", socket_path(), "--json", "--limit", "2", "--after", "3"});
  ASSERT_EQ(page.exit_status, 0) << page.Describe();
  json paged = json::parse(page.out, nullptr, false);
  ASSERT_TRUE(paged.is_object()) << page.out;
  EXPECT_EQ(paged["records"], (json{listed["records"][3], listed["records"][4]}));
  EXPECT_EQ(paged["next_after"], 5);

  ProcResult table = audit({"ls", "--socket", socket_path(), "--limit", "1"});
  ASSERT_EQ(table.exit_status, 0) << table.Describe();
  EXPECT_EQ(table.out.substr(0, table.out.find('\n')),
            "ID       TIME                 ACTOR                    ACTION               TARGET                 "
            "OUTCOME            SURFACE");
  EXPECT_NE(table.out.find("\n1        "), std::string::npos) << table.out;
  EXPECT_NE(
      table.out.find(" superadmin               user_create          e2e                    started            unix\n"),
      std::string::npos)
      << table.out;

  // Export: every row, every field, one JSON object a line, exactly what audit_list returns.
  ProcResult exported = audit({"export", "--socket", socket_path()});
  ASSERT_EQ(exported.exit_status, 0) << exported.Describe();
  std::vector<json> lines = JsonLines(exported.out);
  EXPECT_EQ(json(lines), listed["records"]);
  ASSERT_FALSE(lines.empty());
  std::vector<std::string> keys;
  for (const auto& [k, v] : lines[0].items()) keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"action", "actor", "actor_kind", "details", "hash", "id", "ip", "org", "outcome",
                                      "prev_hash", "request_id", "surface", "target", "time", "user_agent"}));

  // A viewer of the org, over TCP with its token: refused, exit 1, the authorizer's words.
  MustTool("user_create", {{"name", "vic"}});
  MustTool("member_add", {{"user", "vic"}, {"role", "viewer"}});
  json minted = MustTool("token_create", {{"name", "vic"}, {"user", "vic"}});
  ASSERT_TRUE(minted.is_object());
  const std::vector<std::string> as_viewer = {"ISB_URL", "ISB_SOCKET", "ISB_TOKEN=" + minted.value("token", "")};
  for (const std::string sub : {"ls", "export"}) {
    ProcResult refused = audit({sub, "--url", base_url()}, as_viewer);
    ExpectAudit("isb audit " + sub + " as a viewer", {ByToken("rest", "audit_list", "forbidden")});
    EXPECT_EQ(refused.exit_status, 1) << refused.Describe();
    EXPECT_EQ(refused.err, "isb: role viewer may not call audit_list, which needs admin\n") << sub;
    EXPECT_EQ(refused.out, "") << sub;
  }
  // No daemon there: isb failed, 125.
  ProcResult nowhere = audit({"export", "--socket", temp_dir() + "/none.sock"});
  EXPECT_EQ(nowhere.exit_status, 125) << nowhere.Describe();
  // A usage error: 2.
  EXPECT_EQ(audit({"ls", "--socket", socket_path(), "--limit", "0"}).exit_status, 2);

  // The refusals are rows too, with the viewer's token as the actor.
  exported = audit({"export", "--socket", socket_path()});
  ASSERT_EQ(exported.exit_status, 0) << exported.Describe();
  lines = JsonLines(exported.out);
  ASSERT_EQ(lines.size(), 19u) << exported.out;  // and the viewer's user, membership and token: 3 calls, 6 rows
  EXPECT_EQ(Summary(lines[17]), "18 audit_list  forbidden rest token:2 token default");
  EXPECT_EQ(Summary(lines[18]), "19 audit_list  forbidden rest token:2 token default");
}

TEST_F(AuditTest, RetentionFlag) {
  ProcResult short_one = RunProcess({ISB_BINARY, "serve", "--state-dir", temp_dir() + "/x", "--audit-retention", "5m"});
  EXPECT_EQ(short_one.exit_status, 2) << short_one.Describe();
  EXPECT_EQ(short_one.err, "isb serve: --audit-retention: must be at least 1h, or off (never prune)\n");
  // The fixture's daemon runs with the default, 90 days: nothing in a fresh state dir is that old.
  EXPECT_EQ(DaemonLog().find("audit retention"), std::string::npos) << DaemonLog();
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--audit-retention", "off"});
  EXPECT_NE(DaemonLog().find("isb serve: audit retention off: nothing is pruned\n"), std::string::npos) << DaemonLog();
}

}  // namespace
}  // namespace isb::e2e
