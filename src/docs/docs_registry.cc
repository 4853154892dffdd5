// The daemon's tool registrations over stores in a temporary directory, for the reference pages.
#include "docs/docs_registry.h"

#include <stdlib.h>

#include <filesystem>

#include "api/all_tools.h"
#include "api/preview_access.h"
#include "api/sandboxes.h"
#include "api/spec_policy.h"
#include "audit/history.h"
#include "audit/log.h"
#include "identity/store.h"
#include "image/image_service.h"
#include "image/image_store.h"
#include "secrets/age_identity.h"
#include "secrets/secret_store.h"
#include "store/db.h"
#include "store/migrations.h"

namespace isb::docs {
namespace {

Error NotHere() { return Error::Of(Code::kUnavailable, "isb_docs runs no sandboxes"); }

// Sandboxes for a registry that is read, never called: every operation is refused.
class NoSandboxes : public api::Sandboxes {
 public:
  Result<api::SandboxInfo> Create(const api::SandboxSpec&, const api::CallOrigin& = {}) override { return NotHere(); }
  Result<api::SandboxInfo> Get(const std::string&) override { return NotHere(); }
  Result<std::vector<api::SandboxInfo>> List() override { return NotHere(); }
  Result<api::ExecResult> Exec(const std::string&, const api::ExecRequest&, const api::OutputSink&) override {
    return NotHere();
  }
  Result<api::SandboxInfo> Stop(const std::string&, const api::CallOrigin& = {}) override { return NotHere(); }
  Result<api::SandboxInfo> Start(const std::string&, const api::CallOrigin& = {}) override { return NotHere(); }
  Result<api::SandboxInfo> Extend(const std::string&, std::chrono::seconds, const api::CallOrigin& = {}) override {
    return NotHere();
  }
  Result<api::SandboxInfo> SetEgress(const std::string&, const nlohmann::json&) override { return NotHere(); }
  Status Remove(const std::string&, const api::CallOrigin& = {}) override { return NotHere(); }
  Result<api::FileData> ReadFile(const std::string&, const std::string&) override { return NotHere(); }
  Status WriteFile(const std::string&, const std::string&, const api::FileData&) override { return NotHere(); }
};

}  // namespace

// Members in the order they are made; destroyed in reverse, the directory last.
struct DocsRegistry::Parts {
  ~Parts() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
  std::string dir;
  std::unique_ptr<store::Db> db;
  std::unique_ptr<audit::AuditLog> log;
  std::unique_ptr<audit::History> history;
  std::unique_ptr<identity::IdentityStore> identity;
  std::unique_ptr<secrets::SecretStore> secrets;
  std::unique_ptr<image::ImageStore> images;
  std::unique_ptr<image::ImageService> image_service;
  NoSandboxes sandboxes;
  api::RemoteSpecPolicy remote;
  api::PreviewAccess previews{api::PreviewAccessOptions{}};
  api::Registry registry;
};

DocsRegistry::DocsRegistry(std::unique_ptr<Parts> parts) : parts_(std::move(parts)) {}
DocsRegistry::~DocsRegistry() = default;

const api::Registry& DocsRegistry::registry() const { return parts_->registry; }

Result<std::unique_ptr<DocsRegistry>> DocsRegistry::Open() {
  auto p = std::make_unique<Parts>();
  std::string tmpl = (std::filesystem::temp_directory_path() / "isb-docs-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Error::Sys("mkdtemp " + tmpl);
  p->dir = tmpl;
  ISB_ASSIGN_OR_RETURN(p->db, store::Db::Open(p->dir + "/isb.db", store::Migrations()));
  ISB_ASSIGN_OR_RETURN(p->log, audit::AuditLog::Open(*p->db));
  ISB_ASSIGN_OR_RETURN(p->history, audit::History::Open(*p->db));
  ISB_ASSIGN_OR_RETURN(p->identity, identity::IdentityStore::Open(*p->db, {.state_dir = p->dir}));
  ISB_ASSIGN_OR_RETURN(p->secrets, secrets::SecretStore::Open({.dir = p->dir + "/secrets",
                                                               .identity = secrets::AgeIdentity::Generate(),
                                                               .extra_recipients = {}}));
  ISB_ASSIGN_OR_RETURN(p->images, image::ImageStore::Open(p->dir + "/images"));
  ISB_ASSIGN_OR_RETURN(p->image_service, image::ImageService::Create(*p->images, {}));
  // The tools daemon/serve.cc registers, over the throwaway stores and sandboxes that refuse.
  ISB_TRY(api::RegisterAllTools(p->registry, {.sandboxes = p->sandboxes,
                                              .previews = p->previews,
                                              .identity = *p->identity,
                                              .audit_log = *p->log,
                                              .history = *p->history,
                                              .secrets = *p->secrets,
                                              .images = *p->image_service,
                                              .sandbox_options = {.remote = &p->remote}}));
  return std::unique_ptr<DocsRegistry>(new DocsRegistry(std::move(p)));
}

}  // namespace isb::docs
