#include "image/reference.h"

#include <gtest/gtest.h>

namespace isb::image {
namespace {

const std::string kHex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

ImageReference Parse(std::string_view text) {
  Result<ImageReference> r = ParseImageReference(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error().message;
  return r.ok() ? *r : ImageReference{};
}

std::string Refusal(std::string_view text) {
  Result<ImageReference> r = ParseImageReference(text);
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  return r.error().message;
}

TEST(ImageReference, AShortNameIsDockerHubsLibrary) {
  ImageReference r = Parse("python:3.12");
  EXPECT_EQ(r.registry, "docker.io");
  EXPECT_EQ(r.repository, "library/python");
  EXPECT_EQ(r.tag, "3.12");
  EXPECT_EQ(r.digest, "");
  EXPECT_EQ(r.str(), "docker.io/library/python:3.12");
  EXPECT_EQ(r.ApiHost(), "registry-1.docker.io");
}

TEST(ImageReference, NoTagMeansLatest) {
  EXPECT_EQ(Parse("alpine").str(), "docker.io/library/alpine:latest");
  EXPECT_EQ(Parse("team/app").str(), "docker.io/team/app:latest");
}

TEST(ImageReference, TheFullDockerHubFormsNormalizeToTheSameReference) {
  EXPECT_EQ(Parse("docker.io/library/python:3.12"), Parse("python:3.12"));
  EXPECT_EQ(Parse("index.docker.io/library/python:3.12"), Parse("python:3.12"));
  EXPECT_EQ(Parse("docker.io/python:3.12").repository, "library/python");
}

TEST(ImageReference, ARegistryWithAPortAndADigest) {
  ImageReference r = Parse("localhost:5000/a/b@sha256:" + kHex);
  EXPECT_EQ(r.registry, "localhost:5000");
  EXPECT_EQ(r.repository, "a/b");
  EXPECT_EQ(r.tag, "");
  EXPECT_EQ(r.digest, "sha256:" + kHex);
  EXPECT_EQ(r.ManifestReference(), "sha256:" + kHex);
  EXPECT_EQ(r.ApiHost(), "localhost:5000");
  EXPECT_EQ(r.str(), "localhost:5000/a/b@sha256:" + kHex);
}

TEST(ImageReference, AnAddressRegistryWithTagAndDigestKeepsBoth) {
  ImageReference r = Parse("127.0.0.1:5000/team/app:1.0@sha256:" + kHex);
  EXPECT_EQ(r.registry, "127.0.0.1:5000");
  EXPECT_EQ(r.repository, "team/app");
  EXPECT_EQ(r.tag, "1.0");
  EXPECT_EQ(r.ManifestReference(), "sha256:" + kHex);
  EXPECT_EQ(Parse("ghcr.io/org/tool:v1").registry, "ghcr.io");
  EXPECT_EQ(Parse("[fd00::1]:5000/app").registry, "[fd00::1]:5000");
}

TEST(ImageReference, SeparatorsInsideComponentsAreAllowed) {
  EXPECT_EQ(Parse("my.registry/a__b/c-d/e.f_g---h").repository, "a__b/c-d/e.f_g---h");
}

TEST(ImageReference, InvalidReferencesAreRefusedWithExactMessages) {
  EXPECT_EQ(Refusal(""), "image reference is empty");
  EXPECT_EQ(Refusal("Python:3"),
            "image reference 'Python:3' has an invalid repository component 'Python': use "
            "lower-case letters and digits, separated by '.', '_', '__' or dashes");
  EXPECT_EQ(Refusal("a//b"),
            "image reference 'a//b' has an invalid repository component '': use lower-case letters "
            "and digits, separated by '.', '_', '__' or dashes");
  EXPECT_EQ(Refusal("a/-b"),
            "image reference 'a/-b' has an invalid repository component '-b': use lower-case "
            "letters and digits, separated by '.', '_', '__' or dashes");
  EXPECT_EQ(Refusal("a___b"),
            "image reference 'a___b' has an invalid repository component 'a___b': use lower-case "
            "letters and digits, separated by '.', '_', '__' or dashes");
  EXPECT_EQ(Refusal("python:-1"),
            "image reference 'python:-1' has an invalid tag '-1': use up to 128 letters, "
            "digits, '_', '.' and '-', not starting with '.' or '-'");
  EXPECT_EQ(Refusal("python:"),
            "image reference 'python:' has an invalid tag '': use up to 128 letters, digits, "
            "'_', '.' and '-', not starting with '.' or '-'");
  EXPECT_EQ(Refusal("python@sha256:abc"),
            "image reference 'python@sha256:abc' has an invalid digest: digest "
            "'sha256:abc' must have 64 hex digits after 'sha256:'");
  EXPECT_EQ(Refusal("localhost:99999/app"),
            "image reference 'localhost:99999/app' has an invalid registry "
            "'localhost:99999'");
  EXPECT_EQ(Refusal("bad_host.io/app"), "image reference 'bad_host.io/app' has an invalid registry 'bad_host.io'");
  EXPECT_EQ(Refusal("ghcr.io/"), "image reference 'ghcr.io/' has no repository name");
  EXPECT_EQ(Refusal("a b"),
            "image reference 'a b' has an invalid repository component 'a b': use lower-case letters "
            "and digits, separated by '.', '_', '__' or dashes");
  std::string long_name = "r.io/" + std::string(256, 'a');
  EXPECT_EQ(Refusal(long_name),
            "image reference '" + long_name.substr(0, 200) + "...' names a repository longer than 255 characters");
}

TEST(ImageReference, TheNormalizedFormParsesBackToItself) {
  for (const char* text : {"python:3.12", "localhost:5000/a/b", "127.0.0.1:5000/team/app:1.0"}) {
    ImageReference r = Parse(text);
    EXPECT_EQ(Parse(r.str()), r) << text;
  }
}

}  // namespace
}  // namespace isb::image
