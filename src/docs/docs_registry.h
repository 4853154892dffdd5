// A registry with every tool `isb serve` registers (api::RegisterAllTools, as daemon/serve.cc calls it) but over
// throwaway stores and no sandboxes: enough to read each tool's name, description, access and schemas, never to call
// one.
#pragma once

#include <memory>
#include <string>

#include "api/registry.h"
#include "base/result.h"

namespace isb::docs {

class DocsRegistry {
 public:
  // Makes its stores in a temporary directory, which the destructor removes.
  static Result<std::unique_ptr<DocsRegistry>> Open();
  ~DocsRegistry();
  DocsRegistry(const DocsRegistry&) = delete;
  DocsRegistry& operator=(const DocsRegistry&) = delete;

  const api::Registry& registry() const;

 private:
  struct Parts;
  explicit DocsRegistry(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> parts_;
};

}  // namespace isb::docs
