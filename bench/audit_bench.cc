// Audit log throughput: appends per second from 1 and 8 threads, and rows verified per second, on a fresh
// database in a temporary directory (WAL, synchronous=NORMAL, as the daemon opens it).
//   audit_bench [appends per run, default 20000]
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "audit/log.h"
#include "store/db.h"
#include "store/migrations.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

int Run(const std::string& dir, int threads, int total) {
  std::string path = dir + "/bench-" + std::to_string(threads) + ".db";
  auto db = isb::store::Db::Open(path, isb::store::Migrations());
  if (!db.ok()) return std::fprintf(stderr, "%s\n", db.error().message.c_str()), 1;
  auto log = isb::audit::AuditLog::Open(**db);
  if (!log.ok()) return std::fprintf(stderr, "%s\n", log.error().message.c_str()), 1;
  isb::audit::Entry e;
  e.org = "acme";
  e.actor = "alice@example.com";
  e.actor_kind = "user";
  e.surface = "mcp";
  e.action = "sandbox_exec";
  e.target = "sb-0123456789abcdef";
  e.details = {{"argv", {"python3", "-c", "print(1)"}}, {"env", {{"HOME", "/root"}}}, {"timeout", 60}};
  e.ip = "127.0.0.1";
  e.user_agent = "node/20 mcp-sdk";
  e.request_id = "0123456789abcdef0123456789abcdef";
  std::atomic<int> failures{0};
  auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int i = 0; i < total / threads; ++i)
        if (!(*log)->Append(e).ok()) ++failures;
    });
  for (auto& th : pool) th.join();
  double append_s = Seconds(start);
  start = Clock::now();
  auto v = (*log)->Verify();
  double verify_s = Seconds(start);
  if (failures > 0 || !v.ok() || !v->ok) return std::fprintf(stderr, "append or verify failed\n"), 1;
  std::printf("%d thread(s): %lld appends in %.2f s = %.0f appends/s (%.1f us each); verify %lld rows: %.0f rows/s\n",
              threads, static_cast<long long>(v->rows), append_s, v->rows / append_s, 1e6 * append_s / v->rows,
              static_cast<long long>(v->rows), v->rows / verify_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int total = argc > 1 ? std::atoi(argv[1]) : 20000;
  char tmpl[] = "/tmp/isb-audit-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  int rc = Run(tmpl, 1, total);
  if (rc == 0) rc = Run(tmpl, 8, total);
  std::filesystem::remove_all(tmpl);
  return rc;
}
