// The sandbox spec: what a sandbox is made from, with its defaults and limits stated once, and its one validator.
//
// A caller's spec reaches isb as JSON (spec_json.h parses it, then Validate); a stored spec comes back from the
// daemon's own rows (spec_json.h, leniently). Everything past those two edges takes a SandboxSpec as valid.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "egress/publish_address.h"
#include "engine/id_mapping.h"

namespace isb::spec {

// Every default and bound of a sandbox spec. The tools' schemas, the CLI and the daemon read them from here.
inline constexpr double kDefaultCpus = 2, kMinCpus = 0.001, kMaxCpus = 1024;
inline constexpr uint64_t kDefaultMemLimit = 512ull << 20, kMinMemLimit = 4ull << 20, kMaxMemLimit = 1ull << 40;
inline constexpr uint64_t kDefaultDisk = 2ull << 30, kMinDisk = 16ull << 20, kMaxDisk = 1ull << 40;
// Processes: at least kMinPids, at most the host's bound (engine::HostPidsBound), both checked by the daemon.
inline constexpr uint32_t kDefaultPids = 64, kMinPids = 2;
inline constexpr int64_t kDefaultExpiresS = 24 * 3600, kMaxExpiresS = 30 * 24 * 3600;
inline constexpr int64_t kDefaultIdleTimeoutS = 2 * 3600;
inline constexpr size_t kMaxNameLength = 63;
inline constexpr char kDefaultWorkingDir[] = "/";
inline constexpr char kDefaultUser[] = "0:0";

// A host path bound into a sandbox. The tools store its real path (symlinks resolved when the sandbox is created),
// and the engine reaches it without following any symlink, so a path swapped for a symlink later makes the launch
// fail instead of binding somewhere else.
struct SpecMount {
  std::string source;  // absolute host path
  std::string target;  // absolute path inside the sandbox, not "/" and not under /proc, /sys or /dev
  bool read_only = true;
  bool operator==(const SpecMount&) const = default;
};

// A TCP port inside a sandbox published on a host address: connections to host_address:host_port reach
// 127.0.0.1:sandbox_port inside. Only loopback unless the daemon's --publish-address allows another address.
struct SpecPort {
  uint16_t sandbox_port = 0;
  uint16_t host_port = 0;
  std::string host_address = egress::kDefaultPublishAddress;  // never where a browser reaches isb
  bool operator==(const SpecPort&) const = default;
};

// A secret of the sandbox's org given to it as a file: on a tmpfs of the sandbox's own at /run/secrets (never its
// layer, image or stored spec), owned by its root, rewritten when the secret gets a new version.
inline constexpr char kSecretsDir[] = "/run/secrets";
inline constexpr size_t kMaxSecretFiles = 64;
inline constexpr uint32_t kDefaultSecretFileMode = 0400;
struct SpecSecretFile {
  std::string name;    // the org secret's name
  std::string target;  // kSecretsDir/FILE; default kSecretsDir/NAME
  uint32_t mode = kDefaultSecretFileMode;
  bool operator==(const SpecSecretFile&) const = default;
};

struct SandboxSpec {
  std::string name;  // optional; a host name label, unique among the org's sandboxes (other orgs may reuse it)
  // An image of the sandbox's org by reference ("python:3.12", "registry.example/team/app@sha256:..."), or a
  // directory on the host (an absolute path); empty: the default view of the host.
  std::string image;
  double cpus = kDefaultCpus;             // CPU quota in cores
  uint64_t mem_limit = kDefaultMemLimit;  // bytes, swap included
  // Bytes: the size of the filesystem the writable layer lives in; writing beyond it is ENOSPC inside. Specs
  // stored before disk limits read as this default.
  uint64_t disk = kDefaultDisk;
  uint32_t pids = kDefaultPids;
  std::map<std::string, std::string> environment;
  std::string working_dir = kDefaultWorkingDir;
  std::string user = kDefaultUser;  // UID[:GID] inside
  std::map<std::string, std::string> labels;
  std::vector<SpecMount> mounts;        // host paths bound in; remote callers only under a --bind-root
  std::vector<SpecPort> ports;          // published while the sandbox runs
  std::vector<SpecSecretFile> secrets;  // files at /run/secrets (an egress spec's secrets are placeholders)
  // No user namespace of its own: its root is the host's root (remote callers: --allow-privileged).
  bool privileged = false;
  // Host ids mapped in beside the sandbox's own range; empty: "auto" (and "none", its synonym). Remote callers
  // need --allow-raw for any entry. Never with `privileged`.
  std::vector<engine::IdMapping> idmap;
  // "none", "open", a list of "host[:port]", or {allow|block|judge: [...], secrets: [...]}; its own parser
  // (egress/policy.h) judges it where the daemon applies it.
  nlohmann::json egress = "none";
  std::chrono::seconds expires{kDefaultExpiresS};  // lifetime
  std::chrono::seconds idle_timeout{kDefaultIdleTimeoutS};
  // The image seen through the sandbox's id mapping (engine::SandboxConfig::idmap_image): set by the create tool for
  // the host and superadmins only (never taken from the caller), and stored.
  bool image_idmapped = false;
  // Set by the daemon when `image` names an image of the org (never taken from a caller), and stored: the layers'
  // directories on the host, bottom first, and the manifest digest of the image they are, so a sandbox keeps the
  // image it was made from when the name later points elsewhere.
  std::vector<std::string> image_layers;
  std::string image_digest;
  // Not stored: set by the API when `image` and the mounts' sources are the real paths it checked against the bind
  // roots, so that the daemon keeps them only while no symlink has come onto them rather than resolving them again.
  bool paths_checked = false;
};

// Whether `image` names an image by reference rather than a host directory.
inline bool IsImageReference(const std::string& image) { return !image.empty() && image[0] != '/'; }

// The rules every spec obeys, whoever made it; the first broken one as kInvalidArgument, naming the field and what
// it takes. What depends on the host (the image exists, pids within the host's bound, mount sources) is the
// daemon's to check where it resolves them.
Status Validate(const SandboxSpec& spec);

// Each field's own rule, for callers that hold one field (the CLI, the API's parser).
Status ValidateName(const std::string& name);
Result<std::pair<uint32_t, uint32_t>> ParseUser(const std::string& user);  // "UID[:GID]" -> {uid, gid}
Status ValidateVariableName(const std::string& field, const std::string& name);
// A caller may set no isb.* label (isb sets kOrgLabel and kOwnerLabel itself): kForbidden "label 'isb.x': labels
// starting with isb. are reserved".
Status CheckCallerLabels(const std::map<std::string, std::string>& labels);
// A size in bytes within [min, max], refused as "FIELD: must be at least 4 MiB (4194304 bytes)" or "FIELD: must be
// at most 1 TiB".
Status CheckSize(const std::string& field, uint64_t bytes, uint64_t min, uint64_t max);
// 16 MiB, 1 TiB, 1536 KiB, 100 bytes: the largest binary unit that divides `bytes`.
std::string SizeText(uint64_t bytes);

// Reserved label keys: isb sets them on every sandbox (the org it belongs to, who created it over which surface:
// "rest:user:alice", "mcp:token:12", "unix:superadmin"); callers may not.
inline constexpr char kOrgLabel[] = "isb.org";
inline constexpr char kOwnerLabel[] = "isb.owner";

}  // namespace isb::spec
