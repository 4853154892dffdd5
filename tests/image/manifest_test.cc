#include "image/manifest.h"

#include <gtest/gtest.h>

namespace isb::image {
namespace {

const std::string kA = "sha256:be888cb28c4aa989ffe90aab3d80573926f1e45f846d1d23d2914919015c07a6";
const std::string kB = "sha256:f303f9cf1e7d8acbf0c98ad37bcf1af55c614efcc0f3501e43d962565f4effe5";
const std::string kC = "sha256:88f4c2d916ec0b66f182c6b79c362981199918740bbfcdc1e5475afb7fc2aa39";

// As umoci writes it (OCI, no mediaType at the top, as the specification allows).
const std::string kOciManifest = R"({"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json",
"digest":")" + kC + R"(","size":709},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":")" +
                                 kA + R"(","size":1084042},{"mediaType":"application/vnd.oci.image.layer.v1.tar+zstd",
"digest":")" + kB + R"(","size":194},{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":")" +
                                 kB + R"(","size":0,"annotations":{"a":"b"}}]})";

// As skopeo --format v2s2 pushes it.
const std::string kDockerManifest =
    R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
"config":{"mediaType":"application/vnd.docker.container.image.v1+json","size":709,"digest":")" +
    kC + R"("},
"layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":1084042,"digest":")" +
    kA + R"("}]})";

std::string ManifestWithLayer(const std::string& layer) {
  return R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":
"application/vnd.oci.image.config.v1+json","digest":")" +
         kC + R"(","size":2},"layers":[)" + layer + "]}";
}

// As Docker Hub serves python:3.12 (shortened): platforms, variants and attestation manifests.
const std::string kDockerHubIndex =
    R"({"manifests":[
{"digest":")" +
    kA +
    R"(","mediaType":"application/vnd.oci.image.manifest.v1+json","platform":{"architecture":"amd64","os":"linux"},"size":2326},
{"digest":")" +
    kB +
    R"(","mediaType":"application/vnd.oci.image.manifest.v1+json","platform":{"architecture":"arm","os":"linux","variant":"v5"},"size":2326},
{"digest":")" +
    kC +
    R"(","mediaType":"application/vnd.oci.image.manifest.v1+json","platform":{"architecture":"arm","os":"linux","variant":"v7"},"size":2326},
{"digest":")" +
    kA +
    R"(","mediaType":"application/vnd.oci.image.manifest.v1+json","platform":{"architecture":"unknown","os":"unknown"},"size":840,
 "annotations":{"vnd.docker.reference.type":"attestation-manifest"}}],
"mediaType":"application/vnd.oci.image.index.v1+json","schemaVersion":2})";

TEST(ParseManifest, ReadsAnOciManifestWithEveryLayerCompression) {
  Result<ImageManifest> m = ParseManifest(kOciManifest);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->media_type, media::kOciManifest);
  EXPECT_EQ(m->config.digest.str(), kC);
  EXPECT_EQ(m->config.size, 709u);
  ASSERT_EQ(m->layers.size(), 3u);
  EXPECT_EQ(m->layers[0].digest.str(), kA);
  EXPECT_EQ(m->layers[0].size, 1084042u);
  EXPECT_EQ(*LayerCompressionOf(m->layers[0].media_type), LayerCompression::kGzip);
  EXPECT_EQ(*LayerCompressionOf(m->layers[1].media_type), LayerCompression::kZstd);
  EXPECT_EQ(*LayerCompressionOf(m->layers[2].media_type), LayerCompression::kNone);
}

TEST(ParseManifest, ReadsADockerSchema2Manifest) {
  Result<ImageManifest> m = ParseManifest(kDockerManifest);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->media_type, media::kDockerManifest);
  EXPECT_EQ(m->config.media_type, media::kDockerConfig);
  ASSERT_EQ(m->layers.size(), 1u);
  EXPECT_EQ(*LayerCompressionOf(m->layers[0].media_type), LayerCompression::kGzip);
}

TEST(ParseManifest, RefusesForeignAndUnknownLayersNamingThem) {
  auto refusal = [](const std::string& layer) { return ParseManifest(ManifestWithLayer(layer)).error().message; };
  EXPECT_EQ(
      refusal(R"({"mediaType":"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip","digest":")" + kA +
              R"(","size":5,"urls":["https://example.com/x"]})"),
      "manifest.layers[0].mediaType: layer media type 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip' "
      "is a foreign (non-distributable) layer, which isb does not fetch");
  EXPECT_EQ(
      refusal(R"({"mediaType":"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip","digest":")" + kA +
              R"(","size":5})"),
      "manifest.layers[0].mediaType: layer media type 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip' "
      "is a foreign (non-distributable) layer, which isb does not fetch");
  EXPECT_EQ(refusal(R"({"mediaType":"application/x-squashfs","digest":")" + kA + R"(","size":5})"),
            "manifest.layers[0].mediaType: layer media type 'application/x-squashfs' is not a layer isb unpacks "
            "(tar, tar+gzip or tar+zstd)");
  EXPECT_EQ(
      refusal(R"({"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":")" + kA +
              R"(","size":5,"urls":["https://cdn.example/blob"]})"),
      "manifest.layers[0].urls: names external URLs: layers fetched from elsewhere than the registry are refused");
}

TEST(ParseManifest, RefusesMalformedFieldsNamingThePath) {
  auto refusal = [](const std::string& bytes) { return ParseManifest(bytes).error().message; };
  EXPECT_EQ(refusal(ManifestWithLayer(
                R"({"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:x","size":1})")),
            "manifest.layers[0].digest: digest 'sha256:x' must have 64 hex digits after 'sha256:'");
  EXPECT_EQ(refusal(ManifestWithLayer(R"({"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":")" + kA +
                                      R"(","size":-1})")),
            "manifest.layers[0].size: must be a non-negative integer");
  EXPECT_EQ(
      refusal(ManifestWithLayer(R"({"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":")" + kA + R"("})")),
      "manifest.layers[0].size: is missing");
  EXPECT_EQ(refusal(R"({"schemaVersion":1,"layers":[]})"), "manifest.schemaVersion: must be 2");
  EXPECT_EQ(refusal(R"({"schemaVersion":2,"layers":[]})"), "manifest.config: is missing");
  EXPECT_EQ(refusal(R"({"schemaVersion":2,"schemaVersion":2})"),
            "manifest: key 'schemaVersion' appears twice in one object");
  EXPECT_EQ(refusal("[]"), "manifest: is not a JSON object");
  EXPECT_EQ(refusal("{"), "manifest: body is not valid JSON (byte 2)");
  EXPECT_EQ(refusal(kDockerHubIndex), "manifest.mediaType: is an image index, not a manifest");
  std::string artifact = kOciManifest;
  const std::string oci_config(media::kOciConfig);
  artifact.replace(artifact.find(oci_config), oci_config.size(), "application/vnd.cncf.helm.config.v1+json");
  EXPECT_EQ(refusal(artifact),
            "manifest.config.mediaType: 'application/vnd.cncf.helm.config.v1+json' is not an image "
            "config (this is not a container image)");
}

TEST(ParseManifest, RefusesManifestsOverFourMebibytes) {
  std::string big = kOciManifest;
  big.insert(big.size() - 1, ",\"pad\":\"" + std::string(kMaxManifestBytes, 'x') + "\"");
  Result<ImageManifest> m = ParseManifest(big);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, Code::kTooLarge);
  EXPECT_EQ(m.error().message, "manifest is " + std::to_string(big.size()) + " bytes, over the limit of 4194304");
}

TEST(ParseIndex, ReadsAnIndexAndSelectsTheHostsPlatform) {
  Result<ImageIndex> index = ParseIndex(kDockerHubIndex);
  ASSERT_TRUE(index.ok()) << index.error().message;
  EXPECT_EQ(index->media_type, media::kOciIndex);
  ASSERT_EQ(index->manifests.size(), 4u);
  Result<Descriptor> amd64 = SelectPlatform(*index, Platform{"linux", "amd64", ""});
  ASSERT_TRUE(amd64.ok()) << amd64.error().message;
  EXPECT_EQ(amd64->digest.str(), kA);
  EXPECT_EQ(amd64->platform->str(), "linux/amd64");
}

TEST(ParseIndex, AnArmHostTakesItsOwnVariantElseTheHighestOlderOne) {
  ImageIndex index = *ParseIndex(kDockerHubIndex);
  EXPECT_EQ(SelectPlatform(index, Platform{"linux", "arm", "v7"})->digest.str(), kC);
  EXPECT_EQ(SelectPlatform(index, Platform{"linux", "arm", "v6"})->digest.str(), kB);
  EXPECT_EQ(SelectPlatform(index, Platform{"linux", "arm", "v8"})->digest.str(), kC);
}

TEST(ParseIndex, NoManifestForTheHostIsNotFoundListingWhatThereIs) {
  ImageIndex index = *ParseIndex(kDockerHubIndex);
  Result<Descriptor> none = SelectPlatform(index, Platform{"linux", "arm64", "v8"});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Code::kNotFound);
  EXPECT_EQ(none.error().message,
            "image index has no manifest for linux/arm64/v8 (it has: linux/amd64, linux/arm/v5, linux/arm/v7)");
}

TEST(ParseIndex, Arm64WithoutAVariantIsV8) {
  ImageIndex index{
      std::string(media::kDockerManifestList),
      {Descriptor{std::string(media::kDockerManifest), *ParseDigest(kB), 10, Platform{"linux", "arm64", ""}}}};
  EXPECT_EQ(SelectPlatform(index, Platform{"linux", "arm64", "v8"})->digest.str(), kB);
}

TEST(ParseIndex, AnIndexOfIndexesIsSearchedDepthFirstWithinBounds) {
  const std::string kD = "sha256:" + std::string(64, 'd');
  const Digest inner_a = *ParseDigest(kC), inner_b = *ParseDigest(kB);
  auto entry = [](const std::string& digest, std::optional<Platform> platform, std::string_view type) {
    return Descriptor{std::string(type), *ParseDigest(digest), 10, std::move(platform)};
  };
  // The top lists two indexes: the first has only arm/v7, the second amd64.
  ImageIndex top{std::string(media::kOciIndex),
                 {entry(kC, std::nullopt, media::kOciIndex), entry(kB, std::nullopt, media::kOciIndex)}};
  std::vector<std::string> read;
  IndexLoader load = [&](const Descriptor& d) -> Result<ImageIndex> {
    read.push_back(d.digest.str());
    if (d.digest == inner_a)
      return ImageIndex{std::string(media::kOciIndex),
                        {entry(kD, Platform{"linux", "arm", "v7"}, media::kOciManifest)}};
    if (d.digest == inner_b)
      return ImageIndex{std::string(media::kOciIndex),
                        {entry(kA, Platform{"linux", "amd64", ""}, media::kOciManifest)}};
    return Error::Of(Code::kNotFound, "no such index");
  };
  Result<Descriptor> amd64 = SelectPlatformNested(top, Platform{"linux", "amd64", ""}, load);
  ASSERT_TRUE(amd64.ok()) << amd64.error().message;
  EXPECT_EQ(amd64->digest.str(), kA);
  EXPECT_EQ(read, (std::vector<std::string>{kC, kB}));
  read.clear();
  EXPECT_EQ(SelectPlatformNested(top, Platform{"linux", "arm", "v7"}, load)->digest.str(), kD);
  EXPECT_EQ(read, std::vector<std::string>{kC});  // found in the first: the second is not read
  EXPECT_EQ(SelectPlatformNested(top, Platform{"linux", "s390x", ""}, load).error().message,
            "image index has no manifest for linux/s390x (it has: none)");

  // An index that lists itself ends at the depth bound; one listing many indexes at the count bound.
  ImageIndex self{std::string(media::kOciIndex), {entry(kC, std::nullopt, media::kOciIndex)}};
  IndexLoader again = [&](const Descriptor&) -> Result<ImageIndex> { return self; };
  EXPECT_EQ(SelectPlatformNested(self, Platform{"linux", "amd64", ""}, again).error().message,
            "image index: indexes nested more than 4 deep");
  ImageIndex wide{std::string(media::kOciIndex), {}};
  for (int i = 0; i < 17; ++i) wide.manifests.push_back(entry(kC, std::nullopt, media::kOciIndex));
  IndexLoader empty = [](const Descriptor&) -> Result<ImageIndex> {
    return ImageIndex{std::string(media::kOciIndex), {}};
  };
  EXPECT_EQ(SelectPlatformNested(wide, Platform{"linux", "amd64", ""}, empty).error().message,
            "image index: more than 16 nested indexes to read");
}

TEST(ParseIndex, RefusesAManifestAndAnEntryWithoutPlatformFields) {
  EXPECT_EQ(ParseIndex(kDockerManifest).error().message, "index.mediaType: is an image manifest, not an index");
  EXPECT_EQ(ParseIndex(R"({"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json",
"digest":")" + kA + R"(","size":1,"platform":{"os":"linux"}}]})")
                .error()
                .message,
            "index.manifests[0].platform.architecture: is missing");
}

// As Docker builds it (shortened): fields isb does not use are passed over.
const std::string kConfig = R"({"architecture":"amd64","config":{"Env":["PATH=/usr/local/bin:/usr/bin","LANG=C.UTF-8"],
"Entrypoint":null,"Cmd":["python3"],"WorkingDir":"/app","User":"1000:1000","Labels":{"x":"y"},"ExposedPorts":{"80/tcp":{}}},
"created":"2024-06-01T00:00:00Z","history":[{"created_by":"ADD rootfs"}],"os":"linux",
"rootfs":{"type":"layers","diff_ids":[")" +
                            kA + R"(",")" + kB + R"("]}})";

TEST(ParseImageConfig, ReadsWhatASandboxUses) {
  Result<ImageConfig> c = ParseImageConfig(kConfig);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->os, "linux");
  EXPECT_EQ(c->architecture, "amd64");
  EXPECT_EQ(c->env, (std::vector<std::string>{"PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8"}));
  EXPECT_TRUE(c->entrypoint.empty());
  EXPECT_EQ(c->cmd, (std::vector<std::string>{"python3"}));
  EXPECT_EQ(c->working_dir, "/app");
  EXPECT_EQ(c->user, "1000:1000");
  ASSERT_EQ(c->diff_ids.size(), 2u);
  EXPECT_EQ(c->diff_ids[1].str(), kB);
  ImageManifest two_layers = *ParseManifest(kDockerManifest);
  EXPECT_EQ(CheckConfigMatches(two_layers, *c).error().message,
            "image config lists 2 diff_ids for a manifest of 1 layers");
}

TEST(ParseImageConfig, RefusesWrongTypesNamingTheField) {
  auto refusal = [](const std::string& bytes) { return ParseImageConfig(bytes).error().message; };
  EXPECT_EQ(
      refusal(
          R"({"os":"linux","architecture":"amd64","config":{"Env":"A=1"},"rootfs":{"type":"layers","diff_ids":[]}})"),
      "image config.config.Env: must be an array of strings");
  EXPECT_EQ(refusal(R"({"os":"linux","architecture":"amd64","rootfs":{"type":"layers","diff_ids":["sha256:zz"]}})"),
            "image config.rootfs.diff_ids[0]: digest 'sha256:zz' must have 64 hex digits after 'sha256:'");
  EXPECT_EQ(refusal(R"({"os":"linux","architecture":"amd64","rootfs":{"type":"squash"}})"),
            "image config.rootfs.type: must be \"layers\"");
  EXPECT_EQ(refusal(R"({"architecture":"amd64","rootfs":{"type":"layers"}})"), "image config.os: is missing");
}

TEST(ManifestAccept, NamesAllFourTypes) {
  EXPECT_EQ(ManifestAccept(),
            "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, "
            "application/vnd.docker.distribution.manifest.v2+json, "
            "application/vnd.docker.distribution.manifest.list.v2+json");
}

#if defined(__x86_64__)
TEST(HostPlatform, IsLinuxAmd64OnAnX86Machine) { EXPECT_EQ(HostPlatform().str(), "linux/amd64"); }
#elif defined(__aarch64__)
TEST(HostPlatform, IsLinuxArm64V8OnAnArm64Machine) { EXPECT_EQ(HostPlatform().str(), "linux/arm64/v8"); }
#endif

}  // namespace
}  // namespace isb::image
