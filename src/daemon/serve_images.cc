// The daemon's images, wired: the tools' options over the service, users of an image from the sandbox list,
// snapshots through the manager, registry logins from the secret store.
#include "daemon/serve_images.h"

#include "api/image_tools.h"
#include "api/sandboxes.h"
#include "image/reference.h"

#include <cstdlib>

namespace isb::daemon {

Result<DaemonImages> OpenDaemonImages(const std::string& state_dir, image::RegistrySettings settings) {
  DaemonImages out;
  ISB_ASSIGN_OR_RETURN(out.store, image::ImageStore::Open(state_dir + "/images"));
  ISB_ASSIGN_OR_RETURN(out.service, image::ImageService::Create(*out.store, std::move(settings)));
  return out;
}

api::ImageToolOptions DaemonImageToolOptions(DaemonImages& images, SandboxManager& manager,
                                             secrets::SecretStore& secrets,
                                             std::function<Status(const api::CallContext& ctx)> may_read_secrets,
                                             api::QuotaGate::Lookup quotas) {
  api::ImageToolOptions options;
  options.disk_quota = [&manager, quotas](const std::string& org) -> Result<std::optional<api::ImageDiskQuota>> {
    ISB_ASSIGN_OR_RETURN(identity::Quota q, quotas(org));
    if (!q.disk) return std::optional<api::ImageDiskQuota>();
    api::ImageDiskQuota out{.limit = static_cast<uint64_t>(*q.disk)};
    ISB_ASSIGN_OR_RETURN(std::vector<api::SandboxInfo> all, manager.List());
    for (const api::SandboxInfo& s : all) {
      if (api::OrgOf(s.spec) == org) out.sandboxes += s.spec.disk;
    }
    return std::optional<api::ImageDiskQuota>(out);
  };
  options.users = [&manager](const std::string& org, const std::string& digest) {
    std::vector<std::string> users;
    auto all = manager.List();
    if (!all.ok()) return users;
    for (const api::SandboxInfo& s : *all) {
      if (api::OrgOf(s.spec) == org && s.spec.image_digest == digest) users.push_back(s.name.empty() ? s.id : s.name);
    }
    return users;
  };
  options.login = [&secrets, &images, may_read_secrets](const api::CallContext& ctx, const std::string& name,
                                                        const std::string& ref) -> Result<image::RegistryLogin> {
    // The value goes to a registry as the caller's login: as much as reading it.
    if (Status may = may_read_secrets ? may_read_secrets(ctx) : Status(Error::Of(Code::kForbidden, "no secrets"));
        !may.ok())
      return Error::Of(Code::kForbidden,
                       "auth_secret: using a secret as a login takes what secret_get takes: " + may.error().message);
    ISB_ASSIGN_OR_RETURN(image::ImageReference parsed, image::ParseImageReference(ref));
    auto value = secrets.Get(ctx.org, name);
    if (!value.ok()) return Error::Of(value.error().code, "auth_secret: " + value.error().message);
    const std::string api = parsed.ApiHost();
    const size_t port_at = api.rfind(':');
    const std::string host = port_at == std::string::npos ? api : api.substr(0, port_at);
    const uint16_t port =
        port_at == std::string::npos ? 443 : static_cast<uint16_t>(std::atoi(api.c_str() + port_at + 1));
    if (!images.service->OperatorAllows(parsed.registry) && !image::HostListed(value->meta.hosts, host, port))
      return Error::Of(Code::kForbidden, "auth_secret: secret '" + name + "' may not be sent to " + host + ":" +
                                             std::to_string(port) + " (not one of its hosts)");
    const std::string_view text = value->value.view();
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return Error::Of(Code::kInvalidArgument, "auth_secret: secret '" + name + "' is not USER:PASSWORD");
    return image::RegistryLogin{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1)),
                                value->meta.hosts};
  };
  options.in_use = [&manager] {
    std::vector<std::string> ids;
    auto all = manager.List();
    if (!all.ok()) return ids;
    for (const api::SandboxInfo& s : *all) {
      for (const std::string& layer : s.spec.image_layers) {
        if (std::string id = image::DiffIdOfLayerRoot(layer); !id.empty()) ids.push_back(id);
      }
    }
    return ids;
  };
  options.snapshot = [&images, &manager](const std::string& org, const std::string& ref,
                                         const std::string& name) -> Result<image::ImageRecord> {
    ISB_ASSIGN_OR_RETURN(std::string id, manager.Resolve(org, ref));
    std::optional<image::ImageRecord> made;
    ISB_TRY(manager.WithLayer(id, [&](const std::string& upper, uint32_t uid_base, const api::SandboxSpec& spec) {
      auto base = images.store->Get(org, spec.image_digest);
      if (!base.ok()) return Status(Error::Of(Code::kConflict, "the sandbox's image '" + spec.image + "' is gone"));
      // What is the sandbox's own at run time (secrets, sockets, scratch), never part of an image.
      auto r = images.service->Snapshot(org, name, *base, upper, uid_base, {"run", "tmp", "proc", "dev", "sys"});
      if (!r.ok()) return Status(r.error());
      made = std::move(*r);
      return Status();
    }));
    return std::move(*made);
  };
  return options;
}

std::function<Result<api::ResolvedImage>(const std::string& org, const std::string& ref,
                                         const std::function<Status(uint64_t max_bytes)>& may_flatten)>
ImageResolver(const DaemonImages& images) {
  return [store = images.store.get()](const std::string& org, const std::string& ref,
                                      const std::function<Status(uint64_t)>& may_flatten) {
    image::FlattenGate gate;
    if (may_flatten) gate = [&may_flatten](const image::FlattenRequest& r) { return may_flatten(r.max_bytes); };
    return api::ResolveImage(*store, org, ref, gate);
  };
}

}  // namespace isb::daemon
