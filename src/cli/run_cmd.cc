// `isb run [options] -- CMD ARGS...`
#include "cli/run_cmd.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "cli/bind_spec.h"
#include "engine/cgroup.h"
#include "engine/run.h"
#include "api/image_tools.h"
#include "image/image_store.h"
#include "spec/sandbox_spec.h"

namespace isb::cli {
namespace {

struct RunFlags {
  engine::SandboxConfig config;
  std::string memory = "512M", cpus = "2", timeout = "0", output_limit = "1M", user = "0:0";
  uint32_t pids = 64;
  std::vector<std::string> binds;
  std::vector<std::string> idmap;
  std::string runtime_dir = "/run/isb";
  bool json = false;
  // --image REF: an image of `org` in the daemon's store under `state_dir`.
  std::string state_dir = "/var/lib/isb", org = "default";
  bool workdir_given = false, user_given = false;
};

constexpr int kIsbFailed = 125;

int Fail(const std::string& message) {
  std::fprintf(stderr, "isb: %s\n", message.c_str());
  return kIsbFailed;
}

// --image naming an image of the org (not a directory): its layers, and its config where the flags said nothing.
Status ApplyImageReference(RunFlags& f) {
  const std::string store_dir = f.state_dir + "/images";
  std::error_code ec;
  if (!std::filesystem::is_directory(store_dir, ec))
    return Error::Msg("--image " + f.config.image + ": not a directory, and there is no image store at " + store_dir +
                      " (isb image pull it first, or give --state-dir)");
  // Beside a running daemon: what it is unpacking stays where it is. A flattened layer is made by the daemon only
  // (its garbage collection and start-up cleaning know what it makes); one it made is used as it is.
  ISB_ASSIGN_OR_RETURN(auto store, image::ImageStore::Open(store_dir, /*clean=*/false));
  const std::string ref = f.config.image;
  auto daemon_only = [&ref](const image::FlattenRequest& r) -> Status {
    return Error::Msg("image " + ref + " has " + std::to_string(r.layers) + " layers: more than the " +
                      std::to_string(image::kMaxStackedLayers) +
                      " one sandbox stacks; create the sandbox through the daemon (isb create --image " + ref +
                      "), which flattens its lowest layers");
  };
  ISB_ASSIGN_OR_RETURN(api::ResolvedImage img, api::ResolveImage(*store, f.org, ref, daemon_only));
  f.config.image.clear();
  f.config.image_layers = img.layers;
  std::vector<std::string> env;
  for (const std::string& kv : img.env) {
    const std::string key = kv.substr(0, kv.find('=') + 1);
    bool set = false;
    for (const std::string& mine : f.config.env) set = set || mine.starts_with(key);
    if (!set) env.push_back(kv);
  }
  env.insert(env.end(), f.config.env.begin(), f.config.env.end());
  f.config.env = std::move(env);
  if (!f.workdir_given && !img.working_dir.empty()) f.config.workdir = img.working_dir;
  if (!f.user_given && !img.user.empty()) f.user = img.user;
  if (f.config.argv.empty()) {
    f.config.argv = img.entrypoint;
    f.config.argv.insert(f.config.argv.end(), img.cmd.begin(), img.cmd.end());
  }
  return {};
}

Status Finish(RunFlags& f) {
  if (spec::IsImageReference(f.config.image) && !std::filesystem::is_directory(f.config.image))
    ISB_TRY(ApplyImageReference(f));
  if (f.config.argv.empty()) return Error::Msg("give the command after -- (the image names none)");
  ISB_ASSIGN_OR_RETURN(f.config.limits.memory_bytes, ParseSize(f.memory));
  if (f.config.limits.memory_bytes < (4u << 20)) return Error::Msg("--memory must be at least 4M");
  ISB_ASSIGN_OR_RETURN(f.config.limits.millicpus, ParseCpus(f.cpus));
  ISB_ASSIGN_OR_RETURN(f.config.timeout, ParseDuration(f.timeout));
  ISB_ASSIGN_OR_RETURN(f.config.output_limit, ParseSize(f.output_limit));
  if (f.pids < 2) return Error::Msg("--pids must be at least 2 (the sandbox's init and the command)");
  if (const engine::PidsBound& host = engine::HostPidsBound(); f.pids > host.sandboxes())
    return Error::Msg("--pids must be at most " + host.Describe());
  f.config.limits.pids = f.pids;
  ISB_ASSIGN_OR_RETURN(auto ids, ParseIds(f.user));
  f.config.uid = ids.first;
  f.config.gid = ids.second;
  for (const auto& m : f.idmap) {
    ISB_ASSIGN_OR_RETURN(engine::IdMapping mapping, engine::ParseIdMapping("--idmap", m));
    f.config.idmap.push_back(mapping);
  }
  f.config.idmap_image = true;  // the host's own choice of image
  // The engine follows no symlink in an image's path or a bind's source: the user's paths are resolved here, once.
  if (!f.config.image.empty()) {
    std::error_code ec;
    if (auto real = std::filesystem::canonical(f.config.image, ec); !ec) f.config.image = real.string();
  }
  for (const auto& b : f.binds) {
    ISB_ASSIGN_OR_RETURN(BindSpec bind, ParseBindSpec("--bind", b));
    std::error_code ec;
    if (auto real = std::filesystem::canonical(bind.source, ec); !ec) bind.source = real.string();
    f.config.binds.push_back({bind.source, bind.target, bind.read_only});
  }
  return {};
}

nlohmann::json ToJson(const engine::RunResult& r) {
  using nlohmann::json;
  return json{{"exit_code", r.exit_code},
              {"signal", r.signal},
              {"oom_killed", r.oom_killed},
              {"timed_out", r.timed_out},
              {"output_truncated", r.stdout_truncated || r.stderr_truncated},
              {"stdout_truncated", r.stdout_truncated},
              {"stderr_truncated", r.stderr_truncated},
              {"wall_time_ms", r.wall_ms},
              {"cpu_time_ms", r.cpu_ms},
              {"peak_memory_bytes", r.peak_memory_bytes},
              {"stdout", r.stdout_data},
              {"stderr", r.stderr_data},
              {"exec_error", r.exec_error},
              {"steps_ms", [&] {
                 // In the order they ran: a list of [name, ms] pairs (an object's keys would come out sorted).
                 json steps = json::array();
                 for (const auto& [name, ms] : r.steps_ms) steps.push_back({name, ms});
                 return steps;
               }()}};
}

int Run(RunFlags& f) {
  if (auto s = Finish(f); !s.ok()) return Fail(s.error().message);
  engine::RunOptions opts;
  opts.runtime_dir = f.runtime_dir;
  opts.capture = f.json;
  opts.usage = f.json;  // the peak memory and CPU time are the JSON result's; a plain run prints neither
  auto r = engine::RunSandbox(f.config, opts);
  if (!r.ok()) return Fail(r.error().message);
  if (f.json) {
    std::string out = ToJson(*r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    if (!r->exec_error.empty()) std::fprintf(stderr, "isb: %s\n", r->exec_error.c_str());
    if (r->oom_killed) std::fprintf(stderr, "isb: the command ran out of memory (--memory %s)\n", f.memory.c_str());
    if (r->timed_out) std::fprintf(stderr, "isb: the command timed out after %s and was killed\n", f.timeout.c_str());
    if (r->stdout_truncated || r->stderr_truncated)
      std::fprintf(stderr, "isb: output truncated at %s per stream (--output-limit)\n", f.output_limit.c_str());
  }
  return r->exit_code;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand("run", "Run a command in a fresh sandbox and exit with its status");
  cmd->add_option("--image", flags->config.image,
                  "An image of the org (isb image pull) or a directory, read-only under the sandbox's layer (default: "
                  "a view of the host)");
  cmd->add_option("--state-dir", flags->state_dir, "The daemon's state dir, where --image REF is looked up")
      ->capture_default_str();
  cmd->add_option("--org", flags->org, "The org whose image --image REF names")->capture_default_str();
  cmd->add_option("--writable", flags->config.writable_dir, "Keep the writable layer in DIR (default: discarded)");
  cmd->add_option("--memory", flags->memory, "Memory limit, swap included")->capture_default_str();
  cmd->add_option("--cpus", flags->cpus, "CPU quota in cores")->capture_default_str();
  cmd->add_option("--pids", flags->pids, "Most processes and threads at once")->capture_default_str();
  cmd->add_option("--timeout", flags->timeout, "Wall-clock limit for the whole tree, e.g. 30s (0: none)")
      ->capture_default_str();
  cmd->add_option("--output-limit", flags->output_limit, "Bytes kept per output stream")->capture_default_str();
  // Repeatable options take exactly one value per occurrence: otherwise "--" after them would end only their
  // values, and the command's own arguments would be parsed as isb's options.
  cmd->add_option("--env", flags->config.env, "K=V in the command's environment (repeatable)")->allow_extra_args(false);
  cmd->add_option("--workdir", flags->config.workdir, "Working directory inside the sandbox")->capture_default_str();
  cmd->add_option("--hostname", flags->config.hostname, "Hostname inside the sandbox")->capture_default_str();
  cmd->add_option("--user", flags->user, "UID[:GID] inside the sandbox")->capture_default_str();
  cmd->add_option("--bind", flags->binds, "Host path into the sandbox: SRC[:DST][:ro|:rw] (default ro; repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--privileged", flags->config.privileged,
                "No user namespace: the sandbox's root is the host's root (its files are root's)");
  cmd->add_option("--idmap", flags->idmap, "Map host ids in: uid|gid|both:HOST:SANDBOX[:COUNT] (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--runtime-dir", flags->runtime_dir, "Where leases and staging live")->capture_default_str();
  cmd->add_flag("--json", flags->json, "Print one JSON result (output captured into it)");
  cmd->add_option("command", flags->config.argv,
                  "The command and its arguments, after -- (default: an image's entrypoint and cmd)");
  cmd->callback([flags, exit_code, cmd] {
    flags->workdir_given = cmd->count("--workdir") > 0;
    flags->user_given = cmd->count("--user") > 0;
    *exit_code = Run(*flags);
  });
}

}  // namespace isb::cli
