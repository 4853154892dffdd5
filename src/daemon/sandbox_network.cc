// A sandbox's network as the manager prepares it: its egress checked, the environment and trust store a network
// gives it, and the secrets' placeholders.
#include <filesystem>

#include "api/org_sandboxes.h"
#include "base/file.h"
#include "daemon/sandbox_manager.h"
#include "daemon/sandbox_record.h"
#include "daemon/trust_bundle.h"

namespace isb::daemon {

Error SandboxManager::InEgress(const Error& e) {
  if (e.message.starts_with("egress")) return e;
  return Error::Of(e.code, "egress: " + e.message);
}

Result<egress::EgressSpec> SandboxManager::Egress(const api::SandboxSpec& spec) const {
  Result<egress::EgressSpec> e = ParseSandboxEgress(spec.egress);
  if (!e.ok()) return InEgress(e.error());
  if (e->mode != egress::EgressMode::kNone && options_.egress == nullptr)
    return Error::Of(Code::kUnavailable, "egress: " + options_.egress_unavailable);
  if (!e->secrets.empty()) {
    if (options_.secrets == nullptr)
      return Error::Of(Code::kUnavailable, "egress: secrets: the daemon runs without a secret store");
    ISB_TRY(options_.secrets->Resolve(api::OrgOf(spec), *e));
  }
  return e;
}

Status SandboxManager::AddSecrets(Record& rec, const egress::EgressSpec& egress) const {
  if (egress.secrets.empty()) return {};
  rec.spec.egress = egress::EgressSpecToJson(egress);
  return options_.secrets->AddEnvironment(rec.id, egress, rec.spec.environment);
}

void SandboxManager::AddNetworkEnvironment(api::SandboxSpec& spec, const SandboxNet& net) {
  // The proxy variables join the sandbox's environment unless the caller set them.
  for (const std::string& kv : net.env) {
    size_t eq = kv.find('=');
    spec.environment.try_emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (!net.ca_pem.empty())
    for (const char* k : kTrustBundleVariables) spec.environment.try_emplace(k, kSandboxTrustBundle);
}

Status SandboxManager::PrepareNetwork(Record& rec, const egress::EgressSpec& spec, SandboxNet* out) {
  if (spec.mode == egress::EgressMode::kNone) return {};
  ISB_ASSIGN_OR_RETURN(SandboxNet net, options_.egress->Prepare(rec.id, spec, api::OrgOf(rec.spec)));
  AddNetworkEnvironment(rec.spec, net);
  ISB_TRY(MakeDirs(Dir(rec.id), 0711));
  ISB_TRY(isb::WriteFile(Dir(rec.id) + "/resolv.conf", net.resolv_conf, 0644));
  if (!net.ca_pem.empty()) ISB_TRY(WriteTrustBundle(rec, net.ca_pem));
  ISB_TRY(isb::WriteFileAtomically(Dir(rec.id) + "/net_slot", std::to_string(net.slot), 0600));
  if (out != nullptr) *out = std::move(net);
  return {};
}

Status SandboxManager::WriteTrustBundle(const Record& rec, const std::string& ca_pem) {
  ISB_ASSIGN_OR_RETURN(std::string bundle, SandboxTrustBundle(rec.spec, ca_pem));
  ISB_TRY(isb::WriteFile(Dir(rec.id) + "/" + kTrustBundleFile, bundle, 0644));
  // A running sandbox's copy on its mounted layer, rewritten in place: its bind sees the new contents. A stopped
  // one's layer is not mounted (nothing is there); it gets the copy when it starts.
  if (std::error_code ec; std::filesystem::exists(Dir(rec.id) + "/layer/" + kTrustBundleFile, ec))
    return isb::WriteFile(Dir(rec.id) + "/layer/" + kTrustBundleFile, bundle, 0644);
  return {};
}

Status SandboxManager::CopyTrustBundleToLayer(const std::string& id) {
  ISB_ASSIGN_OR_RETURN(std::string bundle, isb::ReadFile(Dir(id) + "/" + kTrustBundleFile));
  return isb::WriteFile(Dir(id) + "/layer/" + kTrustBundleFile, bundle, 0644);
}

Result<Fd> SandboxManager::OpenNetwork(const std::string& id) {
  ISB_ASSIGN_OR_RETURN(Record rec, Load(id));
  if (!Alive(rec)) return Error::Of(Code::kConflict, "sandbox " + rec.id + " is not running");
  Result<Fd> netns = runtime_->OpenNetwork(Handle(rec));
  if (!netns.ok()) {
    Error e = netns.error();  // its code and errno kept
    e.message = "sandbox " + id + ": " + e.message;
    return e;
  }
  return netns;
}

std::string SandboxManager::RunOf(const std::string& id) {
  Result<Record> rec = Load(id);
  // Its runtime's record of it: each start writes one of its own.
  return rec.ok() && Alive(*rec) ? rec->runtime + " " + rec->runtime_record : "";
}

}  // namespace isb::daemon
