// ImageStore: the images each org holds, and the unpacked layers they share.
//
// Layout under its root (<state>/images):
//   blobs/sha256/<hex>                    verified blobs (BlobStore's; manifests, configs, compressed layers)
//   layers/sha256/<diff_id hex>/root/     one layer unpacked, overlay whiteouts in place; made in layers/tmp/ and
//                                         renamed here only once its diff_id was checked, so a layer dir that
//                                         exists is complete
//   layers/sha256/<chain id hex>/root/    the lowest layers of an image deeper than a sandbox stacks, flattened
//                                         into one (layer_flatten.h) when a sandbox is first made from it; made in
//                                         layers/tmp/ and renamed here once complete, like an unpacked layer
//   layers/sha256/<chain id hex>/bytes    the file data that flatten wrote (decimal), written before the rename:
//                                         what each org whose images need it is charged
//   orgs/<org>/<sha256 of the name>.json  one image record of that org
// A layer or blob is stored once for every org; an org sees and uses only the images its records name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "base/result.h"

namespace isb::image {

// The most layers a sandbox stacks (engine::kMaxImageLayers, what one overlay mount takes). An image may have more
// (manifest.h's kMaxLayers): its lowest FlattenedCount layers are then stacked as one layer flattened from them.
inline constexpr size_t kMaxStackedLayers = 128;

// How many of an image's `layers` (bottom first) a sandbox stacks flattened into one, so that it stacks at most
// kMaxStackedLayers: 0 when they fit, else layers - kMaxStackedLayers + 1.
size_t FlattenedCount(size_t layers);

// One layer of an image, bottom first in ImageRecord::layers.
struct LayerRecord {
  std::string digest;      // the blob's ("sha256:..."), as the manifest names it; empty for a snapshot's until export
  std::string diff_id;     // the uncompressed tar's: the key of its unpacked dir
  std::string media_type;  // the blob's
  uint64_t size = 0;       // the blob's bytes
  uint64_t unpacked_bytes = 0;
  bool operator==(const LayerRecord&) const = default;
};

// What of an image's config a sandbox takes: the caller's values win over these.
struct RunConfig {
  std::vector<std::string> env;  // "NAME=value"
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string working_dir;
  std::string user;
  std::string os;
  std::string architecture;
  bool operator==(const RunConfig&) const = default;
};

struct ImageRecord {
  std::string org;
  std::string name;             // the normalized reference it is known by ("docker.io/library/python:3.12")
  std::string manifest_digest;  // "sha256:..." of the manifest it was made from
  std::string config_digest;
  std::string manifest_media_type;
  std::vector<LayerRecord> layers;  // bottom first
  RunConfig config;
  std::string source;  // "pull", "import", "snapshot"
  int64_t created_ms = 0;
  bool operator==(const ImageRecord&) const = default;
};
nlohmann::json ToJson(const ImageRecord& record);
Result<ImageRecord> ImageRecordFromJson(const nlohmann::json& j);

// The chain id of the first `count` diff_ids (OCI's ChainID: the first; then "sha256:" + sha256 of the chain so far,
// a space and the next): the key of the layer flattened from exactly those layers, in that order, for any image of
// any org. Flattening takes two layers or more: the key is then the digest of a 143-byte text, which no tar is (tars
// are 512-byte blocks), so no layer's diff_id is it and no pull or import can claim or replace its directory.
std::string ChainId(const std::vector<LayerRecord>& layers, size_t count);

// A flatten about to be made, as its caller is asked about it first (StackedLayerRoots).
struct FlattenRequest {
  std::string image;       // the record's name
  size_t layers = 0;       // the image's
  size_t count = 0;        // its lowest layers, merged into one
  uint64_t max_bytes = 0;  // the most file data the flatten may write: what those layers hold on disk
};
// OK to make it; an error refuses it and is what StackedLayerRoots returns.
using FlattenGate = std::function<Status(const FlattenRequest&)>;

// The short id an image is shown and may be named by: the first 12 hex digits of its manifest digest.
std::string ShortId(const ImageRecord& record);

// Thread-safe. Messages name the org and the image, and say what to do.
class ImageStore {
 public:
  // Creates the directories (0700) and, with `clean` (the daemon's open), clears what a crash left in layers/tmp
  // and layers/trash; a reader beside a running daemon (`isb run --image`) opens without it.
  static Result<std::unique_ptr<ImageStore>> Open(std::filesystem::path root, bool clean = true);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path BlobDir() const { return root_ / "blobs"; }

  // The unpacked layer's root directory for `diff_id` ("sha256:<hex>"), and whether it is there.
  std::filesystem::path LayerRoot(const std::string& diff_id) const;
  bool HasLayer(const std::string& diff_id) const;
  // A new empty dir to unpack a layer into: <tmp>/root. Commit it or Discard it.
  Result<std::filesystem::path> BeginLayer();
  // Moves an unpacked layer into place (a layer that came there meanwhile wins; this one is removed).
  Status CommitLayer(const std::filesystem::path& begun_root, const std::string& diff_id);
  void DiscardLayer(const std::filesystem::path& begun_root);

  // The directories a sandbox stacks for `record`, bottom first, at most kMaxStackedLayers: its layers' roots, with
  // its lowest FlattenedCount(...) layers as one layer flattened from them. That layer is made the first time it is
  // needed (in layers/tmp, then renamed under its ChainId: an error or a crash leaves nothing a later call would
  // use; flattens run one at a time, so a second call for the same layer waits and finds it made) and kept while an
  // image over those layers is. `may_flatten`, when set, is asked before a flatten is made (never when the layer is
  // stored already) and may refuse it. kConflict when a layer is gone from the store.
  Result<std::vector<std::string>> StackedLayerRoots(const ImageRecord& record,
                                                     const FlattenGate& may_flatten = nullptr);

  // Stores (or replaces) the org's record under its name.
  Status Put(const ImageRecord& record);
  // Whether a record of `org` names `digest` (a manifest, config, blob or diff_id): content the org has shown it
  // holds, which a pull may take from the store rather than fetch and check again. Knowing a digest is not holding
  // its content: another org's layer is never reused on the strength of its digest alone.
  bool OrgHolds(const std::string& org, const std::string& digest) const;
  // The org's record of the layer `diff_id` (of those naming it, the one with the most unpacked_bytes), if any.
  std::optional<LayerRecord> HeldLayer(const std::string& org, const std::string& diff_id) const;

  // Digests (blobs, diff_ids) a pull, import or snapshot under way needs kept: CollectGarbage leaves them. Unpinned
  // when this goes away.
  class Pins {
   public:
    explicit Pins(ImageStore& store) : store_(store) {}
    Pins(const Pins&) = delete;
    Pins& operator=(const Pins&) = delete;
    ~Pins();
    void Add(const std::vector<std::string>& digests);

   private:
    ImageStore& store_;
    std::vector<std::string> held_;
  };
  // The org's image named `ref`: by its normalized name, its manifest digest ("sha256:..."), or a prefix of at least
  // 12 hex digits of it. kNotFound otherwise ("image 'x' not found in org 'acme': isb image pull x").
  Result<ImageRecord> Get(const std::string& org, const std::string& ref) const;
  std::vector<ImageRecord> List(const std::string& org) const;
  // The bytes on the host that `org`'s images take, charged to its disk quota: each distinct layer's unpacked bytes
  // and compressed blob once, however many of its images share them (and whether other orgs hold them too), and each
  // distinct flattened layer its images need and the store holds once, sized by what its flatten wrote (one made
  // before sizes were kept: its merged layers' unpacked bytes).
  uint64_t OrgBytes(const std::string& org) const { return BytesOf(List(org)); }
  // The same for records already read (one org's).
  uint64_t BytesOf(const std::vector<ImageRecord>& records) const;
  // Removes the record (the layers stay until CollectGarbage).
  Status Remove(const std::string& org, const std::string& name);

  struct Garbage {
    int layers = 0;
    int blobs = 0;
    uint64_t bytes = 0;
  };
  // Removes every layer dir and blob that no record of any org names (a flattened layer: whose ChainId no record
  // needs), no Pins hold and `in_use` (the diff_ids, or chain ids, of the layers sandboxes are made from) does not
  // list. What goes is moved aside under the lock and deleted after it.
  Result<Garbage> CollectGarbage(const std::vector<std::string>& in_use = {});

 private:
  explicit ImageStore(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path RecordPath(const std::string& org, const std::string& name) const;
  std::vector<ImageRecord> ListAll() const ISB_REQUIRES(mu_);
  std::vector<ImageRecord> ListLocked(const std::string& org) const ISB_REQUIRES(mu_);
  // The root of the layer flattened from `record`'s lowest `count` layers, made when it is not stored.
  Result<std::string> Flattened(const ImageRecord& record, size_t count, const FlattenGate& may_flatten);
  // What a stored flattened layer is charged as (its bytes file; else `fallback`).
  uint64_t FlattenedBytes(const std::string& chain, uint64_t fallback) const;

  const std::filesystem::path root_;
  mutable Mutex mu_;  // orders record writes against reads and garbage collection
  std::map<std::string, int> pins_ ISB_GUARDED_BY(mu_);
  Mutex flatten_mu_;  // held through a flatten: one at a time, daemon-wide (taken before mu_, never after)
};

// The diff_id (or chain id) of a layer directory LayerRoot made ("<root>/layers/sha256/<hex>/root"), or "" for
// another path.
std::string DiffIdOfLayerRoot(const std::string& path);

}  // namespace isb::image
