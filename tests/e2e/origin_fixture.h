// Origins for the egress tests: a server on the host's loopback (python, openssl), on a free port, that the daemon
// reaches only because the test pins names to it; removed with its files after each test.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "e2e/daemon_fixture.h"

namespace isb::e2e {

// A TCP port on loopback that nothing listens on right now (the kernel's pick, released for the origin to take).
int FreeLoopbackPort();

class OriginTest : public E2eTest {
 protected:
  void TearDown() override;

  // The origin's files go in a fresh directory; it will listen on a free loopback port.
  void PrepareOrigin();
  // A self-signed certificate for `name` (its own CA) in the origin's directory: cert.pem and key.pem.
  void MakeCertificate(const std::string& name);
  // Runs `argv` as the origin, its output discarded, until `up` says it answers (at most 5 s).
  bool RunOrigin(const std::vector<std::string>& argv, const std::function<bool()>& up);
  // The daemon again, with each of `names` pinned to the origin (and `args` besides).
  void RestartPinnedTo(const std::vector<std::string>& names, std::vector<std::string> args = {});
  // curl -s -m 5 ARGS inside the sandbox: its stdout.
  std::string Curl(const std::string& id, std::vector<std::string> args);

  pid_t origin_ = 0;
  int port_ = 0;
  std::string origin_dir_;
};

}  // namespace isb::e2e
