// startup_order: the functions of a binary that a command runs, in the order it first runs them, as one symbol name
// a line: the symbol ordering file the isb link lays its start-up code out by (src/cli/startup.order).
//
// Usage: startup_order BINARY -- COMMAND [ARGS...]
//
// COMMAND is run under ptrace and single-stepped from its exec of BINARY on, through every process it clones or
// forks, until each exits or execs another program. Every instruction address inside BINARY's text is mapped to
// the function symbol that holds it (BINARY's own symbol table, read with nm); a function is printed when first
// run. Slow by nature (a system call or two per instruction): it is a build tool, not a benchmark. Needs root or
// CAP_SYS_PTRACE for a COMMAND that changes ids, as `isb run` does.
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

struct Symbol {
  unsigned long addr;
  std::string name;
};

// BINARY's function symbols, sorted by address (nm -n): T/t/W/w (code), i (an ifunc's resolver).
std::vector<Symbol> ReadSymbols(const std::string& binary) {
  std::vector<Symbol> out;
  const std::string cmd = "nm -n --defined-only '" + binary + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> nm(::popen(cmd.c_str(), "r"), ::pclose);
  if (!nm) return out;
  char line[8192];
  while (std::fgets(line, sizeof line, nm.get()) != nullptr) {
    char type = 0;
    unsigned long addr = 0;
    char name[8000];
    if (std::sscanf(line, "%lx %c %7999s", &addr, &type, name) != 3) continue;
    if (std::strchr("TtWwi", type) == nullptr) continue;
    out.push_back({addr, name});
  }
  return out;
}

std::string Exe(pid_t pid) {
  char buf[4096];
  const std::string link = "/proc/" + std::to_string(pid) + "/exe";
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr, "usage: startup_order BINARY -- COMMAND [ARGS...]\n");
    return 2;
  }
  char resolved[4096];
  if (::realpath(argv[1], resolved) == nullptr) {
    std::fprintf(stderr, "startup_order: %s: %s\n", argv[1], std::strerror(errno));
    return 2;
  }
  const std::string binary = resolved;
  const std::vector<Symbol> symbols = ReadSymbols(binary);
  if (symbols.empty()) {
    std::fprintf(stderr, "startup_order: no function symbols in %s (nm failed, or a stripped binary)\n", resolved);
    return 1;
  }
  const unsigned long text_end = symbols.back().addr + 4096;

  const pid_t first = ::fork();
  if (first < 0) return 1;
  if (first == 0) {
    ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    ::raise(SIGSTOP);
    ::execvp(argv[3], argv + 3);
    std::fprintf(stderr, "startup_order: exec %s: %s\n", argv[3], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(first, &status, 0) != first || !WIFSTOPPED(status)) return 1;
  const long options =
      PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
  ::ptrace(PTRACE_SETOPTIONS, first, nullptr, reinterpret_cast<void*>(options));

  // Each traced task: stepping (it runs BINARY) or running freely (before its exec of BINARY).
  std::map<pid_t, bool> stepping;
  stepping[first] = false;
  std::unordered_set<size_t> seen;
  std::vector<size_t> order;
  unsigned long steps = 0;
  int exit_code = 1;
  auto resume = [&](pid_t pid, int sig) {
    ::ptrace(stepping[pid] ? PTRACE_SINGLESTEP : PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(sig));
  };
  resume(first, 0);
  while (!stepping.empty()) {
    const pid_t pid = ::waitpid(-1, &status, __WALL);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      if (pid == first) exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      stepping.erase(pid);
      continue;
    }
    if (!WIFSTOPPED(status)) continue;
    // A new task seen before its parent's event: a clone of a task that runs BINARY (nothing else is traced then).
    if (stepping.find(pid) == stepping.end()) stepping[pid] = true;
    const int sig = WSTOPSIG(status);
    const int event = status >> 16;
    if (sig == SIGTRAP && event != 0) {
      if (event == PTRACE_EVENT_EXEC) {
        stepping[pid] = Exe(pid) == binary;
        if (!stepping[pid] && pid != first) {
          ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);  // another program: not BINARY's code
          stepping.erase(pid);
          continue;
        }
      } else if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
        unsigned long child = 0;
        ::ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &child);
        stepping[static_cast<pid_t>(child)] = stepping[pid];
      }
      resume(pid, 0);
      continue;
    }
    if (sig == SIGTRAP) {
      if (stepping[pid]) {
        user_regs_struct regs{};
        if (::ptrace(PTRACE_GETREGS, pid, nullptr, &regs) == 0 && regs.rip < text_end) {
          ++steps;
          auto it = std::upper_bound(symbols.begin(), symbols.end(), regs.rip,
                                     [](unsigned long a, const Symbol& s) { return a < s.addr; });
          if (it != symbols.begin()) {
            const size_t i = static_cast<size_t>(it - symbols.begin()) - 1;
            if (seen.insert(i).second) order.push_back(i);
          }
        }
      }
      resume(pid, 0);
      continue;
    }
    // A new task's first stop, or a signal for the task: SIGSTOP of a fresh clone is swallowed, others delivered.
    resume(pid, sig == SIGSTOP ? 0 : sig);
  }
  // A name defined more than once is a local symbol of several files (a static function, a compiler's clone of
  // one: .isra, .constprop): lld would move every section that holds it, and a file compiled without a section per
  // function would move whole, dragging cold code into the start-up pages. Left out.
  std::map<std::string, int> defined;
  for (const Symbol& s : symbols) ++defined[s.name];
  for (size_t i : order)
    if (defined[symbols[i].name] == 1) std::printf("%s\n", symbols[i].name.c_str());
  std::fprintf(stderr, "startup_order: %lu instructions in %s, %zu functions; the command exited %d\n", steps, resolved,
               order.size(), exit_code);
  return exit_code == 0 ? 0 : 1;
}
