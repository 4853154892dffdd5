// The remote-spec policy: what a remote caller's sandbox spec may ask of the host, and the `isb serve` flags that
// widen it. The unix socket and superadmins have no such policy; every other caller's spec passes CheckRemoteSpec.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/sandboxes.h"
#include "base/result.h"
#include "egress/publish_address.h"

namespace isb::api {

struct RemoteSpecPolicy {
  bool allow_privileged = false;  // --allow-privileged
  bool allow_raw = false;         // --allow-raw
  bool any_instance = false;      // --any-instance
  // --bind-root DIR (every org's members) and --bind-root ORG=DIR (that org's only): after PrepareRemoteSpecPolicy,
  // real paths (symlinks followed), each an existing directory, the ORG= ones moved to org_bind_roots.
  std::vector<std::string> bind_roots;
  std::map<std::string, std::vector<std::string>> org_bind_roots;
  // --publish-address IP: after PrepareRemoteSpecPolicy, canonical address text. Loopback needs no flag.
  std::vector<std::string> publish_addresses;
  // --publish-ports FIRST-LAST: the host ports remote callers may publish on, a range the operator keeps for isb.
  // Outside it a port is refused before any bind, so whether a host port is in use is never told to a remote caller
  // (a bind's "Address already in use" would be). PrepareRemoteSpecPolicy parses it into the two bounds.
  std::string publish_ports = "20000-29999";
  uint16_t publish_port_first = 20000, publish_port_last = 29999;
  // The daemon's own TCP port (--listen), when it is a fixed one: never published, on any address (a listener on
  // the loopback address the daemon does not listen on, ::1 say, would take the calls made to "localhost").
  uint16_t api_port = 0;
};

// Checks the operator's flags once at start and puts them in the form the checks use: each bind root resolved to
// its real path (one that does not exist or is not a directory, or an ORG= with an empty org, is kInvalidArgument
// naming it) and sorted by org, each publish
// address parsed and written canonically (one that is not an IP address is kInvalidArgument naming it), and the
// publish ports parsed (FIRST-LAST within 1024-65535, FIRST <= LAST; otherwise kInvalidArgument).
Status PrepareRemoteSpecPolicy(RemoteSpecPolicy& policy);

// OK, or kForbidden naming the field and the flag that would allow it:
//   a label key starting with "isb." (reserved, no flag allows it);
//   privileged: true without --allow-privileged; an idmap other than auto/none (any entry) without --allow-raw;
//   an image (a host directory) or a mount's source whose real path is not equal to or below a bind root
//   (ResolveUnderBindRoot);
//   a port published on a host port outside --publish-ports, or on an address CheckPublishAddress refuses
//   ("ports[N]: ...").
// The bind roots are every org's and `org`'s own.
// REQUIRES: `policy` went through PrepareRemoteSpecPolicy.
Status CheckRemoteSpec(const SandboxSpec& spec, const RemoteSpecPolicy& policy, const std::string& org = "");

// The real path (symlinks followed) of the host path `path` that the spec's `field` names, when it is equal to or
// below a bind root, component-wise (/data2 is not below /data). The path is first judged as written, with "." and
// ".." removed, and only resolved when that lies under a root, so a refusal tells a caller nothing about host paths
// outside the roots. kForbidden when outside; kInvalidArgument when it does not exist (named) or is not absolute.
// The caller should hand the engine the returned real path, not the one sent.
Result<std::string> ResolveUnderBindRoot(std::string_view field, const std::string& path,
                                         const RemoteSpecPolicy& policy, const std::string& org = "");

// OK when a port may be published on `address`: a loopback address always, any other only when it is one of
// --publish-address (compared as addresses, not as text). Otherwise kForbidden naming the flag.
Status CheckPublishAddress(std::string_view address, const RemoteSpecPolicy& policy);

// The most that filling a spec's ${NAME}s may add to it, in bytes.
inline constexpr size_t kMaxExpandedSpecBytes = 1 << 20;

// Fills each ${NAME} in `text` (NAME: a letter or '_', then letters, digits, '_') from `vars` only, never from the
// daemon's environment; "$$" is a literal '$', and a '$' before anything else stays as it is. An unknown NAME, a
// malformed ${...} or an unterminated one is kInvalidArgument naming it (never a value).
// What a text may grow to: past `max_bytes` it is refused (kTooLarge, "expands to more than N bytes"), so that a
// short text repeating a long variable never makes the daemon build gigabytes.
Result<std::string> ExpandVars(std::string_view text, const std::map<std::string, std::string>& vars,
                               size_t max_bytes = kMaxExpandedSpecBytes);

// A sandbox_create input with ${NAME} filled by ExpandVars in its string fields: name, image, working_dir, user,
// and the values of environment and labels (keys and every other field as sent); filling may add at most
// kMaxExpandedSpecBytes to them all together (kTooLarge). "vars" is left out of the result; what was filled is the
// schema's to judge again. A refusal is kInvalidArgument naming the field first ("environment.GREETING: ${X} is not
// among the vars sent"). Remote callers' specs always pass through it (no daemon environment ever fills a name); the
// host's and superadmins' when they send vars.
Result<nlohmann::json> ExpandSpecVars(const nlohmann::json& input, const std::map<std::string, std::string>& vars);

}  // namespace isb::api
