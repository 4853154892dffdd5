// The namespaces runtime: sandboxes as Linux processes in namespaces of their own, cloned by the spawner, limited by
// a cgroup, their execs served by their init over a control socket (runtime.h's first implementation).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/cgroup.h"
#include "engine/runtime.h"
#include "engine/spawner.h"

namespace isb::engine {

class NamespacesRuntime : public Runtime {
 public:
  static constexpr std::string_view kName = "namespaces";

  // `spawner` was started before any thread. A sandbox's control socket is <sandboxes_dir>/<id>/control.sock.
  NamespacesRuntime(Spawner* spawner, CgroupLayout layout, std::string runtime_dir, std::string sandboxes_dir);

  // A handle's record: its init's pid and start time, and its id lease ("pid=4242 start=1234567 lease=3").
  static std::string Record(const HostProcess& p);
  // nullopt: a record this runtime did not write.
  static std::optional<HostProcess> ParseRecord(std::string_view record);

  std::string_view Name() const override { return kName; }
  Status Start(const StartRequest& request, StartedSandbox* out) override;
  bool Running(const RuntimeHandle& handle) const override;
  Status Kill(const RuntimeHandle& handle, const std::function<void()>& on_killed, bool* oom) override;
  Status Release(const std::string& id) override;
  std::vector<std::string> Held() const override;
  void Sweep() override;
  Result<ExecOutcome> Exec(const RuntimeHandle& handle, const ExecSpec& spec, const ExecSink& sink,
                           const ExecInputReady& on_input) override;
  Result<Fd> OpenRoot(const RuntimeHandle& handle) override;
  Result<Fd> OpenNetwork(const RuntimeHandle& handle) override;
  Result<CgroupStats> Usage(const RuntimeHandle& handle) override;
  Status Fit(const RuntimeHandle& handle, const Refit& fit) override;
  HostProcess Process(const RuntimeHandle& handle) const override;

 private:
  std::string ControlPath(const std::string& id) const;

  Spawner* spawner_;
  CgroupLayout layout_;
  std::string runtime_dir_, sandboxes_dir_;
};

}  // namespace isb::engine
