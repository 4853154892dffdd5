// spawn_timer --runs N [--warmup W] [--samples FILE] -- CMD ARGS...
//
// Runs CMD W times untimed (default 0), then N times timed, one after another; stdin, stdout and stderr are
// /dev/null. Each timed run is the CLOCK_MONOTONIC wall time from just before posix_spawn to just after waitpid
// reaps it. Any run (warm-up included) that cannot start or does not exit 0 aborts with a message and exit status 1.
// On success it prints one line:
//   median_ms=... p10_ms=... p90_ms=... min_ms=... max_ms=... mean_ms=... runs=N
// Percentiles interpolate linearly between the two nearest ranks (p at position p*(N-1) of the sorted times).
// --samples FILE also appends every timed run to FILE, in ms and in run order, one per line (written after the last
// run), so runs from several invocations can be pooled.
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr int kUsage = 2;
constexpr int kFailed = 1;
constexpr char kUsageLine[] = "usage: spawn_timer --runs N [--warmup W] [--samples FILE] -- CMD [ARGS...]\n";

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr, "spawn_timer: %s\n%s", why.c_str(), kUsageLine);
  std::exit(kUsage);
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "spawn_timer: FAILED: %s\n", message.c_str());
  std::exit(kFailed);
}

long ParseCount(const std::string& flag, const char* value, long min) {
  if (value == nullptr) Usage(flag + " needs a value");
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < min || v > 10000000)
    Usage("invalid " + flag + " '" + value + "': expected a whole number from " + std::to_string(min));
  return v;
}

// The command's path as execve wants it: searched in PATH once here, so the search is not part of every timing.
std::string Resolve(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return cmd;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + cmd;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  Die("command not found in PATH: " + cmd);
}

double NowMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

class Spawner {
 public:
  Spawner(std::string path, std::vector<char*> argv) : path_(std::move(path)), argv_(std::move(argv)) {
    int rc = ::posix_spawn_file_actions_init(&actions_);
    if (rc == 0) rc = ::posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0) rc = ::posix_spawn_file_actions_addopen(&actions_, 1, "/dev/null", O_WRONLY, 0);
    if (rc == 0) rc = ::posix_spawn_file_actions_addopen(&actions_, 2, "/dev/null", O_WRONLY, 0);
    if (rc != 0) Die(std::string("posix_spawn_file_actions: ") + std::strerror(rc));
  }
  ~Spawner() { ::posix_spawn_file_actions_destroy(&actions_); }
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  // One run, spawned to reaped, in ms; dies unless the command exits 0.
  double RunOnce(const char* phase, long index) {
    pid_t pid = 0;
    const double start = NowMs();
    int rc = ::posix_spawn(&pid, path_.c_str(), &actions_, nullptr, argv_.data(), environ);
    if (rc != 0) Die(Which(phase, index) + ": cannot start " + path_ + ": " + std::strerror(rc));
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) Die(Which(phase, index) + ": waitpid: " + std::strerror(errno));
    }
    const double end = NowMs();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      Die(Which(phase, index) + ": " + path_ + " " + Describe(status));
    return end - start;
  }

 private:
  static std::string Which(const char* phase, long index) {
    return std::string(phase) + " run " + std::to_string(index + 1);
  }

  std::string path_;
  std::vector<char*> argv_;
  posix_spawn_file_actions_t actions_{};
};

// Linear interpolation between closest ranks; `sorted` is non-empty and ascending.
double Percentile(const std::vector<double>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

int main(int argc, char** argv) {
  long runs = -1, warmup = 0;
  const char* samples_path = nullptr;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--runs") {
      runs = ParseCount(a, value, 1);
      ++i;
    } else if (a == "--warmup") {
      warmup = ParseCount(a, value, 0);
      ++i;
    } else if (a == "--samples") {
      if (value == nullptr || *value == '\0') Usage("--samples needs a file");
      samples_path = value;
      ++i;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsageLine, stdout);
      return 0;
    } else {
      Usage("unknown argument '" + a + "' (the command goes after --)");
    }
  }
  if (runs < 0) Usage("--runs is required");
  if (i >= argc) Usage("no command given after --");

  // Opened before any run, so a bad path fails at once rather than after all of them.
  std::FILE* samples = nullptr;
  if (samples_path != nullptr && (samples = std::fopen(samples_path, "a")) == nullptr)
    Die(std::string("cannot open ") + samples_path + ": " + std::strerror(errno));

  std::vector<char*> cmd_argv(argv + i, argv + argc);
  cmd_argv.push_back(nullptr);
  Spawner spawner(Resolve(argv[i]), std::move(cmd_argv));

  for (long w = 0; w < warmup; ++w) spawner.RunOnce("warm-up", w);
  std::vector<double> times;
  times.reserve(static_cast<size_t>(runs));
  for (long r = 0; r < runs; ++r) times.push_back(spawner.RunOnce("timed", r));

  if (samples != nullptr) {
    for (double t : times) std::fprintf(samples, "%.6f\n", t);
    if (std::fclose(samples) != 0) Die(std::string("cannot write ") + samples_path + ": " + std::strerror(errno));
  }

  double sum = 0;
  for (double t : times) sum += t;
  std::sort(times.begin(), times.end());
  std::printf("median_ms=%.3f p10_ms=%.3f p90_ms=%.3f min_ms=%.3f max_ms=%.3f mean_ms=%.3f runs=%ld\n",
              Percentile(times, 0.5), Percentile(times, 0.1), Percentile(times, 0.9), times.front(), times.back(),
              sum / static_cast<double>(times.size()), runs);
  return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : kFailed;
}
