// The image commands: flags -> image tool input -> the tool's answer; a pull's progress drawn as it streams.
#include "cli/image_cmds.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "cli/sandbox_cmds_internal.h"

namespace isb::cli {
namespace {

struct ImageFlags {
  std::shared_ptr<ConnectFlags> connect = SharedConnectFlags();
  bool json = false, quiet = false;
  std::string ref, path, name, auth_secret, sandbox;
};

CLI::App* Command(CLI::App* parent, const std::shared_ptr<ImageFlags>& f, const char* name, const char* help) {
  auto* cmd = parent->add_subcommand(name, help);
  AddConnectOptions(cmd, f->connect);
  cmd->add_flag("--json", f->json, "Print the tool's result as JSON");
  return cmd;
}

int Run(const ImageFlags& f, const std::string& tool, const json& input, const std::function<void(const json&)>& text) {
  auto client = Connect(*f.connect);
  if (!client.ok()) return ReportUsage(client.error());
  auto r = client->Call(tool, input);
  if (!r.ok()) return Report(r.error());
  if (f.json)
    Print(*r);
  else
    text(*r);
  return kExitOk;
}

void PrintImage(const json& r) {
  std::printf("%s %s %s\n", r.value("id", "").c_str(), r.value("name", "").c_str(), r.value("digest", "").c_str());
}

// An absolute path: the daemon reads or writes it on the same host.
std::string Absolute(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// Draws each layer's bar on its own line, redrawn in place on a terminal; elsewhere one line per layer when done.
class ProgressView {
 public:
  void Update(const json& p) {
    const std::string line = ProgressLine(p);
    if (line.empty()) return;
    const std::string layer = p.value("layer", "");
    if (!::isatty(STDERR_FILENO)) {
      if (p.value("done", uint64_t{0}) == p.value("total", uint64_t{1})) std::fprintf(stderr, "%s\n", line.c_str());
      return;
    }
    auto [it, added] = rows_.try_emplace(layer, rows_.size());
    if (!added) {
      const size_t up = rows_.size() - it->second;
      std::fprintf(stderr, "\x1b[%zuA\r\x1b[2K%s\x1b[%zuB\r", up, line.c_str(), up);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

 private:
  std::map<std::string, size_t> rows_;
};

void AddPull(CLI::App* image, const std::shared_ptr<ImageFlags>& f, int* exit_code) {
  auto* cmd = Command(image, f, "pull", "Fetch an image from its registry into the org");
  cmd->add_option("ref", f->ref, "The reference (python:3.12, host:5000/team/app:tag, ...@sha256:...)")->required();
  cmd->add_option("--auth-secret", f->auth_secret, "An org secret holding USER:PASSWORD for the registry");
  cmd->add_flag("-q,--quiet", f->quiet, "No progress");
  cmd->callback([f, exit_code] {
    json in = {{"ref", f->ref}};
    if (!f->auth_secret.empty()) in["auth_secret"] = f->auth_secret;
    auto client = Connect(*f->connect);
    if (!client.ok()) {
      *exit_code = ReportUsage(client.error());
      return;
    }
    ProgressView view;
    auto r = client->CallStreaming("image_pull", in, [&](const std::string& stream, const std::string& data) {
      if (stream != "progress" || f->quiet) return;
      json p = json::parse(data, nullptr, false);
      if (p.is_object()) view.Update(p);
    });
    if (!r.ok()) {
      *exit_code = Report(r.error());
      return;
    }
    if (f->json)
      Print(*r);
    else
      PrintImage(*r);
    *exit_code = kExitOk;
  });
}

void AddOthers(CLI::App* image, const std::shared_ptr<ImageFlags>& f, int* exit_code) {
  auto* cmd = Command(image, f, "ls", "List the org's images");
  cmd->callback([f, exit_code] {
    *exit_code = Run(*f, "image_list", json::object(), [](const json& r) {
      std::printf("%-12s %-56s %-7s %s\n", "ID", "NAME", "LAYERS", "SIZE");
      for (const json& i : r.value("images", json::array()))
        std::printf("%-12s %-56s %-7lld %s\n", i.value("id", "").c_str(), i.value("name", "").c_str(),
                    static_cast<long long>(i.value("layers", int64_t{0})),
                    ShortBytes(i.value("unpacked_size", uint64_t{0})).c_str());
    });
  });

  cmd = Command(image, f, "inspect", "An image's config, layers and the sandboxes made from it");
  cmd->add_option("image", f->ref, "Name, digest or id")->required();
  cmd->callback([f, exit_code] { *exit_code = Run(*f, "image_inspect", json{{"image", f->ref}}, Print); });

  cmd = Command(image, f, "rm", "Remove an image (refused while a sandbox uses it)");
  cmd->add_option("image", f->ref, "Name, digest or id")->required();
  cmd->callback([f, exit_code] {
    *exit_code = Run(*f, "image_remove", json{{"image", f->ref}},
                     [](const json& r) { std::printf("removed %s\n", r.value("removed", "").c_str()); });
  });

  cmd = Command(image, f, "import", "Import an OCI layout (dir or tar) or a docker save archive on this host");
  cmd->add_option("file", f->path, "The archive")->required();
  cmd->add_option("--name", f->name, "The name to give the image (an archive of one image)");
  cmd->callback([f, exit_code] {
    json in = {{"path", Absolute(f->path)}};
    if (!f->name.empty()) in["name"] = f->name;
    *exit_code = Run(*f, "image_import", in, [](const json& r) {
      for (const json& i : r.value("images", json::array())) PrintImage(i);
    });
  });

  cmd = Command(image, f, "export", "Write an image as an OCI archive (skopeo, podman load read it)");
  cmd->add_option("image", f->ref, "Name, digest or id")->required();
  cmd->add_option("file", f->path, "The archive to write")->required();
  cmd->callback([f, exit_code] {
    *exit_code = Run(*f, "image_export", json{{"image", f->ref}, {"path", Absolute(f->path)}},
                     [](const json& r) { std::printf("%s\n", r.value("path", "").c_str()); });
  });
}

}  // namespace

std::string ProgressLine(const json& p) {
  if (p.value("phase", "") != "layer") return "";
  const uint64_t done = p.value("done", uint64_t{0}), total = p.value("total", uint64_t{0});
  std::string layer = p.value("layer", "");
  if (layer.size() > 19) layer.resize(19);
  constexpr int kWidth = 20;
  const int filled = total == 0 ? kWidth : static_cast<int>(done * kWidth / total);
  const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
  char out[160];
  std::snprintf(out, sizeof out, "%-19s [%s%s] %3d%% %s/%s", layer.c_str(), std::string(filled, '#').c_str(),
                std::string(kWidth - filled, ' ').c_str(), percent, ShortBytes(done).c_str(),
                ShortBytes(total).c_str());
  return out;
}

void AddImageCommands(CLI::App& app, int* exit_code) {
  auto* image = app.add_subcommand("image", "An org's images: pull, import, export, list, inspect, remove");
  image->require_subcommand(1);
  auto f = std::make_shared<ImageFlags>();
  AddPull(image, f, exit_code);
  AddOthers(image, f, exit_code);

  auto* snap = app.add_subcommand("snapshot", "Keep a sandbox's files as a new image of the org");
  AddConnectOptions(snap, f->connect);
  snap->add_flag("--json", f->json, "Print the tool's result as JSON");
  snap->add_option("sandbox", f->sandbox, "The sandbox's id or name")->required();
  snap->add_option("name", f->name, "The new image's name")->required();
  snap->callback([f, exit_code] {
    *exit_code = Run(*f, "sandbox_snapshot", json{{"sandbox", f->sandbox}, {"name", f->name}}, PrintImage);
  });
}

}  // namespace isb::cli
