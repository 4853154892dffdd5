// The fixture's part of the audit check: each call its helpers make is logged with the row it must leave, and after
// the test the audit log is held to that list.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {
namespace {

constexpr std::string_view kToolsPrefix = "/api/v1/tools/";

bool StartsWithNoCase(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

// The value of header line "Name: value" in `headers`, or "".
std::string HeaderValue(const std::vector<std::string>& headers, const std::string& name) {
  for (const auto& h : headers) {
    if (!StartsWithNoCase(h, name + ":")) continue;
    std::string v = h.substr(name.size() + 1);
    v.erase(0, v.find_first_not_of(' '));
    return v;
  }
  return "";
}

// The org a REST call acts in, as the daemon picks it: X-Isb-Org, else ?org=, else default.
std::string OrgOf(const std::vector<std::string>& headers, const std::string& path) {
  std::string org = HeaderValue(headers, "X-Isb-Org");
  if (!org.empty()) return org;
  size_t q = path.find("?org=");
  if (q == std::string::npos) q = path.find("&org=");
  if (q != std::string::npos) return path.substr(q + 5, path.find('&', q + 5) - (q + 5));
  return "default";
}

// j[key] when it is a string, else "" (the answers are the daemon's, and may be anything).
std::string StringAt(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// Whether the Cookie header holds a non-empty isb_session, read as the daemon reads it (name exact, blanks trimmed).
bool HasSessionCookie(const std::vector<std::string>& headers) {
  std::string cookies = HeaderValue(headers, "Cookie");
  for (size_t at = 0; at <= cookies.size();) {
    size_t end = cookies.find(';', at);
    if (end == std::string::npos) end = cookies.size();
    std::string pair = cookies.substr(at, end - at);
    pair.erase(0, pair.find_first_not_of(' '));
    if (pair.rfind("isb_session=", 0) == 0 && pair.size() > 12) return true;
    at = end + 1;
  }
  return false;
}

// The credential a TCP call presents: "token" (a bearer, API or superadmin token), "session" (the cookie), or "".
std::string ActorKindOf(const std::vector<std::string>& headers) {
  if (StartsWithNoCase(HeaderValue(headers, "Authorization"), "Bearer isb_")) return "token";
  if (HasSessionCookie(headers)) return "session";
  return "";
}

// The data of each event of a text/event-stream body, with its event name.
std::vector<std::pair<std::string, std::string>> SseEvents(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string event, data;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    std::string line = body.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("event:", 0) == 0) event = line.substr(line.find_first_not_of(' ', 6));
    if (line.rfind("data:", 0) == 0) data += line.substr(std::min(line.size(), line.find_first_not_of(' ', 5)));
    if (line.empty() && (!event.empty() || !data.empty())) {
      out.emplace_back(event, data);
      event.clear();
      data.clear();
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!event.empty() || !data.empty()) out.emplace_back(event, data);
  return out;
}

bool IsStream(const HttpResponse& r) { return r.Header("content-type").rfind("text/event-stream", 0) == 0; }

// What a REST tool call's answer says of its outcome: "ok", the error code, or "" when it has none (no answer, or a
// stream cut short).
std::string RestOutcome(const HttpResponse& r) {
  if (IsStream(r)) {
    std::string outcome;
    for (const auto& [event, data] : SseEvents(r.body)) {
      if (event == "result") outcome = "ok";
      if (event == "error") outcome = StringAt(json::parse(data, nullptr, false), "error");
    }
    return outcome;
  }
  if (r.status == 200) return "ok";
  return StringAt(r.j, "error");
}

// The JSON-RPC response in an MCP answer (a JSON body, or the event of a stream that carries an id), or null.
json McpReply(const HttpResponse& r) {
  if (!IsStream(r)) return r.j.is_object() && r.j.contains("id") ? r.j : json();
  for (const auto& [event, data] : SseEvents(r.body)) {
    json j = json::parse(data, nullptr, false);
    if (j.is_object() && j.contains("id") && (j.contains("result") || j.contains("error"))) return j;
  }
  return nullptr;
}

// Whether the daemon refused the credential a TCP request presented: 401, or 403 for a session request that fails
// the browser checks (X-Isb-Csrf: 1, a JSON Content-Type, an Origin naming the daemon).
bool RefusedCredential(const std::vector<std::string>& headers, const HttpResponse& r) {
  if (r.status == 401) return true;
  if (r.status != 403 || ActorKindOf(headers) != "session") return false;
  std::string origin = HeaderValue(headers, "Origin");
  return HeaderValue(headers, "X-Isb-Csrf") != "1" ||
         !StartsWithNoCase(HeaderValue(headers, "Content-Type"), "application/json") ||
         (!origin.empty() && origin.rfind("http://127.0.0.1:", 0) != 0);
}

// Read-only, and so left out of the audit log when it succeeds.
bool IsReadOnly(const std::string& tool) {
  return std::find(kReadOnlyTools.begin(), kReadOnlyTools.end(), tool) != kReadOnlyTools.end() &&
         std::find(kAuditedReads.begin(), kAuditedReads.end(), tool) == kAuditedReads.end();
}

// The rows a call that ended in `outcome` leaves.
ExpectedRow::Rows RowsFor(const std::string& tool, const std::string& outcome) {
  if (outcome.empty()) return ExpectedRow::Rows::kMaybe;
  return outcome == "ok" && IsReadOnly(tool) ? ExpectedRow::Rows::kNone : ExpectedRow::Rows::kOne;
}

}  // namespace

ExpectedRow E2eTest::Unix(const std::string& action, const std::string& outcome) {
  return ExpectedRow{
      .action = action, .surface = "unix", .outcome = outcome, .actor_kind = "superadmin", .org = "default"};
}

ExpectedRow E2eTest::ByToken(const std::string& surface, const std::string& action, const std::string& outcome) {
  return ExpectedRow{.action = action, .surface = surface, .outcome = outcome, .actor_kind = "token"};
}

void E2eTest::ExpectAudit(const std::string& where, std::vector<ExpectedRow> calls) {
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].where.empty()) calls[i].where = where + (calls.size() > 1 ? " #" + std::to_string(i + 1) : "");
  }
  audit_.AddGroup(std::move(calls));
}

void E2eTest::LogRestCall(const std::string& tool, const std::string& surface, const std::string& actor_kind,
                          const std::string& org, const std::string& request_id, const HttpResponse& answer,
                          uint64_t started, const std::string& where) {
  ExpectedRow row{.action = tool,
                  .surface = surface,
                  .outcome = RestOutcome(answer),
                  .actor_kind = actor_kind,
                  .org = org,
                  .request_id = request_id};
  row.rows = RowsFor(tool, row.outcome);
  // Refused for an org the caller does not reach: the row is filed in no org, never in the org it named.
  if (answer.status == 404 && answer.j.is_object() && answer.j.value("message", "") == "no org '" + org + "'")
    row.org = "";
  // An accepted invitation's row is the joined org's.
  if (tool == "invitation_accept" && answer.status == 200) row.org = answer.j["result"].value("org", "?");
  // Refused before any tool: no row of the call itself (its refusal's row, if any, is logged by LogCall).
  if (answer.status == 401) row.rows = ExpectedRow::Rows::kNone;
  row.where = where;
  audit_.Add(std::move(row), started, audit_.Tick());
}

std::string E2eTest::LabelCall(const std::string& method, const std::string& target, std::vector<std::string>* headers,
                               uint64_t started) {
  if (method != "POST" || target.rfind(kToolsPrefix, 0) != 0) return "";
  std::string id = HeaderValue(*headers, "X-Request-Id");
  if (!id.empty()) {
    // The test's own: the daemon keeps it when it is sane, else the call is matched by its order.
    bool sane = id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
                  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                });
    return sane ? id : "";
  }
  id = "e2e-" + std::to_string(started);
  headers->push_back("X-Request-Id: " + id);
  return id;
}

void E2eTest::LogCall(bool via_unix, const std::string& method, const std::string& target,
                      const std::vector<std::string>& headers, const std::string& body, const HttpResponse& answer,
                      uint64_t started, const std::string& request_id) {
  const std::string route = target.substr(0, target.find('?'));
  const std::string where =
      "call " + std::to_string(started) + ", " + (via_unix ? "unix " : "tcp ") + method + " " + target.substr(0, 120);
  const std::string actor_kind = via_unix ? "superadmin" : ActorKindOf(headers);
  auto add = [&](ExpectedRow row) {
    row.where = where;
    audit_.Add(std::move(row), started, audit_.Tick());
  };
  // No credential at all (no bearer token, no session cookie) on a route that needs one: an "authenticate" row of no
  // one, within the daemon's budget of such rows per address (HttpServerOptions::on_refused).
  const std::string bearer = HeaderValue(headers, "Authorization");
  if (!via_unix && answer.status == 401 && route.rfind("/api/v1/auth/", 0) != 0 &&
      !(StartsWithNoCase(bearer, "Bearer ") && bearer.size() > 7) && !HasSessionCookie(headers)) {
    const bool mcp = route == "/mcp" || (route.rfind("/orgs/", 0) == 0 && route.ends_with("/mcp"));
    add({.action = "authenticate",
         .surface = mcp ? "mcp" : "rest",
         .outcome = "unauthenticated",
         .actor_kind = "anonymous",
         .rows = ExpectedRow::Rows::kMaybe});
    return;
  }
  // A credential the daemon refused (a bad token or session, a session request failing the browser checks): an
  // "authenticate" row in place of the call's.
  if (!via_unix && !actor_kind.empty() && route.rfind("/api/v1/auth/sign", 0) != 0 &&
      RefusedCredential(headers, answer)) {
    add({.action = "authenticate", .surface = "rest", .outcome = RestOutcome(answer), .actor_kind = "user"});
    return;
  }
  // MCP, whatever the method: a foreign Origin is refused before any message is read, as a refused "mcp" call.
  if ((route == "/mcp" || (route.rfind("/orgs/", 0) == 0 && route.ends_with("/mcp"))) && answer.status == 403 &&
      answer.j.is_object() && answer.j.value("message", "").rfind("Origin '", 0) == 0) {
    add({.action = "mcp",
         .surface = "mcp",
         .outcome = "forbidden",
         .actor_kind = actor_kind,
         .org = route == "/mcp" ? "default" : route.substr(6, route.size() - 10)});
    return;
  }
  if (method != "POST") return;
  if (route.rfind(kToolsPrefix, 0) == 0) {
    LogRestCall(route.substr(kToolsPrefix.size()), via_unix ? "unix" : "rest", actor_kind, OrgOf(headers, target),
                request_id, answer, started, where);
    return;
  }
  // Signing in and out: a row for each sign-in judged (its credentials checked, or refused by the rate limit) and
  // each session ended.
  if (route == "/api/v1/auth/signin" || route == "/api/v1/auth/signout") {
    bool sign_in = route == "/api/v1/auth/signin";
    bool judged = answer.status == 200 || (sign_in && (answer.status == 401 || answer.status == 429));
    if (!sign_in && !judged && RefusedCredential(headers, answer)) {
      add({.action = "authenticate", .surface = "rest", .outcome = RestOutcome(answer), .actor_kind = "user"});
    } else if (judged) {
      add({.action = sign_in ? "sign_in" : "sign_out",
           .surface = "rest",
           .outcome = RestOutcome(answer),
           .actor_kind = "user"});
    }
    return;
  }
  // MCP: /mcp (the default org) or /orgs/<org>/mcp; a tools/call with a tool's name is a call of that tool.
  std::string org = route == "/mcp" ? "default" : "";
  if (org.empty() && route.rfind("/orgs/", 0) == 0 && route.size() > 10 && route.ends_with("/mcp"))
    org = route.substr(6, route.size() - 10);
  json message = json::parse(body, nullptr, false);
  if (org.empty() || StringAt(message, "method") != "tools/call") return;
  const std::string name = message.contains("params") ? StringAt(message["params"], "name") : "";
  if (name.empty()) return;
  ExpectedRow row{.action = name, .surface = "mcp", .actor_kind = actor_kind, .org = org};
  json reply = McpReply(answer);
  if (!reply.is_object()) {
    row.rows = ExpectedRow::Rows::kNone;  // refused by the transport (origin, session, org) before any call
  } else if (reply.contains("error")) {
    // Invalid params of a call (an unknown tool, arguments not an object) and a header that disagrees with the body
    // are refusals of that call; other protocol errors call nothing.
    const json& error = reply["error"];
    int code =
        error.is_object() && error.contains("code") && error["code"].is_number_integer() ? error["code"].get<int>() : 0;
    bool unknown = StringAt(error, "message").rfind("unknown tool", 0) == 0;
    row.outcome = unknown ? "not_found" : "invalid_argument";
    row.rows = code == -32602 || code == -32020 ? ExpectedRow::Rows::kOne : ExpectedRow::Rows::kNone;
  } else if (reply["result"].is_object() && reply["result"].value("resultType", "") == "input_required") {
    row.rows = ExpectedRow::Rows::kNone;  // a question asked of the client (2026-07-28): nothing was called yet
  } else {
    const json& result = reply["result"];
    std::string text;
    if (result.contains("content") && result["content"].is_array() && !result["content"].empty())
      text = StringAt(result["content"][0], "text");
    bool is_error = result.is_object() && result.contains("isError") && result["isError"] == true;
    row.outcome = is_error ? text.substr(0, text.find(':')) : "ok";
    row.rows = RowsFor(row.action, row.outcome);
  }
  add(std::move(row));
}

void E2eTest::CheckReadOnlyTools() {
  HttpResponse r = Http(unix_endpoint(), "GET", "/api/v1/tools");
  ASSERT_EQ(r.status, 200) << r.Describe();
  std::vector<std::string> read_only;
  for (const json& t : r.j["tools"])
    if (t["annotations"].value("readOnlyHint", false)) read_only.push_back(t["name"].get<std::string>());
  std::vector<std::string> want = kReadOnlyTools;
  std::sort(read_only.begin(), read_only.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(read_only, want) << "kReadOnlyTools (all_tools.h) is not the daemon's set of read-only tools";
}

void E2eTest::CheckAuditLog() {
  if (!audit_check_) return;
  const std::string db = state_dir_ + "/isb.db";
  if (!std::filesystem::exists(db)) {
    ADD_FAILURE() << "no state file " << db << ": the audit log cannot be checked";
    return;
  }
  std::string error;
  std::vector<AuditRow> rows = ReadAuditRows(db, &error);
  ASSERT_TRUE(error.empty()) << error;
  std::vector<std::string> failures = audit_.Check(rows);
  constexpr size_t kShown = 30;
  for (size_t i = 0; i < failures.size() && i < kShown; ++i) ADD_FAILURE() << "audit log: " << failures[i];
  if (failures.size() > kShown) ADD_FAILURE() << "audit log: " << failures.size() - kShown << " more differences";

  ProcResult verify = RunProcess({ISB_BINARY, "audit", "verify", "--state-dir", state_dir_, "--json"});
  json report = json::parse(verify.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << verify.Describe();
  EXPECT_EQ(report["audit_log"]["ok"], true) << verify.Describe();
  EXPECT_EQ(report["audit_log"]["rows"], rows.size()) << verify.Describe();
  EXPECT_EQ(report["audit_log"]["first_broken"], nullptr) << verify.Describe();
}

}  // namespace isb::e2e
