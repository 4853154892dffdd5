// The origins of the egress tests.
#include "e2e/origin_fixture.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace isb::e2e {

int FreeLoopbackPort() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

void OriginTest::TearDown() {
  if (origin_ > 0) {
    ::kill(origin_, SIGKILL);
    ::waitpid(origin_, nullptr, 0);
  }
  if (!origin_dir_.empty()) std::filesystem::remove_all(origin_dir_);
  E2eTest::TearDown();
}

void OriginTest::PrepareOrigin() {
  origin_dir_ = "/tmp/isb-origin-" + RandomHex(6);
  std::filesystem::create_directories(origin_dir_);
  port_ = FreeLoopbackPort();
}

void OriginTest::MakeCertificate(const std::string& name) {
  ProcResult gen = RunProcess({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                               "-nodes", "-days", "1", "-subj", "/CN=" + name, "-addext", "subjectAltName=DNS:" + name,
                               "-keyout", origin_dir_ + "/key.pem", "-out", origin_dir_ + "/cert.pem"});
  EXPECT_EQ(gen.exit_status, 0) << gen.Describe();
}

bool OriginTest::RunOrigin(const std::vector<std::string>& argv, const std::function<bool()>& up) {
  // Built before fork: the child of a threaded process must not allocate.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  origin_ = ::fork();
  if (origin_ == 0) {
    int devnull = ::open("/dev/null", O_RDWR);
    for (int fd : {0, 1, 2}) ::dup2(devnull, fd);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  for (int i = 0; i < 100; ++i) {
    if (up()) return true;
    ::usleep(50000);
  }
  return up();
}

void OriginTest::RestartPinnedTo(const std::vector<std::string>& names, std::vector<std::string> args) {
  ASSERT_EQ(StopDaemon(), 0);
  for (const auto& n : names) args.insert(args.end(), {"--egress-pin", n + "=127.0.0.1:" + std::to_string(port_)});
  StartDaemon(args);
}

std::string OriginTest::Curl(const std::string& id, std::vector<std::string> args) {
  args.insert(args.begin(), {"curl", "-s", "-m", "5"});
  return Exec(id, args)["stdout"];
}

}  // namespace isb::e2e
