// Benchmarks the daemon over REST: create + exec `true` + remove (sequential and concurrent), and exec alone in a
// running sandbox against plain fork/exec of /bin/true. Prints medians, p99 and rates. With --cold-url (a daemon
// started with --pool-size 0 --net-pool-size 0), first the creates agents send, side by side: `{}` and a named
// sandbox with an egress list, labels and mem_limit, on the pooled daemon and on the cold one, each sequential and
// at C clients, with the path (result's timing.path) each create took.
//
//   api_bench URL TOKEN [--runs N] [--clients C] [--cold-url URL2 --cold-token TOKEN2]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/client.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

struct Api {
  isb::cli::HttpClient client;
  std::string token;
  json Call(const std::string& tool, const json& input) const {
    isb::cli::HttpRequest req;
    req.method = "POST";
    req.target = "/api/v1/tools/" + tool;
    req.headers = {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
    req.body = input.dump();
    auto r = client.Send(req);
    if (!r.ok() || r->status != 200) {
      std::fprintf(stderr, "api_bench: %s failed: %s\n", tool.c_str(),
                   r.ok() ? r->body.c_str() : r.error().message.c_str());
      std::exit(1);
    }
    return json::parse(r->body)["result"];
  }
};

// One kept-alive HTTP/1.1 connection, as a program's HTTP client keeps one: the daemon's work per call without a
// TCP handshake and teardown each time. Responses are read by their Content-Length (the daemon's tool responses
// carry one).
class KeptAlive {
 public:
  KeptAlive(const isb::cli::Endpoint& ep, std::string token) : token_(std::move(token)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(ep.port);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::inet_pton(AF_INET, ep.host.c_str(), &a.sin_addr) != 1 ||
        ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      std::fprintf(stderr, "api_bench: cannot connect to %s:%u (an IPv4 address is needed)\n", ep.host.c_str(),
                   ep.port);
      std::exit(1);
    }
  }
  ~KeptAlive() { ::close(fd_); }
  json Call(const std::string& tool, const json& input) {
    const std::string body = input.dump();
    const std::string req = "POST /api/v1/tools/" + tool + " HTTP/1.1\r\nHost: isb\r\nAuthorization: Bearer " + token_ +
                            "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                            "\r\n\r\n" + body;
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) Fail(tool, "send");
    std::string in;
    size_t head_end = std::string::npos, length = 0;
    while (head_end == std::string::npos || in.size() < head_end + 4 + length) {
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) Fail(tool, "the connection ended");
      in.append(buf, static_cast<size_t>(n));
      if (head_end != std::string::npos || (head_end = in.find("\r\n\r\n")) == std::string::npos) continue;
      size_t at = in.find("Content-Length: ");
      if (at == std::string::npos || at > head_end) Fail(tool, "a response without Content-Length");
      length = std::strtoul(in.c_str() + at + 16, nullptr, 10);
    }
    if (in.compare(0, 12, "HTTP/1.1 200") != 0) Fail(tool, in.substr(0, head_end));
    return json::parse(in.substr(head_end + 4, length))["result"];
  }

 private:
  [[noreturn]] static void Fail(const std::string& tool, const std::string& why) {
    std::fprintf(stderr, "api_bench: %s failed: %s\n", tool.c_str(), why.c_str());
    std::exit(1);
  }
  int fd_ = -1;
  std::string token_;
};

// create + exec true + remove; returns (create+first exec, whole cycle) in ms.
std::pair<double, double> Cycle(const Api& api) {
  auto t0 = Clock::now();
  std::string id = api.Call("sandbox_create", json::object())["id"];
  json r = api.Call("sandbox_exec", {{"sandbox", id}, {"argv", {"true"}}});
  auto t1 = Clock::now();
  if (r["exit_code"] != 0) std::exit(1);
  api.Call("sandbox_remove", {{"sandbox", id}});
  return {Ms(t1 - t0), Ms(Clock::now() - t0)};
}

// The create a bench row sends: `{}`, or what agents send (a name, an egress list, labels, a memory limit).
json CreateSpec(bool agent) {
  static std::atomic<int> next{0};
  if (!agent) return json::object();
  return {{"name", "bench-" + std::to_string(::getpid()) + "-" + std::to_string(next++)},
          {"egress", {"pypi.org", "github.com"}},
          {"labels", {{"team", "bench"}, {"task", "t-1"}}},
          {"mem_limit", 256 << 20}};
}

// Creates + first exec of `spec` in `clients` threads (1: sequential), `runs` in all after a few warm-up cycles:
// the times, and how many creates took each path.
struct Sample {
  std::vector<double> first;
  std::map<std::string, int> paths;
};

Sample CreateRuns(const Api& api, bool agent, int runs, int clients) {
  Sample out;
  std::mutex mu;
  auto one = [&](bool record) {
    auto t0 = Clock::now();
    json created = api.Call("sandbox_create", CreateSpec(agent));
    const std::string id = created["id"];
    json r = api.Call("sandbox_exec", {{"sandbox", id}, {"argv", {"true"}}});
    const double ms = Ms(Clock::now() - t0);
    if (r["exit_code"] != 0) std::exit(1);
    api.Call("sandbox_remove", {{"sandbox", id}});
    if (!record) return;
    std::lock_guard lock(mu);
    out.first.push_back(ms);
    ++out.paths[created.contains("timing") ? created["timing"].value("path", "?") : "?"];
  };
  for (int i = 0; i < 5; ++i) one(false);
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c)
    ts.emplace_back([&] {
      for (int i = 0; i < runs / clients; ++i) one(true);
    });
  for (auto& t : ts) t.join();
  return out;
}

std::string Paths(const std::map<std::string, int>& paths) {
  std::string s;
  for (const auto& [path, n] : paths) s += (s.empty() ? "" : ", ") + path + " " + std::to_string(n);
  return s;
}

// The side-by-side table of create + first exec.
void CreateTable(const Api& pooled, const Api& cold, int runs, int clients) {
  std::printf("create + first exec, ms (p50 / p99; path: how many creates took each)\n");
  std::printf("  %-52s %-19s %-19s %s\n", "", "sequential", (std::to_string(clients) + " clients").c_str(),
              "paths (seq | conc)");
  struct Row {
    const char* name;
    const Api* api;
    bool agent;
  };
  for (const Row& row :
       {Row{"{}", &pooled, false}, Row{"named + egress list + labels + mem_limit", &pooled, true},
        Row{"{}, pool off", &cold, false}, Row{"named + egress list + labels + mem_limit, pool off", &cold, true}}) {
    Sample seq = CreateRuns(*row.api, row.agent, runs, 1);
    Sample conc = CreateRuns(*row.api, row.agent, runs, clients);
    std::printf("  %-52s %7.2f / %7.2f   %7.2f / %7.2f   %s | %s\n", row.name, Pct(seq.first, 0.5),
                Pct(seq.first, 0.99), Pct(conc.first, 0.5), Pct(conc.first, 0.99), Paths(seq.paths).c_str(),
                Paths(conc.paths).c_str());
    std::fflush(stdout);
  }
}

void Report(const char* name, const std::vector<double>& v) {
  std::printf("%-44s p50 %8.2f ms   p99 %8.2f ms   (n=%zu)\n", name, Pct(v, 0.5), Pct(v, 0.99), v.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: api_bench URL TOKEN [--runs N] [--clients C]\n");
    return 2;
  }
  int runs = 200, clients = 8;
  std::string cold_url, cold_token;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--clients") clients = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--cold-url") cold_url = argv[i + 1];
    if (std::string(argv[i]) == "--cold-token") cold_token = argv[i + 1];
  }
  auto ep = isb::cli::ParseUrl(argv[1]);
  if (!ep.ok()) return 2;
  Api api{isb::cli::HttpClient(*ep), argv[2]};
  if (!cold_url.empty()) {
    auto cold_ep = isb::cli::ParseUrl(cold_url);
    if (!cold_ep.ok()) return 2;
    CreateTable(api, Api{isb::cli::HttpClient(*cold_ep), cold_token}, runs, clients);
  }

  for (int i = 0; i < 10; ++i) Cycle(api);  // warm-up
  std::vector<double> first, cycle;
  for (int i = 0; i < runs; ++i) {
    auto [f, c] = Cycle(api);
    first.push_back(f);
    cycle.push_back(c);
  }
  Report("create + first exec (sequential)", first);
  Report("create + exec + remove (sequential)", cycle);
  std::printf("%-44s %8.1f sandboxes/s\n", "sequential rate",
              1000.0 * runs / std::accumulate(cycle.begin(), cycle.end(), 0.0));

  std::vector<double> cfirst, ccycle;
  std::mutex mu;
  auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c)
    ts.emplace_back([&] {
      for (int i = 0; i < runs / clients; ++i) {
        auto [f, cy] = Cycle(api);
        std::lock_guard lock(mu);
        cfirst.push_back(f);
        ccycle.push_back(cy);
      }
    });
  for (auto& t : ts) t.join();
  double wall = Ms(Clock::now() - start);
  std::string label = "create + first exec (" + std::to_string(clients) + " clients)";
  Report(label.c_str(), cfirst);
  label = "create + exec + remove (" + std::to_string(clients) + " clients)";
  Report(label.c_str(), ccycle);
  std::printf("%-44s %8.1f sandboxes/s\n", "concurrent rate", 1000.0 * static_cast<double>(ccycle.size()) / wall);

  // exec alone in a running sandbox, over a new connection per call and over one kept-alive connection, against
  // fork/exec of /bin/true on the host, in turns.
  std::string id = api.Call("sandbox_create", json::object())["id"];
  KeptAlive kept(*ep, argv[2]);
  std::vector<double> exec, exec_kept, fork_exec;
  for (int i = 0; i < runs + 10; ++i) {
    auto t0 = Clock::now();
    api.Call("sandbox_exec", {{"sandbox", id}, {"argv", {"true"}}});
    if (i >= 10) exec.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    if (kept.Call("sandbox_exec", {{"sandbox", id}, {"argv", {"true"}}})["exit_code"] != 0) std::exit(1);
    if (i >= 10) exec_kept.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    pid_t pid;
    char* args[] = {const_cast<char*>("/bin/true"), nullptr};
    posix_spawn(&pid, "/bin/true", nullptr, nullptr, args, environ);
    waitpid(pid, nullptr, 0);
    if (i >= 10) fork_exec.push_back(Ms(Clock::now() - t0));
  }
  api.Call("sandbox_remove", {{"sandbox", id}});
  Report("exec of true in a running sandbox (REST)", exec);
  Report("the same, one kept-alive connection", exec_kept);
  Report("fork/exec of /bin/true on the host", fork_exec);
  std::printf("%-44s %8.2fx\n", "exec / fork-exec (p50)", Pct(exec, 0.5) / Pct(fork_exec, 0.5));
  std::printf("%-44s %8.2fx\n", "kept-alive exec / fork-exec (p50)", Pct(exec_kept, 0.5) / Pct(fork_exec, 0.5));
  return 0;
}
