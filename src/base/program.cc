// RunProgram: posix_spawn, not fork, since the daemon is multi-threaded.
#include "base/program.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fd.h"

extern char** environ;

namespace isb {

bool ProgramExit::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

namespace {

void WriteAll(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string ReadSome(int fd, size_t limit) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < limit) out.append(buf, std::min(static_cast<size_t>(n), limit - out.size()));
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

Result<ProgramExit> RunProgram(const std::vector<std::string>& argv, std::string_view input, size_t stdout_limit) {
  if (argv.empty()) return Error::Msg("no program to run");
  ISB_ASSIGN_OR_RETURN(Pipe in, MakePipe());
  ISB_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  Pipe out_pipe;
  if (stdout_limit > 0) {
    ISB_ASSIGN_OR_RETURN(out_pipe, MakePipe());
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in.read.get(), 0);
  posix_spawn_file_actions_adddup2(&fa, err.write.get(), 2);
  if (stdout_limit > 0)
    posix_spawn_file_actions_adddup2(&fa, out_pipe.write.get(), 1);
  else
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  // The daemon blocks its stop signals and ignores SIGPIPE; the program gets the defaults back.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return Error::Sys("start " + argv[0], rc);
  in.read.Reset();
  err.write.Reset();
  out_pipe.write.Reset();
  // Programs run here read their whole input before they report anything: writing first cannot deadlock.
  WriteAll(in.write.get(), input);
  in.write.Reset();
  ProgramExit out;
  if (stdout_limit > 0) out.stdout_text = ReadSome(out_pipe.read.get(), stdout_limit);
  out.stderr_text = ReadSome(err.read.get(), 4096);
  while (::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  return out;
}

}  // namespace isb
