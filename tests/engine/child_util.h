// Runs a function in a forked child and returns its exit code, so tests can change process-wide state safely.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>

namespace isb::testing {

// Returns the child's exit code, or 128+N if it died from signal N.
inline int InChild(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace isb::testing
