// The preview tools: their schemas and handlers over PreviewAccess.
#include "api/preview_tools.h"

#include "api/event_bus.h"
#include "api/org_sandboxes.h"
#include "api/schema.h"

namespace isb::api {
namespace {

using nlohmann::json;

// The preview of `in`'s port of a sandbox the caller's org has.
Result<PreviewHost> HostOf(Sandboxes& all, const json& in, const CallContext& ctx, bool running) {
  OrgSandboxes sb(all, ctx);
  ISB_ASSIGN_OR_RETURN(SandboxInfo info, sb.Get(in["sandbox"].get<std::string>()));
  if (running && info.state != "running") {
    return Error::Of(Code::kConflict,
                     "sandbox " + info.id + " is " + info.state + ": start it (sandbox_start) to preview its ports");
  }
  return PreviewHost{static_cast<uint16_t>(in["port"].get<int>()), info.id, OrgOf(info)};
}

Result<json> Open(Sandboxes& all, PreviewAccess& access, const json& in, const CallContext& ctx) {
  ISB_ASSIGN_OR_RETURN(PreviewHost host, HostOf(all, in, ctx, true));
  ISB_ASSIGN_OR_RETURN(PreviewLink link, access.Open(host, ctx.identity));
  // A stop between the check and the link's record ended the sandbox's previews before this link was there: look
  // again now that it is, and end it (with any other of the sandbox's) when the sandbox no longer runs.
  Result<PreviewHost> still = HostOf(all, in, ctx, true);
  if (!still.ok()) {
    access.Close(host.sandbox, 0);
    return still.error();
  }
  return json{{"url", link.url}, {"expires_at", Rfc3339Ms(link.expires_at_ms)}};
}

Result<json> Close(Sandboxes& all, PreviewAccess& access, const json& in, const CallContext& ctx) {
  ISB_ASSIGN_OR_RETURN(PreviewHost host, HostOf(all, in, ctx, false));
  const size_t ended = access.Close(host.sandbox, host.port);
  return json{{"sandbox", host.sandbox}, {"port", host.port}, {"sessions_ended", ended}};
}

json Input() {
  return Object({{"sandbox", Str("The sandbox: its id (\"sb-\" and 16 hex digits) or its name.", 128, 1)},
                 {"port", Int("The TCP port inside the sandbox (on its loopback).", 1, 65535)}},
                {"sandbox", "port"});
}

}  // namespace

Status AddPreviewTools(Registry& registry, Sandboxes& sandboxes, PreviewAccess& access) {
  json opened = Output({{"url", Str("The one-time link: good once, for 60 s (or the daemon's shorter "
                                    "--preview-link-life), for the caller alone. Open it in a browser; it is not to "
                                    "be shared.",
                                    512)},
                        {"expires_at", Str("When the link stops working (RFC 3339, UTC).", 40)}},
                       {"url", "expires_at"});
  ISB_TRY(registry.Add(Tool{
      "sandbox_port_open", "Preview a sandbox's port",
      "A one-time link to what a running sandbox serves on a TCP port of its own loopback, at an origin of its own "
      "(<port>-<sandbox>-<org> under the preview domain). Opening the link gives that browser the preview for 8 h "
      "while the caller stays a member of the org, the port stays open and the sandbox runs. No host port is "
      "published.",
      Input(), opened, ToolAnnotations{.read_only = false, .destructive = false}, false,
      [&sandboxes, &access](const json& in, const CallContext& ctx) { return Open(sandboxes, access, in, ctx); }}));
  json closed = Output({{"sandbox", Str("The sandbox's id.", 64)},
                        {"port", Int("The port.", 1, 65535)},
                        {"sessions_ended", Int("Preview sessions ended.", 0, INT64_MAX)}},
                       {"sandbox", "port", "sessions_ended"});
  return registry.Add(Tool{
      "sandbox_port_close", "End a port's previews",
      "Ends every preview of a sandbox's port: unspent links stop working, and open previews are cut off at once.",
      Input(), closed, ToolAnnotations{.read_only = false, .destructive = true, .idempotent = true}, false,
      [&sandboxes, &access](const json& in, const CallContext& ctx) { return Close(sandboxes, access, in, ctx); }});
}

}  // namespace isb::api
