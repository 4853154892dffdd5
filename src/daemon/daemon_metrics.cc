// The daemon's metrics read at scrape time.
#include "daemon/daemon_metrics.h"

#include "base/metric_families.h"

namespace isb::daemon {
namespace {

void CollectSandboxes(store::Db& db) {
  auto rows = db.Query("SELECT state, count(*) FROM sandboxes GROUP BY state");
  if (!rows.ok()) return;
  for (const char* state : {"running", "stopped", "creating"}) metrics::Sandboxes().With({state}).Set(0);
  for (const auto& r : *rows)
    metrics::Sandboxes().With({store::AsText(r[0])}).Set(static_cast<double>(store::AsInt(r[1])));
}

void CollectEgress(const EgressService& egress) {
  const egress::ProxyStats& s = egress.proxy_stats();
  metrics::ProxyConnections().With({"accepted"}).SetTotal(static_cast<double>(s.accepted.load()));
  metrics::ProxyConnections().With({"allowed"}).SetTotal(static_cast<double>(s.allowed.load()));
  metrics::ProxyConnections().With({"denied"}).SetTotal(static_cast<double>(s.denied.load()));
  metrics::ProxyConnections().With({"idle_closed"}).SetTotal(static_cast<double>(s.idle_closed.load()));
  metrics::ProxyActive().Get().Set(static_cast<double>(s.active.load()));
  metrics::ProxyBytes().With({"up"}).SetTotal(static_cast<double>(s.bytes_up.load()));
  metrics::ProxyBytes().With({"down"}).SetTotal(static_cast<double>(s.bytes_down.load()));
  metrics::DnsAnswers().With({"answered"}).SetTotal(static_cast<double>(egress.dns_answered()));
  metrics::DnsAnswers().With({"dropped"}).SetTotal(static_cast<double>(egress.dns_dropped()));
}

}  // namespace

std::string RenderDaemonMetrics(store::Db& db, SandboxManager& manager, const EgressService* egress) {
  CollectSandboxes(db);
  metrics::PoolSize().With({"plain"}).Set(static_cast<double>(manager.PoolSize()));
  metrics::PoolSize().With({"net"}).Set(static_cast<double>(manager.NetPoolSize()));
  if (egress != nullptr) CollectEgress(*egress);
  return metrics::Global().Render();
}

}  // namespace isb::daemon
