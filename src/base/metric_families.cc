// isb's metric families: names, help and labels.
#include "base/metric_families.h"

namespace isb::metrics {

GaugeFamily& Sandboxes() {
  static GaugeFamily& f = Global().Gauge("isb_sandboxes", "Sandboxes by state.", {"state"});
  return f;
}

CounterFamily& SandboxCreates() {
  static CounterFamily& f =
      Global().Counter("isb_sandbox_creates_total",
                       "Sandbox creates by outcome (ok or the error code) and path (pool, cold).", {"outcome", "path"});
  return f;
}

HistogramFamily& SandboxCreateSeconds() {
  static HistogramFamily& f = Global().Histogram("isb_sandbox_create_seconds", "Sandbox create latency by outcome.",
                                                 {"outcome"}, LatencyBuckets());
  return f;
}

CounterFamily& SandboxExecs() {
  static CounterFamily& f =
      Global().Counter("isb_sandbox_execs_total", "Execs by outcome (ok or the error code).", {"outcome"});
  return f;
}

HistogramFamily& SandboxExecSeconds() {
  static HistogramFamily& f =
      Global().Histogram("isb_sandbox_exec_seconds", "Exec latency by outcome.", {"outcome"}, LatencyBuckets());
  return f;
}

CounterFamily& ReaperActions() {
  static CounterFamily& f =
      Global().Counter("isb_reaper_actions_total",
                       "What the reaper did: removed an expired or idle sandbox, halted a dead one.", {"action"});
  return f;
}

GaugeFamily& PoolSize() {
  static GaugeFamily& f =
      Global().Gauge("isb_pool_size", "Sandboxes launched ahead of creates, waiting, by pool.", {"pool"});
  return f;
}

CounterFamily& PoolHits() {
  static CounterFamily& f =
      Global().Counter("isb_pool_hits_total", "Creates served by a sandbox launched ahead, by pool.", {"pool"});
  return f;
}

CounterFamily& LifecycleEvents() {
  static CounterFamily& f =
      Global().Counter("isb_lifecycle_events_total", "Sandbox lifecycle events published, by type.", {"type"});
  return f;
}

CounterFamily& ProxyConnections() {
  static CounterFamily& f = Global().Counter(
      "isb_proxy_connections_total", "Egress proxy connections: accepted, allowed, denied, closed idle.", {"outcome"});
  return f;
}

GaugeFamily& ProxyActive() {
  static GaugeFamily& f = Global().Gauge("isb_proxy_active_connections", "Egress proxy connections open now.");
  return f;
}

CounterFamily& ProxyBytes() {
  static CounterFamily& f =
      Global().Counter("isb_proxy_bytes_total",
                       "Bytes relayed by the egress proxy: up (to origins), down (to sandboxes).", {"direction"});
  return f;
}

CounterFamily& ProxyRefusals() {
  static CounterFamily& f =
      Global().Counter("isb_proxy_refusals_total", "Egress connections and requests refused, by kind.", {"reason"});
  return f;
}

CounterFamily& DnsAnswers() {
  static CounterFamily& f = Global().Counter(
      "isb_dns_answers_total", "Queries of the sandboxes' DNS responder: answered or dropped.", {"outcome"});
  return f;
}

CounterFamily& JudgeVerdicts() {
  static CounterFamily& f = Global().Counter("isb_judge_verdicts_total", "Verdicts of the egress judge.", {"verdict"});
  return f;
}

CounterFamily& JudgeCache() {
  static CounterFamily& f =
      Global().Counter("isb_judge_cache_lookups_total", "Judge verdict cache lookups: hit or miss.", {"result"});
  return f;
}

GaugeFamily& JudgeBreakerOpen() {
  static GaugeFamily& f =
      Global().Gauge("isb_judge_breakers_open", "Judge circuit breakers open or half-open (their calls not made).");
  return f;
}

CounterFamily& AuditRows() {
  static CounterFamily& f =
      Global().Counter("isb_audit_rows_total", "Rows appended to the audit log and the history.", {"chain"});
  return f;
}

CounterFamily& AuditVerifyFailures() {
  static CounterFamily& f = Global().Counter("isb_audit_verify_failures_total",
                                             "Chain verifications that found the chain broken.", {"chain"});
  return f;
}

std::string_view RefusalKind(std::string_view reason) {
  auto has = [reason](std::string_view part) { return reason.find(part) != std::string_view::npos; };
  if (has("judge")) return "judge";
  if (has("not in the egress list")) return "not_listed";
  if (has("is blocked by")) return "blocked";
  if (has("is not allowed")) return "not_allowed";
  for (std::string_view protocol : {"CONNECT", "ClientHello", "HTTP", "request head"})
    if (has(protocol)) return "protocol";
  return "other";
}

void DeclareAll() {
  for (const char* state : {"running", "stopped", "creating"}) Sandboxes().With({state});
  SandboxCreates().With({"ok", "pool"});
  SandboxCreates().With({"ok", "cold"});
  SandboxCreateSeconds().With({"ok"});
  SandboxExecs().With({"ok"});
  SandboxExecSeconds().With({"ok"});
  for (const char* action : {"expired", "idle", "died"}) ReaperActions().With({action});
  for (const char* pool : {"plain", "net"}) {
    PoolSize().With({pool});
    PoolHits().With({pool});
  }
  for (const char* type : {"created", "started", "stopped", "oom", "reaped", "removed", "egress_changed", "published"})
    LifecycleEvents().With({type});
  for (const char* outcome : {"accepted", "allowed", "denied", "idle_closed"}) ProxyConnections().With({outcome});
  ProxyActive().Get();
  for (const char* direction : {"up", "down"}) ProxyBytes().With({direction});
  for (const char* kind : {"not_listed", "blocked", "not_allowed", "judge", "protocol", "other"})
    ProxyRefusals().With({kind});
  for (const char* outcome : {"answered", "dropped"}) DnsAnswers().With({outcome});
  for (const char* verdict : {"allow", "deny", "error", "circuit_open"}) JudgeVerdicts().With({verdict});
  for (const char* result : {"hit", "miss"}) JudgeCache().With({result});
  JudgeBreakerOpen().Get();
  for (const char* chain : {"audit_log", "sandbox_history"}) {
    AuditRows().With({chain});
    AuditVerifyFailures().With({chain});
  }
}

}  // namespace isb::metrics
