// Images end to end: a real registry (Debian's docker-registry, TLS with a test CA, anonymous or behind basic auth)
// holding images the tests build with umoci and skopeo from a static busybox, pulled by a real `isb serve`, run as
// sandboxes, snapshotted, exported (read back by skopeo) and imported; one org's images out of another's reach. An
// image deeper than a sandbox stacks, written as an OCI layout by the test, imported and run.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "e2e/daemon_fixture.h"
#include "image/digest.h"
#include "image/registry_fixture.h"
#include "image/tar_builder.h"
#include "must_work.h"

namespace isb::e2e {
namespace {

namespace fs = std::filesystem;
using image::testing::TestImages;
using image::testing::TestRegistry;

class ImagesTest : public E2eTest {
 protected:
  static void SetUpTestSuite() {
    if (!image::testing::MissingTool().empty()) return;
    auto built = TestImages::Build();
    if (built.ok()) images_ = std::move(*built);
  }
  static void TearDownTestSuite() { images_.reset(); }

  void SetUp() override {
    const std::string missing = image::testing::MissingTool();
    ISB_REQUIRE_MACHINE(missing.empty(), "the image tests need " << missing);
    ASSERT_NE(images_, nullptr) << "the test images could not be built";
    E2eTest::SetUp();
  }
  void TearDown() override {
    registry_.reset();  // before the leak check
    E2eTest::TearDown();
  }

  // A registry with the test image pushed as test/busybox:1; the daemon restarted to allow and trust it.
  void StartRegistry(bool basic_auth = false, bool allow = true) {
    auto r = TestRegistry::Start(basic_auth);
    ASSERT_TRUE(r.ok()) << r.error().message;
    registry_ = std::move(*r);
    auto digest = registry_->Push(*images_, "amd64", "test/busybox:1");
    ASSERT_TRUE(digest.ok()) << digest.error().message;
    digest_ = *digest;
    ASSERT_EQ(StopDaemon(), 0);
    std::vector<std::string> args = {"--registry-ca", registry_->ca_file()};
    if (allow) args.insert(args.end(), {"--registry-allow", registry_->host()});
    StartDaemon(args);
  }

  std::string Ref() const { return registry_->host() + "/test/busybox:1"; }

  // `sh -c SCRIPT` in the sandbox: its stdout, the exit code asserted 0.
  std::string Sh(const std::string& id, const std::string& script) {
    json r = Exec(id, {"/bin/sh", "-c", script});
    EXPECT_EQ(r.value("exit_code", -1), 0) << r.dump();
    return r.value("stdout", "");
  }

  size_t LayerDirs() const {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(state_dir() + "/images/layers/sha256", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec))
      ++n;
    return n;
  }

  static std::unique_ptr<TestImages> images_;
  std::unique_ptr<TestRegistry> registry_;
  std::string digest_;
};

std::unique_ptr<TestImages> ImagesTest::images_;

TEST_F(ImagesTest, APulledImageRunsAsASandboxAndASnapshotKeepsItsFilesButNotRunOrTmp) {
  ASSERT_NO_FATAL_FAILURE(StartRegistry());
  ProcResult pull = Isb({"image", "pull", "-q", Ref()});
  ASSERT_EQ(pull.exit_status, 0) << pull.Describe();
  EXPECT_EQ(pull.out, digest_.substr(7, 12) + " " + Ref() + " " + digest_ + "\n");
  json listed = MustTool("image_list", json::object());
  ASSERT_EQ(listed["images"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["images"][0]["name"], Ref());
  EXPECT_EQ(listed["images"][0]["layers"], 3);
  EXPECT_EQ(LayerDirs(), 3u);

  // `isb run` finds the org's image in the daemon's store, and runs its cmd (/bin/sh) when given no command.
  ProcResult run = RunProcess(
      {ISB_BINARY, "run", "--state-dir", state_dir(), "--image", Ref(), "--", "/bin/sh", "-c", "cat /etc/d/f"});
  EXPECT_EQ(run.exit_status, 0) << run.Describe();
  EXPECT_EQ(run.out, "f\n");
  ProcResult shell = RunProcess({ISB_BINARY, "run", "--state-dir", state_dir(), "--image", Ref()}, "echo $PATH\n");
  EXPECT_EQ(shell.exit_status, 0) << shell.Describe();
  EXPECT_EQ(shell.out, "/bin\n");

  MustTool("secret_create", {{"name", "FILE_SECRET"}, {"value", "file-secret-value"}});
  const std::string id =
      CreateSandbox({{"image", Ref()}, {"name", "from-image"}, {"secrets", json::array({"FILE_SECRET"})}});
  EXPECT_EQ(Sh(id, "cat /run/secrets/FILE_SECRET"), "file-secret-value");
  // The layers stacked: busybox from the first, /etc/d/f from the second, /etc/motd whited out by the third; the
  // config's Env taken.
  EXPECT_EQ(Sh(id, "cat /etc/d/f; test -e /etc/motd && echo motd || echo no-motd; echo $PATH"), "f\nno-motd\n/bin\n");
  EXPECT_EQ(Sh(id, "stat -c %u:%g /bin/busybox"), "0:0\n");
  Sh(id, "echo kept > /etc/kept; rm /etc/d/f; echo scratch > /tmp/scratch; mkdir -p /run/x; echo r > /run/x/f");

  json snap = MustTool("sandbox_snapshot", {{"sandbox", "from-image"}, {"name", "snap/app:1"}});
  EXPECT_EQ(snap["name"], "docker.io/snap/app:1") << snap.dump();
  EXPECT_EQ(snap["layers"], 4);
  EXPECT_EQ(snap["source"], "snapshot");
  const std::string next = CreateSandbox({{"image", "snap/app:1"}});
  EXPECT_EQ(Sh(next,
               "cat /etc/kept; test -e /etc/d/f && echo f || echo no-f; test -e /tmp/scratch && echo tmp || "
               "echo no-tmp; test -e /run/x/f && echo run || echo no-run; test -e /run/secrets/FILE_SECRET "
               "&& echo secret || echo no-secret"),
            "kept\nno-f\nno-tmp\nno-run\nno-secret\n");

  // Removal is refused while a sandbox is made from the image, and names it.
  HttpResponse busy = Tool("image_remove", {{"image", Ref()}});
  EXPECT_EQ(busy.status, 409) << busy.Describe();
  EXPECT_EQ(busy.j.value("message", ""), "image '" + Ref() + "' is used by sandbox(es) from-image: remove them first");
  MustTool("sandbox_remove", {{"sandbox", id}});
  MustTool("sandbox_remove", {{"sandbox", next}});
  // The snapshot still holds the three layers; only what nothing uses goes.
  EXPECT_EQ(MustTool("image_remove", {{"image", Ref()}})["removed"], Ref());
  EXPECT_EQ(LayerDirs(), 4u);
  EXPECT_EQ(MustTool("image_remove", {{"image", "snap/app:1"}})["removed"], "docker.io/snap/app:1");
  EXPECT_EQ(LayerDirs(), 0u);
  EXPECT_TRUE(fs::is_empty(state_dir() + "/images/blobs/sha256"));
  ExpectAudit("the CLI's pull", {Unix("image_pull")});
}

TEST_F(ImagesTest, AnExportIsReadBySkopeoAndPodmanAndImportsIntoAnotherOrgUnderANewName) {
  ASSERT_NO_FATAL_FAILURE(StartRegistry());
  MustTool("image_pull", {{"ref", Ref()}});
  const std::string archive = temp_dir() + "/busybox.tar";
  ProcResult exported = Isb({"image", "export", Ref(), archive});
  ASSERT_EQ(exported.exit_status, 0) << exported.Describe();
  ProcResult inspect = RunProcess({"skopeo", "inspect", "oci-archive:" + archive});
  ASSERT_EQ(inspect.exit_status, 0) << inspect.Describe();
  json seen = json::parse(inspect.out, nullptr, false);
  EXPECT_EQ(seen.value("Digest", ""), digest_) << inspect.out;
  EXPECT_EQ(seen["Layers"].size(), 3u) << inspect.out;
  ExpectAudit("the CLI's export", {Unix("image_export")});

  // podman loads it, into a store of its own in the test's directory (vfs: no mounts; loading runs no container),
  // its temporary files there too (TMPDIR). Its lock file has a fixed place in /dev/shm: removed after, unless a
  // podman of the host's had made it.
  const std::string store = temp_dir() + "/podman";
  const std::string podman_lock = "/dev/shm/libpod_lock";
  const bool lock_was_there = fs::exists(podman_lock);
  fs::create_directories(store + "/tmp");
  const std::vector<std::string> podman = {
      "podman",           "--root", store + "/root",    "--runroot", store + "/run", "--storage-driver", "vfs",
      "--events-backend", "none",   "--cgroup-manager", "cgroupfs",  "--tmpdir",     store + "/tmp"};
  auto Podman = [&podman, &store](std::vector<std::string> args) {
    std::vector<std::string> argv = podman;
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, "", 60s, {"TMPDIR=" + store + "/tmp"});
  };
  ProcResult load = Podman({"load", "--input", archive});
  ASSERT_EQ(load.exit_status, 0) << load.Describe();
  EXPECT_EQ(load.out, "Loaded image: " + Ref() + "\n") << load.Describe();
  ProcResult loaded = Podman({"image", "inspect", "--format", "{{.Digest}} {{len .RootFS.Layers}}", Ref()});
  ASSERT_EQ(loaded.exit_status, 0) << loaded.Describe();
  EXPECT_EQ(loaded.out, digest_ + " 3\n") << loaded.Describe();
  EXPECT_EQ(Podman({"rmi", "--all", "--force"}).exit_status, 0);
  if (!lock_was_there) fs::remove(podman_lock);

  MustTool("org_create", {{"name", "beta"}});
  HttpResponse imported = Tool("image_import", {{"path", archive}, {"name", "team/busybox:copy"}}, {"X-Isb-Org: beta"});
  ASSERT_EQ(imported.status, 200) << imported.Describe();
  EXPECT_EQ(imported.j["result"]["images"][0]["name"], "docker.io/team/busybox:copy") << imported.Describe();
  EXPECT_EQ(imported.j["result"]["images"][0]["digest"], digest_);
  EXPECT_EQ(LayerDirs(), 3u);  // the same layers, stored once

  // A docker save archive (skopeo's docker-archive) names its image by its RepoTags.
  const std::string docker = temp_dir() + "/docker.tar";
  ProcResult save = RunProcess({"skopeo", "copy", "--quiet", "oci:" + images_->work() + "/oci:amd64",
                                "docker-archive:" + docker + ":saved/busybox:2"});
  ASSERT_EQ(save.exit_status, 0) << save.Describe();
  json from_docker = MustTool("image_import", {{"path", docker}});
  EXPECT_EQ(from_docker["images"][0]["name"], "docker.io/saved/busybox:2") << from_docker.dump();
  const std::string id = CreateSandbox({{"image", "saved/busybox:2"}});
  EXPECT_EQ(Sh(id, "cat /etc/d/f"), "f\n");
}

TEST_F(ImagesTest, AnOrgSeesUsesAndRemovesOnlyItsOwnImages) {
  ASSERT_NO_FATAL_FAILURE(StartRegistry());
  MustTool("image_pull", {{"ref", Ref()}});
  MustTool("org_create", {{"name", "beta"}});
  const std::string not_found =
      "image '" + Ref() + "' not found in org 'beta': pull or import it first (isb image pull)";
  HttpResponse inspect = Tool("image_inspect", {{"image", Ref()}}, {"X-Isb-Org: beta"});
  EXPECT_EQ(inspect.status, 404) << inspect.Describe();
  EXPECT_EQ(inspect.j.value("message", ""), not_found);
  HttpResponse by_id = Tool("image_inspect", {{"image", digest_.substr(7, 12)}}, {"X-Isb-Org: beta"});
  EXPECT_EQ(by_id.status, 404) << by_id.Describe();
  HttpResponse list = Tool("image_list", json::object(), {"X-Isb-Org: beta"});
  EXPECT_EQ(list.j["result"]["images"], json::array()) << list.Describe();
  HttpResponse create = Tool("sandbox_create", {{"image", Ref()}}, {"X-Isb-Org: beta"});
  EXPECT_EQ(create.status, 404) << create.Describe();
  EXPECT_EQ(create.j.value("message", ""), not_found);
  HttpResponse remove = Tool("image_remove", {{"image", Ref()}}, {"X-Isb-Org: beta"});
  EXPECT_EQ(remove.status, 404) << remove.Describe();
  // Pulled in beta too: its own record, the same layers on disk.
  HttpResponse pulled = Tool("image_pull", {{"ref", Ref()}}, {"X-Isb-Org: beta"});
  EXPECT_EQ(pulled.status, 200) << pulled.Describe();
  EXPECT_EQ(LayerDirs(), 3u);
  EXPECT_EQ(MustTool("image_list", json::object())["images"].size(), 1u);
}

std::string MiBOf(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

TEST_F(ImagesTest, ImagesCountAgainstTheOrgsDiskQuotaAndAPullPastItIsRefusedAndUndone) {
  ASSERT_NO_FATAL_FAILURE(StartRegistry());
  // A quota of one byte: the first layer stops the pull, and nothing of it stays.
  MustTool("org_quota_set", {{"disk", 1}});
  HttpResponse tiny = Tool("image_pull", {{"ref", Ref()}});
  EXPECT_EQ(tiny.status, 403) << tiny.Describe();
  EXPECT_TRUE(tiny.j.value("message", "")
                  .starts_with("quota: org 'default' may be allocated 0 MiB of disk, which "
                               "leaves 0 MiB for image '" +
                               Ref() + "': "))
      << tiny.Describe();
  EXPECT_EQ(MustTool("image_list", json::object())["images"], json::array());
  EXPECT_TRUE(fs::is_empty(state_dir() + "/images/layers/tmp"));

  MustTool("org_quota_set", {{"disk", int64_t{1} << 30}});
  json pulled = MustTool("image_pull", {{"ref", Ref()}});
  const uint64_t bytes = pulled["size"].get<uint64_t>() + pulled["unpacked_size"].get<uint64_t>();
  ASSERT_GT(bytes, 0u);
  // Pulled again: its layers are the org's already and are not fetched, but they keep their unpacked sizes.
  json again = MustTool("image_pull", {{"ref", Ref()}});
  EXPECT_EQ(again["unpacked_size"], pulled["unpacked_size"]) << again.dump();
  EXPECT_EQ(again["size"], pulled["size"]) << again.dump();

  // A sandbox's disk and the image share the quota.
  const uint64_t quota = bytes + (uint64_t{64} << 20);
  MustTool("org_quota_set", {{"disk", quota}});
  HttpResponse over = Tool("sandbox_create", {{"disk", "65m"}});
  EXPECT_EQ(over.status, 403) << over.Describe();
  EXPECT_EQ(over.j.value("message", ""), "quota: org 'default' may be allocated " + MiBOf(quota) + " of disk; it has " +
                                             MiBOf(bytes) + " (sandboxes 0 MiB, images " + MiBOf(bytes) +
                                             ") and this sandbox asks for 65 MiB");
  const std::string id = CreateSandbox({{"disk", "64m"}});
  HttpResponse full = Tool("image_pull", {{"ref", Ref()}});
  EXPECT_EQ(full.status, 403) << full.Describe();
  EXPECT_EQ(full.j.value("message", ""), "quota: org 'default' may be allocated " + MiBOf(quota) +
                                             " of disk; its sandboxes take 64 MiB and its images " + MiBOf(bytes) +
                                             ": remove images or sandboxes first");
  MustTool("sandbox_remove", {{"sandbox", id}});

  // Another org one byte short: its layers are on the host already (no unpacking stops it), and the record it
  // made is taken back; its layers stay for the org that holds them.
  MustTool("org_create", {{"name", "beta"}});
  HttpResponse set = Tool("org_quota_set", {{"disk", bytes - 1}}, {"X-Isb-Org: beta"});
  ASSERT_EQ(set.status, 200) << set.Describe();
  HttpResponse short_by_one = Tool("image_pull", {{"ref", Ref()}}, {"X-Isb-Org: beta"});
  EXPECT_EQ(short_by_one.status, 403) << short_by_one.Describe();
  EXPECT_EQ(short_by_one.j.value("message", ""), "quota: org 'beta' may be allocated " + MiBOf(bytes - 1) +
                                                     " of disk; its sandboxes take 0 MiB and its images would take " +
                                                     MiBOf(bytes) + " with image '" + Ref() +
                                                     "' (it had 0 MiB): remove images or sandboxes first");
  HttpResponse beta_list = Tool("image_list", json::object(), {"X-Isb-Org: beta"});
  EXPECT_EQ(beta_list.j["result"]["images"], json::array()) << beta_list.Describe();
  EXPECT_EQ(LayerDirs(), 3u);
  EXPECT_EQ(MustTool("image_list", json::object())["images"].size(), 1u);
}

TEST_F(ImagesTest, BasicAuthComesFromAnOrgSecretAndAWrongPasswordIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartRegistry(/*basic_auth=*/true));
  // The registry's refusal is the pull's failure, not the caller's: 403, as isb's own 401 is for its own callers.
  HttpResponse anonymous = Tool("image_pull", {{"ref", Ref()}});
  EXPECT_EQ(anonymous.status, 403) << anonymous.Describe();
  MustTool("secret_create", {{"name", "REG_WRONG"}, {"value", "alice:wrong"}});
  HttpResponse wrong = Tool("image_pull", {{"ref", Ref()}, {"auth_secret", "REG_WRONG"}});
  EXPECT_EQ(wrong.status, 403) << wrong.Describe();
  EXPECT_EQ(wrong.body.find("wrong"), std::string::npos) << "the password is in the answer";
  MustTool("secret_create",
           {{"name", "REG"}, {"value", std::string(image::testing::kTestUser) + ":" + image::testing::kTestPassword}});
  json pulled = MustTool("image_pull", {{"ref", Ref()}, {"auth_secret", "REG"}});
  EXPECT_EQ(pulled["digest"], digest_);
}

TEST_F(ImagesTest, ATamperedLayerIsRefusedNamingItAndNothingIsLeft) {
  ASSERT_NO_FATAL_FAILURE(StartRegistry());
  // The registry's copy of the second layer loses its last byte.
  ProcResult manifest = RunProcess({"skopeo", "inspect", "--raw", "oci:" + images_->work() + "/oci:amd64"});
  ASSERT_EQ(manifest.exit_status, 0) << manifest.Describe();
  const json m = json::parse(manifest.out);
  auto layer = image::ParseDigest(m["layers"][1]["digest"].get<std::string>());
  ASSERT_TRUE(layer.ok());
  const std::string data = registry_->BlobDataPath(*layer);
  std::string bytes = ReadFileOrEmpty(data);
  ASSERT_FALSE(bytes.empty()) << data;
  bytes.back() ^= 0x55;
  { std::ofstream(data, std::ios::binary | std::ios::trunc) << bytes; }
  HttpResponse pull = Tool("image_pull", {{"ref", Ref()}});
  EXPECT_EQ(pull.status, 400) << pull.Describe();
  EXPECT_TRUE(
      pull.j.value("message", "").starts_with("layer " + layer->Short() + "\u2026: digest mismatch (got sha256:"))
      << pull.Describe();
  EXPECT_EQ(MustTool("image_list", json::object())["images"], json::array());
  EXPECT_TRUE(fs::is_empty(state_dir() + "/images/layers/tmp"));
  EXPECT_TRUE(fs::is_empty(state_dir() + "/images/blobs/tmp"));
  EXPECT_FALSE(fs::exists(state_dir() + "/images/blobs/sha256/" + layer->hex));
}

TEST_F(ImagesTest, AnIndexResolvesToTheHostsPlatformAndALoopbackRegistryNeedsTheOperatorsAllow) {
  ASSERT_NO_FATAL_FAILURE(StartRegistry(/*basic_auth=*/false, /*allow=*/false));
  HttpResponse refused = Tool("image_pull", {{"ref", Ref()}});
  EXPECT_EQ(refused.status, 403) << refused.Describe();
  ASSERT_EQ(StopDaemon(), 0);
  StartDaemon({"--registry-ca", registry_->ca_file(), "--registry-allow", registry_->host()});
  auto arm = registry_->Push(*images_, "arm64", "test/busybox:arm");
  ASSERT_TRUE(arm.ok()) << arm.error().message;
  auto index = registry_->PushIndex("test/busybox", digest_, *arm, "multi");
  ASSERT_TRUE(index.ok()) << index.error().message;
  json pulled = MustTool("image_pull", {{"ref", registry_->host() + "/test/busybox:multi"}});
  EXPECT_EQ(pulled["digest"], digest_) << pulled.dump();
  // An index of indexes (as some build tools push): the host's manifest is found one level down.
  auto outer = registry_->PushOuterIndex("test/busybox", *index, "nested");
  ASSERT_TRUE(outer.ok()) << outer.error().message;
  json nested = MustTool("image_pull", {{"ref", registry_->host() + "/test/busybox:nested"}});
  EXPECT_EQ(nested["digest"], digest_) << nested.dump();
}

TEST_F(ImagesTest, ADebianRootfsMadeByMmdebstrapRunsAptAndPython) {
  ProcResult made = RunProcess({"bash", ISB_MAKE_DEBIAN_IMAGE, ISB_DEBIAN_IMAGE_DIR}, "", std::chrono::minutes(10));
  ASSERT_EQ(made.exit_status, 0) << made.Describe();
  json imported =
      MustTool("image_import", {{"path", std::string(ISB_DEBIAN_IMAGE_DIR) + "/oci"}, {"name", "debian:12-isb"}});
  ASSERT_EQ(imported["images"].size(), 1u) << imported.dump();
  const std::string id = CreateSandbox({{"image", "debian:12-isb"}});
  json apt = Exec(id, {"apt-get", "--version"});
  EXPECT_EQ(apt.value("exit_code", -1), 0) << apt.dump();
  EXPECT_TRUE(apt.value("stdout", "").starts_with("apt 2.6")) << apt.dump();
  json py = Exec(id, {"python3", "-c", "import sys; print(6*7, sys.version_info[0])"});
  EXPECT_EQ(py.value("stdout", ""), "42 3\n") << py.dump();
}

// An image of 130 layers, two more than a sandbox stacks: its three lowest layers are stacked flattened into one.
class DeepImageTest : public E2eTest {
 protected:
  void SetUp() override {
    ISB_REQUIRE_MACHINE(::access("/bin/busybox", X_OK) == 0, "the deep image test needs a static /bin/busybox");
    E2eTest::SetUp();
  }

  // An OCI layout of uncompressed `layers` (tars, bottom first) under `dir`, its image named `name`. Returns the
  // layers' diff_ids.
  static std::vector<std::string> WriteLayout(const std::string& dir, const std::vector<std::string>& layers,
                                              const std::string& name) {
    fs::create_directories(dir + "/blobs/sha256");
    auto put = [&dir](const std::string& bytes) {
      const image::Digest d = image::DigestOf(bytes);
      std::ofstream(dir + "/blobs/sha256/" + d.hex, std::ios::binary) << bytes;
      return d.str();
    };
    json manifest_layers = json::array(), diff_ids = json::array();
    std::vector<std::string> ids;
    for (const std::string& tar : layers) {
      ids.push_back(put(tar));
      diff_ids.push_back(ids.back());
      manifest_layers.push_back(
          {{"mediaType", "application/vnd.oci.image.layer.v1.tar"}, {"digest", ids.back()}, {"size", tar.size()}});
    }
    const std::string config = json{{"architecture", "amd64"},
                                    {"os", "linux"},
                                    {"config", {{"Env", {"PATH=/bin"}}, {"Cmd", {"/bin/sh"}}}},
                                    {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}}
                                   .dump();
    const std::string manifest = json{
        {"schemaVersion", 2},
        {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
        {"config",
         {{"mediaType", "application/vnd.oci.image.config.v1+json"}, {"digest", put(config)}, {"size", config.size()}}},
        {"layers", manifest_layers}}.dump();
    const json index = {{"schemaVersion", 2},
                        {"mediaType", "application/vnd.oci.image.index.v1+json"},
                        {"manifests",
                         {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                           {"digest", put(manifest)},
                           {"size", manifest.size()},
                           {"annotations", {{"org.opencontainers.image.ref.name", name}}}}}}};
    std::ofstream(dir + "/index.json") << index.dump();
    std::ofstream(dir + "/oci-layout") << R"({"imageLayoutVersion":"1.0.0"})";
    return ids;
  }

  size_t LayerDirs() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(state_dir() + "/images/layers/sha256")) n += e.is_directory() ? 1 : 0;
    return n;
  }
};

TEST_F(DeepImageTest, ASandboxOfA130LayerImageSeesItsTopFilesNotWhitedOutOnesAndTheFlattenedLayerIsMadeOnce) {
  std::ifstream in("/bin/busybox", std::ios::binary);
  const std::string busybox((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(busybox.size(), 0u);
  using image::testing::TarBuilder;
  // Layers 0..2 are flattened: busybox and files below, whiteouts and an opaque directory among them.
  std::vector<std::string> layers;
  layers.push_back(TarBuilder()
                       .File("bin/busybox", busybox, 0755)
                       .Symlink("bin/sh", "busybox")
                       .File("etc/gone-low", "low")
                       .File("etc/opaque/old", "old")
                       .Dir("etc/emptied")
                       .File("etc/emptied/f", "f")
                       .End());
  layers.push_back(TarBuilder()
                       .File("etc/.wh.gone-low", "")
                       .File("etc/opaque/.wh..wh..opq", "")
                       .File("etc/opaque/new", "new")
                       .File("etc/.wh.emptied", "")
                       .File("layers/1", "1")
                       .End());
  layers.push_back(TarBuilder().File("layers/2", "2").File("etc/emptied", "a file now").End());
  // Layers 3..129 are stacked as they are; 128 whites out layers/5.
  for (int i = 3; i < 130; ++i) {
    TarBuilder t;
    t.File("layers/" + std::to_string(i), std::to_string(i));
    if (i == 128) t.File("layers/.wh.5", "");
    if (i == 129) t.File("top", "top");
    layers.push_back(t.End());
  }
  const std::string layout = temp_dir() + "/deep-oci";
  const std::vector<std::string> ids = WriteLayout(layout, layers, "test/deep:130");
  json imported = MustTool("image_import", {{"path", layout}});
  ASSERT_EQ(imported["images"].size(), 1u) << imported.dump();
  EXPECT_EQ(imported["images"][0]["name"], "docker.io/test/deep:130");
  EXPECT_EQ(imported["images"][0]["layers"], 130);
  EXPECT_EQ(LayerDirs(), 130u);

  const std::string script =
      "cat /top; echo; cat /layers/1 /layers/2 /layers/129; echo; busybox ls /etc/opaque; cat /etc/emptied; echo; "
      "for f in /etc/gone-low /etc/opaque/old /layers/5; do test -e $f && echo has $f; done; "
      "busybox ls /layers | busybox wc -l; busybox stat -c %u:%g:%a /bin/busybox";
  const std::string expected = "top\n12129\nnew\na file now\n128\n0:0:755\n";
  // `isb run --image` makes no flattened layer of its own (the daemon's collection would not know it).
  ProcResult refused = RunProcess(
      {ISB_BINARY, "run", "--state-dir", state_dir(), "--image", "test/deep:130", "--", "/bin/sh", "-c", script});
  EXPECT_EQ(refused.exit_status, 125) << refused.Describe();
  EXPECT_EQ(refused.err,
            "isb: image test/deep:130 has 130 layers: more than the 128 one sandbox stacks; create the sandbox "
            "through the daemon (isb create --image test/deep:130), which flattens its lowest layers\n");
  EXPECT_EQ(LayerDirs(), 130u);
  EXPECT_TRUE(fs::is_empty(state_dir() + "/images/layers/tmp"));

  const std::string first = CreateSandbox({{"image", "test/deep:130"}});
  json r = Exec(first, {"/bin/sh", "-c", script});
  EXPECT_EQ(r.value("exit_code", -1), 0) << r.dump();
  EXPECT_EQ(r.value("stdout", ""), expected) << r.dump();

  // The flattened layer sits beside the others under its chain id; a second sandbox stacks it as it is.
  std::string chain = ids[0];
  for (size_t i = 1; i < 3; ++i) chain = image::DigestOf(chain + " " + ids[i]).str();
  const std::string flat = state_dir() + "/images/layers/sha256/" + chain.substr(7);
  struct stat made {};
  ASSERT_EQ(::stat((flat + "/root").c_str(), &made), 0) << flat;
  EXPECT_EQ(LayerDirs(), 131u);
  // Beside its root, the file data its flatten wrote: what an org whose images need it is charged.
  EXPECT_EQ(ReadFileOrEmpty(flat + "/bytes"), std::to_string(busybox.size() + 3 + 3 + 1 + 3 + 1 + 1 + 10));
  const std::string second = CreateSandbox({{"image", "test/deep:130"}});
  r = Exec(second, {"/bin/sh", "-c", script});
  EXPECT_EQ(r.value("stdout", ""), expected) << r.dump();
  struct stat again {};
  ASSERT_EQ(::stat((flat + "/root").c_str(), &again), 0);
  EXPECT_EQ(again.st_ino, made.st_ino);
  EXPECT_EQ(again.st_ctim.tv_sec, made.st_ctim.tv_sec);
  EXPECT_EQ(again.st_ctim.tv_nsec, made.st_ctim.tv_nsec);
  EXPECT_EQ(LayerDirs(), 131u);
  EXPECT_TRUE(fs::is_empty(state_dir() + "/images/layers/tmp"));
  // `isb run --image` beside the daemon stacks the layer the daemon flattened.
  ProcResult run = RunProcess(
      {ISB_BINARY, "run", "--state-dir", state_dir(), "--image", "test/deep:130", "--", "/bin/sh", "-c", script});
  EXPECT_EQ(run.exit_status, 0) << run.Describe();
  EXPECT_EQ(run.out, expected);
  EXPECT_EQ(LayerDirs(), 131u);

  // Removed with the image, once no sandbox stacks it.
  MustTool("sandbox_remove", {{"sandbox", first}});
  MustTool("sandbox_remove", {{"sandbox", second}});
  EXPECT_EQ(MustTool("image_remove", {{"image", "test/deep:130"}})["removed"], "docker.io/test/deep:130");
  EXPECT_EQ(LayerDirs(), 0u);
  EXPECT_TRUE(fs::is_empty(state_dir() + "/images/blobs/sha256"));
}

}  // namespace
}  // namespace isb::e2e
