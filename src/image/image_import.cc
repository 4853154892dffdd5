// ImageService::Import: an OCI layout (a directory, or a tar of one such as skopeo's oci-archive) or a `docker save`
// archive. A tar is first read into a private directory (regular files only, names kept inside it); every blob is
// then copied into the blob store against its digest, and every layer unpacked against its diff_id.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "base/file.h"
#include "base/random.h"
#include "image/digest.h"
#include "image/image_service.h"
#include "image/layer_store_io.h"
#include "image/manifest.h"
#include "image/reference.h"
#include "image/tar_reader.h"

namespace isb::image {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr size_t kMaxArchiveFiles = 100000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Error Bad(const std::string& path, const std::string& why) {
  return Error::Of(Code::kInvalidArgument, "image archive " + path + ": " + why);
}

// A name of the archive made safe: relative, no "." or ".." parts, no empty parts; "" when it cannot be.
std::string SafeName(const std::string& name) {
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string::npos) slash = name.size();
    const std::string part = name.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return "";
    out += (out.empty() ? "" : "/") + part;
  }
  return out;
}

// Reads the tar's regular files into `dir`; symlinks between its own files (older `docker save` links repeated
// layers) are followed by name, one step. Everything else is skipped.
Status ExtractArchive(const std::string& path, const fs::path& dir, uint64_t max_bytes) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f.valid()) return Error::Sys("opening " + path);
  FdSource source(f.get());
  TarReader tar(source);
  std::map<std::string, std::string> links;
  uint64_t total = 0;
  size_t files = 0;
  for (;;) {
    ISB_ASSIGN_OR_RETURN(std::optional<TarEntry> entry, tar.Next());
    if (!entry) break;
    if (++files > kMaxArchiveFiles) return Bad(path, "more than 100000 entries");
    const std::string name = SafeName(entry->path);
    if (name.empty()) continue;
    if (entry->type == TarEntry::Type::kSymlink || entry->type == TarEntry::Type::kHardlink) {
      const std::string base = entry->type == TarEntry::Type::kHardlink || entry->link.starts_with("/")
                                   ? ""
                                   : fs::path(name).parent_path().string();
      const std::string target = SafeName(base.empty() ? entry->link : base + "/" + entry->link);
      if (!target.empty()) links[name] = target;
      continue;
    }
    if (entry->type != TarEntry::Type::kFile) continue;
    total += entry->size;
    if (total > max_bytes) return Error::Of(Code::kTooLarge, "image archive " + path + ": larger than allowed");
    const fs::path out = dir / name;
    std::error_code ec;
    fs::create_directories(out.parent_path(), ec);
    Fd w(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!w.valid()) return Error::Sys("extracting " + name);
    uint8_t buf[128 << 10];
    for (;;) {
      ISB_ASSIGN_OR_RETURN(size_t n, tar.ReadData(buf));
      if (n == 0) break;
      for (size_t off = 0; off < n;) {
        const ssize_t k = ::write(w.get(), buf + off, n - off);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return Error::Sys("extracting " + name);
        off += static_cast<size_t>(k);
      }
    }
  }
  for (const auto& [name, target] : links) {
    std::error_code ec;
    const fs::path out = dir / name;
    fs::create_directories(out.parent_path(), ec);
    if (fs::is_regular_file(dir / target, ec)) fs::create_hard_link(dir / target, out, ec);
  }
  return {};
}

// A file of the layout, opened without following symlinks out of it.
Result<Fd> OpenIn(const fs::path& dir, const std::string& name) {
  const std::string safe = SafeName(name);
  if (safe.empty()) return Bad(dir.string(), "names '" + name + "' outside the archive");
  Fd f(OpenNoSymlinks((dir / safe).c_str(), O_RDONLY));
  if (!f.valid()) return Bad(dir.string(), "'" + safe + "' is missing");
  return f;
}

Result<std::string> ReadIn(const fs::path& dir, const std::string& name, size_t max) {
  ISB_ASSIGN_OR_RETURN(Fd f, OpenIn(dir, name));
  struct stat st {};
  if (::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max)
    return Bad(dir.string(), "'" + name + "' is not a file of at most " + std::to_string(max) + " bytes");
  return ReadFile("/proc/self/fd/" + std::to_string(f.get()));
}

// Copies a file of the layout into the blob store as `expected` (its digest and size checked on the way).
Status CopyBlob(const BlobStore& blobs, const fs::path& dir, const std::string& name, const Descriptor& expected,
                const std::string& what) {
  // Read and checked even when the store has the digest: the archive's bytes must be what it says they are.
  ISB_ASSIGN_OR_RETURN(Fd f, OpenIn(dir, name));
  ISB_ASSIGN_OR_RETURN(BlobWriter w, blobs.Begin(expected.digest, expected.size, what));
  char buf[128 << 10];
  for (;;) {
    const ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::Sys("reading " + name);
    if (n == 0) break;
    ISB_TRY(w.Write(std::string_view(buf, static_cast<size_t>(n))));
  }
  return w.Commit();
}

std::string BlobName(const Digest& d) { return "blobs/" + d.algorithm + "/" + d.hex; }

}  // namespace

Result<std::vector<ImageRecord>> ImageService::Import(const std::string& org, const std::string& path,
                                                      const std::string& name) {
  std::error_code ec;
  if (!fs::path(path).is_absolute()) return Bad(path, "give an absolute path");
  fs::path dir = path;
  fs::path scratch;
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      if (!p.empty()) fs::remove_all(p, e);
    }
  } cleanup;
  if (!fs::is_directory(path, ec)) {
    if (!fs::is_regular_file(path, ec)) return Bad(path, "no such file or directory");
    ISB_ASSIGN_OR_RETURN(std::string rnd, RandomHex(8));
    scratch = store_.root() / "layers/tmp" / ("import-" + rnd);
    fs::create_directories(scratch, ec);
    if (ec) return Error::Of(Code::kInternal, "making a scratch dir: " + ec.message());
    cleanup.p = scratch;
    ISB_TRY(ExtractArchive(path, scratch, settings_.max_image_bytes));
    dir = scratch;
  }

  struct Found {
    std::string name;
    std::string manifest_bytes;
    Digest manifest_digest;
    std::vector<std::string> layer_files;  // docker save: the layer tars by file name
    std::string config_file;               // docker save: the config by file name
  };
  std::vector<Found> found;
  if (fs::exists(dir / "index.json", ec)) {
    ISB_ASSIGN_OR_RETURN(std::string index_bytes, ReadIn(dir, "index.json", kMaxManifestBytes));
    ISB_ASSIGN_OR_RETURN(ImageIndex index, ParseIndex(index_bytes));
    const json raw = json::parse(index_bytes, nullptr, false);
    for (size_t i = 0; i < index.manifests.size(); ++i) {
      Descriptor d = index.manifests[i];
      std::string ref_name;
      if (raw.is_object() && raw.contains("manifests") && raw["manifests"].size() > i) {
        const json& ann = raw["manifests"][i].value("annotations", json::object());
        if (ann.is_object()) {
          ref_name = ann.value("io.containerd.image.name", ann.value("org.opencontainers.image.ref.name", ""));
        }
      }
      if (IsIndexType(d.media_type)) {
        IndexLoader load = [&](const Descriptor& nested) -> Result<ImageIndex> {
          ISB_ASSIGN_OR_RETURN(std::string bytes, ReadIn(dir, BlobName(nested.digest), kMaxManifestBytes));
          if (DigestOf(bytes, nested.digest.algorithm) != nested.digest)
            return Bad(path, nested.digest.str() + ": digest mismatch");
          return ParseIndex(bytes);
        };
        ISB_ASSIGN_OR_RETURN(ImageIndex inner, load(d));
        ISB_ASSIGN_OR_RETURN(d, SelectPlatformNested(inner, HostPlatform(), load));
      }
      ISB_ASSIGN_OR_RETURN(std::string bytes, ReadIn(dir, BlobName(d.digest), kMaxManifestBytes));
      if (DigestOf(bytes, d.digest.algorithm) != d.digest)
        return Bad(path, "manifest " + d.digest.str() + ": digest mismatch");
      found.push_back(Found{ref_name, std::move(bytes), d.digest, {}, ""});
    }
  } else if (fs::exists(dir / "manifest.json", ec)) {
    ISB_ASSIGN_OR_RETURN(std::string text, ReadIn(dir, "manifest.json", kMaxManifestBytes));
    const json list = json::parse(text, nullptr, false);
    if (!list.is_array()) return Bad(path, "manifest.json is not a list of images");
    for (const json& item : list) {
      if (!item.is_object() || !item.contains("Config") || !item["Config"].is_string() || !item.contains("Layers") ||
          !item["Layers"].is_array())
        return Bad(path, "manifest.json: an entry without Config and Layers");
      Found f;
      f.config_file = item["Config"].get<std::string>();
      for (const json& l : item["Layers"]) {
        if (!l.is_string()) return Bad(path, "manifest.json: a layer that is not a file name");
        f.layer_files.push_back(l.get<std::string>());
      }
      const json tags = item.value("RepoTags", json::array());
      if (tags.is_array() && !tags.empty() && tags[0].is_string()) f.name = tags[0].get<std::string>();
      found.push_back(std::move(f));
    }
  } else {
    return Bad(path, "neither an OCI layout (index.json) nor a docker save archive (manifest.json)");
  }
  if (found.empty()) return Bad(path, "holds no image");
  if (!name.empty() && found.size() != 1)
    return Bad(path, "holds " + std::to_string(found.size()) +
                         " images: a name "
                         "fits only one");

  std::vector<ImageRecord> out;
  ImageStore::Pins pins(store_);
  for (Found& f : found) {
    ImageRecord r;
    r.org = org;
    std::string given = name.empty() ? f.name : name;
    if (given.empty() || (given.find(':') == std::string::npos && given.find('/') == std::string::npos && name.empty()))
      return Bad(path, "its image has no name (" + (given.empty() ? std::string("none") : "'" + given + "'") +
                           "): give one with --name");
    Result<ImageReference> parsed = ParseImageReference(given);
    r.name = parsed.ok() ? parsed->str() : given;
    r.source = "import";
    r.created_ms = NowMs();
    ImageManifest manifest;
    if (!f.config_file.empty()) {
      // docker save: the config is a file; the layers are tars, compressed or not. A manifest is made for them.
      ISB_ASSIGN_OR_RETURN(std::string config_bytes, ReadIn(dir, f.config_file, kMaxConfigBytes));
      manifest.media_type = std::string(media::kOciManifest);
      manifest.config = Descriptor{std::string(media::kOciConfig), DigestOf(config_bytes), config_bytes.size(), {}};
      ISB_TRY(blobs_.Put(manifest.config.digest, config_bytes, "config"));
      for (const std::string& file : f.layer_files) {
        ISB_ASSIGN_OR_RETURN(Fd lf, OpenIn(dir, file));
        uint8_t head[8] = {};
        const ssize_t got = ::pread(lf.get(), head, sizeof head, 0);
        const Compression c = SniffCompression(std::span<const uint8_t>(head, got > 0 ? size_t(got) : 0));
        const std::string_view type = c == Compression::kGzip   ? media::kOciLayerGzip
                                      : c == Compression::kZstd ? media::kOciLayerZstd
                                                                : media::kOciLayer;
        DigestHasher h;
        struct stat st {};
        ::fstat(lf.get(), &st);
        char buf[128 << 10];
        for (;;) {
          const ssize_t n = ::read(lf.get(), buf, sizeof buf);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) return Error::Sys("reading " + file);
          if (n == 0) break;
          h.Update(std::string_view(buf, static_cast<size_t>(n)));
        }
        Descriptor d{std::string(type), h.Finish(), static_cast<uint64_t>(st.st_size), {}};
        ISB_TRY(CopyBlob(blobs_, dir, file, d, "layer"));
        manifest.layers.push_back(std::move(d));
      }
      json m = {{"schemaVersion", 2},
                {"mediaType", manifest.media_type},
                {"config",
                 {{"mediaType", manifest.config.media_type},
                  {"digest", manifest.config.digest.str()},
                  {"size", manifest.config.size}}},
                {"layers", json::array()}};
      for (const Descriptor& d : manifest.layers)
        m["layers"].push_back({{"mediaType", d.media_type}, {"digest", d.digest.str()}, {"size", d.size}});
      f.manifest_bytes = m.dump();
      f.manifest_digest = DigestOf(f.manifest_bytes);
    } else {
      ISB_ASSIGN_OR_RETURN(manifest, ParseManifest(f.manifest_bytes));
      ISB_TRY(CopyBlob(blobs_, dir, BlobName(manifest.config.digest), manifest.config, "config"));
      for (const Descriptor& d : manifest.layers) ISB_TRY(CopyBlob(blobs_, dir, BlobName(d.digest), d, "layer"));
    }
    // An OCI manifest is held to this by its parser; a docker save archive's list of layer files here.
    if (manifest.layers.size() > kMaxLayers)
      return Bad(path, "an image of " + std::to_string(manifest.layers.size()) + " layers; isb takes at most " +
                           std::to_string(kMaxLayers));
    ISB_ASSIGN_OR_RETURN(std::string config_bytes, ReadBlob(blobs_, manifest.config.digest.str(), kMaxConfigBytes));
    ISB_ASSIGN_OR_RETURN(ImageConfig config, ParseImageConfig(config_bytes));
    ISB_TRY(CheckConfigMatches(manifest, config));
    std::vector<std::string> pinned = {f.manifest_digest.str(), manifest.config.digest.str()};
    for (size_t i = 0; i < manifest.layers.size(); ++i) {
      pinned.push_back(manifest.layers[i].digest.str());
      pinned.push_back(config.diff_ids[i].str());
    }
    pins.Add(pinned);
    if (!blobs_.Has(f.manifest_digest)) ISB_TRY(blobs_.Put(f.manifest_digest, f.manifest_bytes, "manifest"));
    for (size_t i = 0; i < manifest.layers.size(); ++i) {
      const Descriptor& d = manifest.layers[i];
      ISB_ASSIGN_OR_RETURN(LayerCompression lc, LayerCompressionOf(d.media_type));
      ISB_ASSIGN_OR_RETURN(Fd blob, blobs_.OpenBlob(d.digest));
      FdSource source(blob.get());
      ISB_ASSIGN_OR_RETURN(UnpackedLayer u, UnpackIntoStore(store_, source, ToCompression(lc), config.diff_ids[i].str(),
                                                            settings_.max_image_bytes));
      r.layers.push_back(LayerRecord{d.digest.str(), u.diff_id, d.media_type, d.size, u.bytes});
    }
    r.manifest_digest = f.manifest_digest.str();
    r.config_digest = manifest.config.digest.str();
    r.manifest_media_type = manifest.media_type;
    r.config = RunConfig{config.env,  config.entrypoint, config.cmd,         config.working_dir,
                         config.user, config.os,         config.architecture};
    ISB_TRY(store_.Put(r));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace isb::image
