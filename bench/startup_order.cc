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
//
// The C library picks some functions by the CPU it runs on (memmove's AVX-512, AVX2 or SSE2 version, the cache
// sizes of an AMD or an Intel CPU): after the functions run here come the other versions of each, so that another
// machine's choice lies beside them.
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

// The versions of a C library function chosen by the CPU: __memmove_avx512_unaligned_erms and
// __memmove_sse2_unaligned are both "__memmove_". Empty for a name that is not one.
std::string CpuFamily(const std::string& name) {
  static const char* const kVariants[] = {"sse2", "ssse3", "sse4", "avx", "evex", "erms"};
  if (name.rfind("__", 0) != 0) return {};
  for (size_t pos = name.find('_', 2); pos != std::string::npos; pos = name.find('_', pos + 1))
    for (const char* v : kVariants)
      if (name.compare(pos + 1, std::strlen(v), v) == 0) return name.substr(0, pos + 1);
  return {};
}

// The C library's cache-size readers, one per CPU vendor.
bool IsVendorHandler(const std::string& name) {
  return name == "handle_amd" || name == "handle_intel" || name == "handle_zhaoxin";
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
    ::dup2(2, 1);  // the list is this program's output: the command's own goes to stderr
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

  // Each traced task: whether it is stepped (it runs BINARY; before its exec of BINARY it runs freely), and whether
  // its first stop (the SIGSTOP every new tracee starts with) was seen. Tasks that exited or were let go are gone:
  // a clone's event can come after its child has already exec'd another program and been let go.
  struct Task {
    bool stepping = true;
    bool started = false;
  };
  std::map<pid_t, Task> tasks;
  std::unordered_set<pid_t> gone;
  tasks[first] = Task{false, true};
  std::unordered_set<size_t> seen;
  std::vector<size_t> order;
  unsigned long steps = 0;
  int exit_code = 1;
  auto resume = [&](pid_t pid, int sig) {
    ::ptrace(tasks[pid].stepping ? PTRACE_SINGLESTEP : PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(sig));
  };
  resume(first, 0);
  while (!tasks.empty()) {
    const pid_t pid = ::waitpid(-1, &status, __WALL);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      if (pid == first) exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      tasks.erase(pid);
      gone.insert(pid);
      continue;
    }
    if (!WIFSTOPPED(status)) continue;
    // A new task may stop before its parent's clone event is seen: once BINARY runs, every new task is a clone of
    // one that runs it (the first task runs freely only up to its exec).
    Task& task = tasks[pid];
    const int sig = WSTOPSIG(status);
    const int event = status >> 16;
    if (sig == SIGTRAP && event != 0) {
      if (event == PTRACE_EVENT_EXEC) {
        task.stepping = Exe(pid) == binary;
        if (!task.stepping && pid != first) {
          ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);  // another program: not BINARY's code
          tasks.erase(pid);
          gone.insert(pid);
          continue;
        }
      } else if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
        unsigned long child = 0;
        ::ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &child);
        if (gone.count(static_cast<pid_t>(child)) == 0) tasks[static_cast<pid_t>(child)].stepping = task.stepping;
      }
      resume(pid, 0);
      continue;
    }
    if (sig == SIGTRAP) {
      if (task.stepping) {
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
    // A new task's first stop is swallowed; any other signal is the task's own and delivered.
    const bool first_stop = sig == SIGSTOP && !task.started;
    task.started = true;
    resume(pid, first_stop ? 0 : sig);
  }
  // A name defined more than once is a local symbol of several files (a static function, a compiler's clone of
  // one: .isra, .constprop): lld would move every section that holds it, and a file compiled without a section per
  // function would move whole, dragging cold code into the start-up pages. Left out.
  std::map<std::string, int> defined;
  for (const Symbol& s : symbols) ++defined[s.name];
  std::unordered_set<std::string> printed;
  auto print = [&](const std::string& name) {
    if (defined[name] == 1 && printed.insert(name).second) std::printf("%s\n", name.c_str());
  };
  std::unordered_set<std::string> families;
  bool vendor = false;
  for (size_t i : order) {
    print(symbols[i].name);
    if (std::string f = CpuFamily(symbols[i].name); !f.empty()) families.insert(f);
    vendor = vendor || IsVendorHandler(symbols[i].name);
  }
  const size_t traced = printed.size();
  for (const Symbol& s : symbols) {
    const std::string f = CpuFamily(s.name);
    if ((!f.empty() && families.count(f) != 0) || (vendor && IsVendorHandler(s.name))) print(s.name);
  }
  std::fprintf(stderr,
               "startup_order: %lu instructions in %s, %zu functions (%zu listed, %zu other CPUs' versions of them); "
               "the command exited %d\n",
               steps, resolved, order.size(), traced, printed.size() - traced, exit_code);
  return exit_code == 0 ? 0 : 1;
}
