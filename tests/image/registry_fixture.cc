// The test registry's set-up: a CA and a leaf for 127.0.0.1 (openssl), an htpasswd file, a config, the process.
#include "image/registry_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/fd.h"
#include "base/file.h"
#include "base/program.h"

extern char** environ;

namespace isb::image::testing {
namespace {

Status Run(const std::vector<std::string>& argv, std::string* out = nullptr) {
  ISB_ASSIGN_OR_RETURN(ProgramExit exit, RunProgram(argv, {}, out != nullptr ? 1 << 16 : 0));
  if (!exit.ok()) return Error::Msg(argv[0] + " " + (argv.size() > 1 ? argv[1] : "") + " failed: " + exit.stderr_text);
  if (out != nullptr) *out = exit.stdout_text;
  return {};
}

bool OnPath(const std::string& name) {
  for (const char* dir : {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    if (access((std::string(dir) + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

Result<uint16_t> FreePort() {
  Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return Error::Sys("free port");
  return ntohs(a.sin_port);
}

bool Answers(uint16_t port) {
  Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
}

// An EC CA and a leaf for 127.0.0.1 signed by it, in DIR/pki; the CA alone in DIR/certs (skopeo's --cert-dir takes
// every *.key there for a client key).
Status MakeCertificates(const std::string& dir) {
  std::string c = dir + "/pki";
  ISB_TRY(MakeDirs(c, 0700));
  ISB_TRY(MakeDirs(dir + "/certs", 0700));
  ISB_TRY(Run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
               "-keyout", c + "/ca.key", "-out", c + "/ca.crt", "-days", "2", "-subj", "/CN=isb test registry CA"}));
  ISB_TRY(Run({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
               c + "/leaf.key", "-out", c + "/leaf.csr", "-subj", "/CN=127.0.0.1"}));
  ISB_TRY(WriteFile(c + "/leaf.ext", "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"));
  ISB_TRY(Run({"openssl", "x509", "-req", "-in", c + "/leaf.csr", "-CA", c + "/ca.crt", "-CAkey", c + "/ca.key",
               "-CAcreateserial", "-out", c + "/leaf.crt", "-days", "2", "-extfile", c + "/leaf.ext"}));
  ISB_ASSIGN_OR_RETURN(std::string ca, ReadFile(c + "/ca.crt"));
  return WriteFile(dir + "/certs/ca.crt", ca);
}

}  // namespace

std::string MissingTool() {
  for (const char* tool : {"docker-registry", "umoci", "skopeo", "htpasswd", "openssl", "curl", "jq"}) {
    if (!OnPath(tool)) return tool;
  }
  if (access("/bin/busybox", X_OK) != 0) return "/bin/busybox";
  return "";
}

Result<TempDir> TempDir::Make(const std::string& prefix) {
  std::string path = std::filesystem::temp_directory_path().string() + "/" + prefix + "XXXXXX";
  if (mkdtemp(path.data()) == nullptr) return Error::Sys("mkdtemp");
  return TempDir(path);
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Result<std::unique_ptr<TestImages>> TestImages::Build() {
  ISB_ASSIGN_OR_RETURN(TempDir dir, TempDir::Make("isb-test-images-"));
  ISB_TRY(Run({ISB_MAKE_TEST_IMAGE, "build", dir.path()}));
  return std::unique_ptr<TestImages>(new TestImages(std::move(dir)));
}

Result<std::unique_ptr<TestRegistry>> TestRegistry::Start(bool basic_auth) {
  ISB_ASSIGN_OR_RETURN(TempDir dir, TempDir::Make("isb-test-registry-"));
  std::unique_ptr<TestRegistry> r(new TestRegistry(std::move(dir), basic_auth));
  ISB_TRY(MakeCertificates(r->dir()));
  if (basic_auth) {
    std::string htpasswd;
    ISB_TRY(Run({"htpasswd", "-Bbn", kTestUser, kTestPassword}, &htpasswd));
    ISB_TRY(WriteFile(r->dir() + "/htpasswd", htpasswd + "\n", 0600));
  }
  // A port taken by someone else between FreePort and the registry's bind: try another.
  Status launched;
  for (int attempt = 0; attempt < 3; ++attempt) {
    launched = r->Launch();
    if (launched.ok()) return r;
  }
  return launched.error();
}

Status TestRegistry::Launch() {
  ISB_ASSIGN_OR_RETURN(port_, FreePort());
  std::string d = dir();
  std::string config = "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: " + d +
                       "/storage\n  delete:\n    enabled: true\nhttp:\n  addr: " + host() +
                       "\n  tls:\n    certificate: " + d + "/pki/leaf.crt\n    key: " + d + "/pki/leaf.key\n";
  if (basic_auth_) config += "auth:\n  htpasswd:\n    realm: isb-test\n    path: " + d + "/htpasswd\n";
  ISB_TRY(WriteFile(d + "/config.yml", config));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  std::string log = d + "/registry.log";
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::string cfg = d + "/config.yml";
  const char* argv[] = {"docker-registry", "serve", cfg.c_str(), nullptr};
  int rc = posix_spawnp(&pid_, "docker-registry", &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error::Sys("spawn docker-registry", rc);

  for (int i = 0; i < 200; ++i) {
    if (Answers(port_)) return {};
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      Result<std::string> text = ReadFile(log);
      return Error::Msg("docker-registry exited: " + (text.ok() ? *text : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Error::Msg("docker-registry did not answer on " + host() + " within 10 s");
}

TestRegistry::~TestRegistry() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

std::string TestRegistry::BlobDataPath(const Digest& digest) const {
  return dir() + "/storage/docker/registry/v2/blobs/" + digest.algorithm + "/" + digest.hex.substr(0, 2) + "/" +
         digest.hex + "/data";
}

Result<std::string> TestRegistry::Push(const TestImages& images, const std::string& tag, const std::string& repo_tag,
                                       PushFormat format) const {
  std::string out;
  std::string creds = basic_auth_ ? std::string(kTestUser) + ":" + kTestPassword : "";
  ISB_TRY(Run({ISB_MAKE_TEST_IMAGE, "push", images.work(), tag, host() + "/" + repo_tag, dir() + "/certs", creds,
               format == PushFormat::kDocker    ? "docker"
               : format == PushFormat::kOciZstd ? "zstd"
                                                : "oci"},
              &out));
  return out;
}

Result<std::string> TestRegistry::PushIndex(const std::string& repo, const std::string& amd64, const std::string& arm64,
                                            const std::string& tag) const {
  std::string out;
  std::string creds = basic_auth_ ? std::string(kTestUser) + ":" + kTestPassword : "";
  ISB_TRY(Run({ISB_MAKE_TEST_IMAGE, "index", host(), repo, amd64, arm64, tag, ca_file(), creds}, &out));
  return out;
}

Result<std::string> TestRegistry::PushOuterIndex(const std::string& repo, const std::string& inner,
                                                 const std::string& tag) const {
  std::string out;
  std::string creds = basic_auth_ ? std::string(kTestUser) + ":" + kTestPassword : "";
  ISB_TRY(Run({ISB_MAKE_TEST_IMAGE, "outer", host(), repo, inner, tag, ca_file(), creds}, &out));
  return out;
}

}  // namespace isb::image::testing
