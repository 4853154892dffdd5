// isb's metrics, each named and explained once, in the process's registry (metrics::Global()).
#pragma once

#include <string_view>

#include "base/metrics.h"

namespace isb::metrics {

// Daemon: sandboxes.
GaugeFamily& Sandboxes();                 // isb_sandboxes{state}
CounterFamily& SandboxCreates();          // isb_sandbox_creates_total{outcome,path}
HistogramFamily& SandboxCreateSeconds();  // isb_sandbox_create_seconds{outcome}
CounterFamily& SandboxExecs();            // isb_sandbox_execs_total{outcome}
HistogramFamily& SandboxExecSeconds();    // isb_sandbox_exec_seconds{outcome}
CounterFamily& ReaperActions();           // isb_reaper_actions_total{action}: expired, idle, died
GaugeFamily& PoolSize();                  // isb_pool_size{pool}: plain, net
CounterFamily& PoolHits();                // isb_pool_hits_total{pool}
CounterFamily& LifecycleEvents();         // isb_lifecycle_events_total{type}

// Egress: the proxy, DNS, the judge.
CounterFamily& ProxyConnections();  // isb_proxy_connections_total{outcome}: accepted, allowed, denied, idle_closed
GaugeFamily& ProxyActive();         // isb_proxy_active_connections
CounterFamily& ProxyBytes();        // isb_proxy_bytes_total{direction}: up, down
CounterFamily& ProxyRefusals();     // isb_proxy_refusals_total{reason}
CounterFamily& DnsAnswers();        // isb_dns_answers_total{outcome}: answered, dropped
CounterFamily& JudgeVerdicts();     // isb_judge_verdicts_total{verdict}: allow, deny, error, circuit_open
CounterFamily& JudgeCache();        // isb_judge_cache_lookups_total{result}: hit, miss
GaugeFamily& JudgeBreakerOpen();    // isb_judge_breakers_open

// Audit.
CounterFamily& AuditRows();            // isb_audit_rows_total{chain}: audit_log, sandbox_history
CounterFamily& AuditVerifyFailures();  // isb_audit_verify_failures_total{chain}

// The kind of a proxy refusal, for its label (the reason itself names hosts: too many values for a label):
// not_listed, blocked, not_allowed, judge, protocol, other.
std::string_view RefusalKind(std::string_view reason);

// Every family above declared, so that /metrics lists each from the start, and the outcome children that are
// counted later set at 0.
void DeclareAll();

}  // namespace isb::metrics
