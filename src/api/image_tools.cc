// The image tools. The authorizer has checked the caller's role in the call's org; every call names that org's
// images only, and an image of another org is "not found" as one that does not exist.
#include "api/image_tools.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <optional>
#include <sstream>

#include "api/json_util.h"
#include "api/sandbox_tools.h"
#include "api/schema.h"
#include "base/fd.h"
#include "image/layered_file.h"
#include "image/reference.h"

namespace isb::api {
namespace {

using json = nlohmann::json;
using identity::Role;
using identity::ScopeKind;

constexpr size_t kMaxRef = 512;

json ImageField() {
  return Str(
      "The image: its name (\"python:3.12\", \"127.0.0.1:5000/team/app:1\"), its digest (\"sha256:...\") or "
      "an id (12 or more hex digits of the digest).",
      kMaxRef, 1);
}

json ImageSchema() {
  return Output({{"name", {{"type", "string"}}},
                 {"id", {{"type", "string"}}},
                 {"digest", {{"type", "string"}}},
                 {"layers", {{"type", "integer"}}},
                 {"size", {{"type", "integer"}, {"description", "Bytes of its layers' blobs."}}},
                 {"unpacked_size", {{"type", "integer"}}},
                 {"source", {{"type", "string"}}},
                 {"created_at", {{"type", "integer"}, {"description", "Unix milliseconds."}}}},
                {"name", "id", "digest"});
}

// The name an org's image is known by: a reference normalized ("python:3.12" is docker.io/library/python:3.12), or,
// for what no registry names (a snapshot), the name as given.
std::string Normalized(const std::string& ref) {
  Result<image::ImageReference> parsed = image::ParseImageReference(ref);
  return parsed.ok() ? parsed->str() : ref;
}

Result<image::ImageRecord> FindImage(const image::ImageStore& store, const std::string& org, const std::string& ref) {
  Result<image::ImageRecord> found = store.Get(org, ref);
  if (found.ok() || found.error().code != Code::kNotFound) return found;
  const std::string normalized = Normalized(ref);
  if (normalized == ref) return found;
  return store.Get(org, normalized);
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 10 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// The id of `name` in a passwd- or group-style file: field 3 (and for passwd, field 4, the primary group).
std::optional<std::pair<std::string, std::string>> LookUp(const std::string& file, const std::string& name) {
  std::istringstream lines(file);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, ':');) f.push_back(x);
    if (f.size() >= 3 && f[0] == name && AllDigits(f[2])) return std::make_pair(f[2], f.size() >= 4 ? f[3] : "");
  }
  return std::nullopt;
}

// The config's User ("name", "uid", "name:group", "uid:gid") as "UID[:GID]", names looked up in the image.
Result<std::string> ResolveUser(const std::vector<std::string>& layers, const std::string& user) {
  if (user.empty()) return std::string();
  const size_t colon = user.find(':');
  const std::string u = user.substr(0, colon), g = colon == std::string::npos ? "" : user.substr(colon + 1);
  std::string uid = u, gid = g;
  if (!AllDigits(u)) {
    std::optional<std::string> passwd = image::ReadLayeredFile(layers, "etc/passwd", 1 << 20);
    auto found = passwd ? LookUp(*passwd, u) : std::nullopt;
    if (!found)
      return Error::Of(Code::kInvalidArgument, "image user '" + user +
                                                   "': no such user in the image's /etc/passwd; "
                                                   "give user as UID[:GID]");
    uid = found->first;
    if (g.empty() && AllDigits(found->second)) gid = found->second;
  }
  if (!g.empty() && !AllDigits(g)) {
    std::optional<std::string> group = image::ReadLayeredFile(layers, "etc/group", 1 << 20);
    auto found = group ? LookUp(*group, g) : std::nullopt;
    if (!found)
      return Error::Of(Code::kInvalidArgument, "image user '" + user +
                                                   "': no such group in the image's /etc/group; "
                                                   "give user as UID[:GID]");
    gid = found->first;
  }
  return gid.empty() ? uid : uid + ":" + gid;
}

json RecordJson(const image::ImageRecord& r) {
  json out = ImageJson(r);
  json layers = json::array();
  for (const image::LayerRecord& l : r.layers)
    layers.push_back({{"digest", l.digest}, {"diff_id", l.diff_id}, {"media_type", l.media_type}, {"size", l.size}});
  out["layer_list"] = std::move(layers);
  out["config"] = {{"env", r.config.env},
                   {"entrypoint", r.config.entrypoint},
                   {"cmd", r.config.cmd},
                   {"working_dir", r.config.working_dir},
                   {"user", r.config.user},
                   {"os", r.config.os},
                   {"architecture", r.config.architecture}};
  return out;
}

// Tools that name a file on the daemon's host: listed for platform admins, called by the host alone (HostOnly).
ToolAccess HostFileAccess() {
  return ToolAccess{.least_role = Role::kOwner, .kind = ScopeKind::kAdmin, .org_bound = true, .platform = true};
}

// Whether the caller is the host itself: only it may name files on the host.
Status HostOnly(const CallContext& ctx, const char* tool) {
  if (ctx.identity.superadmin) return {};
  return Error::Of(Code::kForbidden, std::string(tool) +
                                         " names a file on the daemon's host: only the host (the "
                                         "unix socket) may call it");
}

// The quota's check once `added` are recorded; when refused, what they alone held is collected at once.
Status FinishWithin(image::ImageService& images, const ImageToolOptions& options, const ImageQuotaCheck& quota,
                    const std::vector<image::ImageRecord>& added) {
  Status st = quota.Finish(images.store(), added);
  if (!st.ok()) (void)images.store().CollectGarbage(options.in_use ? options.in_use() : std::vector<std::string>{});
  return st;
}

Status AddPull(Registry& reg, image::ImageService& images, const ImageToolOptions& options) {
  return reg.Add(Tool{
      "image_pull", "Pull an image",
      "Fetches an image from its registry (the layers for this host's platform, each verified against its digest) "
      "and keeps it as the org's, under its normalized name. Layers already on this host are not fetched again. "
      "Progress is streamed: one JSON object per line on stream \"progress\".",
      Object({{"ref", Str("The reference: \"python:3.12\", \"ghcr.io/org/app:1\", \"127.0.0.1:5000/team/app@sha256:"
                          "...\".",
                          kMaxRef, 1)},
              {"auth_secret", Str("An org secret holding \"USER:PASSWORD\" for the registry's basic auth.", 128, 1)}},
             {"ref"}),
      ImageSchema(), ToolAnnotations{.idempotent = true, .open_world = true}, true,
      [&images, options](const json& in, const CallContext& ctx) -> Result<json> {
        std::optional<image::RegistryLogin> login;
        if (in.contains("auth_secret")) {
          if (!options.login) return Error::Of(Code::kInvalidArgument, "auth_secret: this daemon has no secrets store");
          ISB_ASSIGN_OR_RETURN(image::RegistryLogin l,
                               options.login(ctx, in["auth_secret"].get<std::string>(), in["ref"].get<std::string>()));
          login = std::move(l);
        }
        image::PullProgressFn progress;
        if (ctx.progress) {
          progress = [&ctx](const image::PullProgress& p) {
            json line = {{"phase", p.phase}, {"done", p.done}, {"total", p.total}};
            if (!p.layer.empty()) line["layer"] = p.layer;
            ctx.progress("progress", line.dump() + "\n");
          };
        }
        auto cancelled = ctx.cancelled ? ctx.cancelled : std::function<bool()>([] { return false; });
        ISB_ASSIGN_OR_RETURN(ImageQuotaCheck quota,
                             ImageQuotaCheck::Begin(images.store(), options.disk_quota, ctx.org));
        const std::string ref = in["ref"].get<std::string>();
        Result<image::ImageRecord> r = images.Pull(ctx.org, ref, login, progress, cancelled, quota.room());
        if (!r.ok()) return quota.Explain(ref, r.error());
        if (Status st = FinishWithin(images, options, quota, {*r}); !st.ok()) return st.error();
        return ImageJson(*r);
      }});
}

Status AddReads(Registry& reg, image::ImageService& images, const ImageToolOptions& options) {
  ISB_TRY(reg.Add(Tool{"image_list", "List images", "The org's images: name, id, digest, layers and size.",
                       Object({}, {}), Output({{"images", {{"type", "array"}, {"items", ImageSchema()}}}}, {"images"}),
                       ToolAnnotations{.read_only = true, .idempotent = true}, false,
                       [&images](const json&, const CallContext& ctx) -> Result<json> {
                         json out = json::array();
                         for (const image::ImageRecord& r : images.store().List(ctx.org)) out.push_back(ImageJson(r));
                         return json{{"images", std::move(out)}};
                       }}));
  json inspect = ImageSchema();
  inspect["properties"]["used_by"] = {{"type", "array"}, {"items", {{"type", "string"}}}};
  inspect["properties"]["config"] = {{"type", "object"}};
  inspect["properties"]["layer_list"] = {{"type", "array"}};
  return reg.Add(Tool{
      "image_inspect", "Inspect an image",
      "One image of the org: its config (env, entrypoint, cmd, working dir, user, platform), its layers, its size "
      "and the sandboxes made from it.",
      Object({{"image", ImageField()}}, {"image"}), std::move(inspect),
      ToolAnnotations{.read_only = true, .idempotent = true}, false,
      [&images, options](const json& in, const CallContext& ctx) -> Result<json> {
        ISB_ASSIGN_OR_RETURN(image::ImageRecord r, FindImage(images.store(), ctx.org, in["image"].get<std::string>()));
        json out = RecordJson(r);
        out["used_by"] = options.users ? options.users(ctx.org, r.manifest_digest) : std::vector<std::string>{};
        return out;
      }});
}

Status AddChanges(Registry& reg, image::ImageService& images, const ImageToolOptions& options) {
  ISB_TRY(reg.Add(Tool{
      "image_remove", "Remove an image",
      "Removes the org's image (refused while a sandbox is made from it, naming them); layers no image uses any "
      "more are deleted from the host.",
      Object({{"image", ImageField()}}, {"image"}), Output({{"removed", {{"type", "string"}}}}, {"removed"}),
      ToolAnnotations{.destructive = true}, false,
      [&images, options](const json& in, const CallContext& ctx) -> Result<json> {
        ISB_ASSIGN_OR_RETURN(image::ImageRecord r, FindImage(images.store(), ctx.org, in["image"].get<std::string>()));
        if (options.users) {
          std::vector<std::string> users = options.users(ctx.org, r.manifest_digest);
          if (!users.empty()) {
            std::string names;
            for (const std::string& u : users) names += (names.empty() ? "" : ", ") + u;
            return Error::Of(Code::kConflict,
                             "image '" + r.name + "' is used by sandbox(es) " + names + ": remove them first");
          }
        }
        if (Status st = images.store().Remove(ctx.org, r.name); !st.ok()) return st.error();
        (void)images.store().CollectGarbage(options.in_use ? options.in_use() : std::vector<std::string>{});
        return json{{"removed", r.name}};
      }}));
  ISB_TRY(reg.Add(
      Tool{"image_import", "Import an image archive",
           "Reads an OCI layout (a directory or a tar of one) or a `docker save` archive from a file on the daemon's "
           "host and keeps its images as the org's (the host only).",
           Object({{"path", Str("The archive's absolute path on the daemon's host.", 4096, 1)},
                   {"name", Str("The name to give the image (an archive of one image).", kMaxRef, 1)}},
                  {"path"}),
           Output({{"images", {{"type", "array"}, {"items", ImageSchema()}}}}, {"images"}), ToolAnnotations{}, false,
           [&images, options](const json& in, const CallContext& ctx) -> Result<json> {
             if (Status host = HostOnly(ctx, "image_import"); !host.ok()) return host.error();
             ISB_ASSIGN_OR_RETURN(ImageQuotaCheck quota,
                                  ImageQuotaCheck::Begin(images.store(), options.disk_quota, ctx.org));
             ISB_ASSIGN_OR_RETURN(std::vector<image::ImageRecord> got,
                                  images.Import(ctx.org, in["path"].get<std::string>(), in.value("name", "")));
             if (Status st = FinishWithin(images, options, quota, got); !st.ok()) return st.error();
             json out = json::array();
             for (const image::ImageRecord& r : got) out.push_back(ImageJson(r));
             return json{{"images", std::move(out)}};
           },
           HostFileAccess()}));
  ISB_TRY(reg.Add(Tool{
      "image_export", "Export an image archive",
      "Writes the org's image as an OCI archive (a tar of an OCI layout, read by skopeo and podman load) to a file "
      "on the daemon's host (the host only).",
      Object({{"image", ImageField()}, {"path", Str("The archive's absolute path on the daemon's host.", 4096, 1)}},
             {"image", "path"}),
      Output({{"path", {{"type", "string"}}}, {"digest", {{"type", "string"}}}}, {"path", "digest"}), ToolAnnotations{},
      false,
      [&images](const json& in, const CallContext& ctx) -> Result<json> {
        if (Status host = HostOnly(ctx, "image_export"); !host.ok()) return host.error();
        ISB_ASSIGN_OR_RETURN(image::ImageRecord r, FindImage(images.store(), ctx.org, in["image"].get<std::string>()));
        if (Status st = images.Export(ctx.org, r.name, in["path"].get<std::string>()); !st.ok()) return st.error();
        return json{{"path", in["path"]}, {"digest", r.manifest_digest}};
      },
      HostFileAccess()}));
  if (!options.snapshot) return {};
  return reg.Add(Tool{
      "sandbox_snapshot", "Snapshot a sandbox into an image",
      "The sandbox's files (its writable layer on top of its image) kept as a new image of the org, which new "
      "sandboxes start from. Secret files, /run, /tmp and /proc are never part of it.",
      Object({{"sandbox", Str("The sandbox's id or name.", 128, 1)},
              {"name", Str("The new image's name (\"snap/app:1\").", kMaxRef, 1)}},
             {"sandbox", "name"}),
      ImageSchema(), ToolAnnotations{}, false,
      [&images, options](const json& in, const CallContext& ctx) -> Result<json> {
        // Named as pulls are (normalized), so one spelling finds it; a name a sandbox spec could not hold is refused.
        ISB_ASSIGN_OR_RETURN(image::ImageReference name, image::ParseImageReference(in["name"].get<std::string>()));
        if (!name.digest.empty())
          return Error::Of(Code::kInvalidArgument, "name: a snapshot is named by a tag, not a digest");
        ISB_ASSIGN_OR_RETURN(ImageQuotaCheck quota,
                             ImageQuotaCheck::Begin(images.store(), options.disk_quota, ctx.org));
        ISB_ASSIGN_OR_RETURN(image::ImageRecord r,
                             options.snapshot(ctx.org, in["sandbox"].get<std::string>(), name.str()));
        if (Status st = FinishWithin(images, options, quota, {r}); !st.ok()) return st.error();
        return ImageJson(r);
      }});
}

}  // namespace

json ImageJson(const image::ImageRecord& r) {
  uint64_t size = 0, unpacked = 0;
  for (const image::LayerRecord& l : r.layers) {
    size += l.size;
    unpacked += l.unpacked_bytes;
  }
  return {{"name", r.name}, {"id", image::ShortId(r)},   {"digest", r.manifest_digest}, {"layers", r.layers.size()},
          {"size", size},   {"unpacked_size", unpacked}, {"source", r.source},          {"created_at", r.created_ms}};
}

Result<ResolvedImage> ResolveImage(image::ImageStore& store, const std::string& org, const std::string& ref,
                                   const image::FlattenGate& may_flatten) {
  ISB_ASSIGN_OR_RETURN(image::ImageRecord r, FindImage(store, org, ref));
  ResolvedImage out;
  out.name = r.name;
  out.digest = r.manifest_digest;
  ISB_ASSIGN_OR_RETURN(out.layers, store.StackedLayerRoots(r, may_flatten));
  out.env = r.config.env;
  out.working_dir = r.config.working_dir;
  out.entrypoint = r.config.entrypoint;
  out.cmd = r.config.cmd;
  ISB_ASSIGN_OR_RETURN(out.user, ResolveUser(out.layers, r.config.user));
  return out;
}

Status AddImageTools(Registry& registry, image::ImageService& images, ImageToolOptions options) {
  ISB_TRY(AddPull(registry, images, options));
  ISB_TRY(AddReads(registry, images, options));
  return AddChanges(registry, images, options);
}

}  // namespace isb::api
