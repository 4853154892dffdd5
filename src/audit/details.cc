// Reduces a call's input to the allow-listed scalars an audit record may hold.
#include "audit/details.h"

#include <algorithm>

namespace isb::audit {
namespace {

using nlohmann::json;

json Scalar(const json& v) {
  if (v.is_string()) return CleanText(v.get<std::string>());
  if (v.is_number() || v.is_boolean()) return v;
  return nullptr;
}

// What stands for the items of a list past kMaxDetailItems.
std::string More(size_t total) { return "\xE2\x80\xA6 " + std::to_string(total - kMaxDetailItems) + " more"; }

json CutList(std::vector<std::string> items) {
  json out = json::array();
  for (size_t i = 0; i < items.size() && i < kMaxDetailItems; ++i) out.push_back(CleanText(items[i]));
  if (items.size() > kMaxDetailItems) out.push_back(More(items.size()));
  return out;
}

json Strings(const json& v) {
  if (!v.is_array()) return nullptr;
  std::vector<std::string> items;
  for (const auto& e : v)
    if (e.is_string()) items.push_back(e.get<std::string>());
  return CutList(std::move(items));
}

json KeyNames(const json& v) {
  std::vector<std::string> names;
  if (v.is_object()) {
    for (const auto& [k, ignored] : v.items()) names.push_back(k);
  } else if (v.is_array()) {
    for (const auto& e : v)
      if (e.is_string()) {
        const auto& s = e.get_ref<const std::string&>();
        names.push_back(s.substr(0, s.find('=')));
      }
  } else {
    return nullptr;
  }
  std::sort(names.begin(), names.end());
  return CutList(std::move(names));
}

json Records(const json& v) {
  if (!v.is_array()) return nullptr;
  json out = json::array();
  for (const auto& e : v) {
    if (out.size() == kMaxDetailItems) {
      out.push_back(More(v.size()));
      break;
    }
    if (!e.is_object()) continue;
    json record = json::object();
    for (const auto& [k, member] : e.items())
      if (json kept = Scalar(member); !kept.is_null()) record[CleanText(k)] = std::move(kept);
    out.push_back(std::move(record));
  }
  return out;
}

bool IsAscii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

}  // namespace

std::string CleanText(std::string_view s) {
  std::string out(s);
  if (!IsAscii(out)) {
    // nlohmann's serializer validates UTF-8 and replaces what is invalid; parse its string literal back.
    out = json::parse(json(out).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
  }
  if (out.size() <= kMaxDetailBytes) return out;
  size_t n = kMaxDetailBytes;
  while (n > 0 && (static_cast<unsigned char>(out[n]) & 0xC0) == 0x80) --n;
  return out.substr(0, n) + "\xE2\x80\xA6";
}

DetailsPolicy& DetailsPolicy::Allow(const std::string& action, std::vector<DetailField> fields) {
  auto& list = allowed_[action];
  for (auto& f : fields) list.push_back(std::move(f));
  return *this;
}

json DetailsPolicy::Filter(std::string_view action, const json& details) const {
  json out = json::object();
  auto it = allowed_.find(action);
  if (it == allowed_.end() || !details.is_object()) return out;
  for (const DetailField& f : it->second) {
    auto v = details.find(f.key);
    if (v == details.end()) continue;
    json kept = f.keep == Keep::kScalar    ? Scalar(*v)
                : f.keep == Keep::kStrings ? Strings(*v)
                : f.keep == Keep::kRecords ? Records(*v)
                                           : KeyNames(*v);
    if (!kept.is_null()) out[f.key] = std::move(kept);
  }
  return out;
}

DetailsPolicy DefaultDetailsPolicy() {
  DetailsPolicy p;
  p.Allow("sandbox_create", {{"name"},
                             {"image"},
                             {"cpus"},
                             {"mem_limit"},
                             {"disk"},
                             {"pids"},
                             {"environment", Keep::kKeyNames},
                             {"working_dir"},
                             {"user"},
                             {"labels", Keep::kKeyNames},
                             {"egress"},
                             {"expires"},
                             {"idle_timeout"},
                             {"ports", Keep::kRecords}});
  p.Allow("sandbox_exec",
          {{"argv", Keep::kStrings}, {"env", Keep::kKeyNames}, {"workdir"}, {"timeout"}, {"encoding"}, {"detach"}});
  p.Allow("sandbox_extend", {{"by"}});
  p.Allow("sandbox_list", {{"labels", Keep::kKeyNames}});
  p.Allow("sandbox_file_read", {{"path"}, {"encoding"}});
  p.Allow("sandbox_file_write", {{"path"}, {"mode"}});
  p.Allow("egress_connect", {{"reason"}});  // a sandbox's refused connection: why (names a host, never a secret)
  // Secrets: names, versions and hosts, never a value (the value fields are not on any list).
  for (const char* tool : {"secret_create", "secret_set", "secret_import"})
    p.Allow(tool, {{"name"}, {"hosts", Keep::kStrings}, {"labels", Keep::kKeyNames}});
  for (const char* tool : {"secret_get", "secret_inspect", "secret_delete"}) p.Allow(tool, {{"name"}, {"version"}});
  // The proxy's reports about a sandbox's secrets: which secret, which host, what was done.
  p.Allow("secret_leak", {{"secret"}, {"host"}, {"where"}, {"action"}});
  p.Allow("secret_use", {{"secret"}, {"host"}, {"hosts", Keep::kStrings}, {"swapped"}, {"scrubbed"}, {"held"}});
  p.Allow("audit_rows_dropped", {{"dropped"}, {"why"}});
  // An OAuth client's metadata document read (the redirect URIs a consent is then given on) or refused (why).
  p.Allow("oauth_client_document", {{"redirect_uris", Keep::kStrings}, {"reason"}});
  return p;
}

bool IsOutcome(std::string_view outcome) {
  if (outcome == "ok" || outcome == kOutcomeStarted) return true;
  // Every code, up to the last one declared (kTooManyRequests).
  for (int c = 0; c <= static_cast<int>(Code::kTooManyRequests); ++c)
    if (outcome == CodeName(static_cast<Code>(c))) return true;
  return false;
}

std::string OutcomeOf(const Error& error) { return std::string(CodeName(error.code)); }

std::string OutcomeOf(const Status& status) { return status.ok() ? "ok" : OutcomeOf(status.error()); }

}  // namespace isb::audit
