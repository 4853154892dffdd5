// Image references as people write them ("python:3.12", "127.0.0.1:5000/team/app@sha256:…"), normalized the way
// Docker does: no registry means docker.io, and a one-component name there lives under library/.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace isb::image {

inline constexpr const char* kDockerHub = "docker.io";
// Where docker.io's distribution API answers.
inline constexpr const char* kDockerHubApi = "registry-1.docker.io";
inline constexpr size_t kMaxRepositoryLength = 255;

struct ImageReference {
  std::string registry;    // "docker.io", "ghcr.io", "127.0.0.1:5000", "localhost:5000" (HOST[:PORT])
  std::string repository;  // "library/python", "team/app"
  std::string tag;         // "3.12"; "latest" when neither a tag nor a digest was given
  std::string digest;      // "sha256:<hex>", or empty
  // The normalized full form: "docker.io/library/python:3.12", "127.0.0.1:5000/team/app@sha256:…".
  std::string str() const;
  // What the manifest is fetched by: the digest when there is one, else the tag.
  const std::string& ManifestReference() const { return digest.empty() ? tag : digest; }
  // The host:port the registry's API is reached at (docker.io's is registry-1.docker.io).
  std::string ApiHost() const;
  bool operator==(const ImageReference&) const = default;
};

// The host:port a registry's API is reached at: docker.io's is registry-1.docker.io, every other its own.
std::string RegistryApiHost(std::string_view registry);

// Errors (kInvalidArgument) quote the reference and name the part that is wrong.
Result<ImageReference> ParseImageReference(std::string_view text);

}  // namespace isb::image
