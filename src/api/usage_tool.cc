// sandbox_usage: its schema and its handler over the usage store.
#include "api/usage_tool.h"

#include "api/event_bus.h"
#include "api/org_sandboxes.h"
#include "api/schema.h"

namespace isb::api {
namespace {

using nlohmann::json;

json PointJson(const UsagePoint& p) {
  return {{"at", Rfc3339Ms(p.at_ms)}, {"cpu_cores", p.cpu_cores},       {"memory_bytes", p.memory_bytes},
          {"pids", p.pids},           {"net_rx_bytes", p.net_rx_bytes}, {"net_tx_bytes", p.net_tx_bytes}};
}

Result<json> Usage(Sandboxes& all, const UsageStore* usage, const json& in, const CallContext& ctx) {
  if (usage == nullptr) return Error::Of(Code::kUnavailable, "this daemon samples no usage");
  OrgSandboxes sb(all, ctx);
  ISB_ASSIGN_OR_RETURN(SandboxInfo info, sb.Get(in["sandbox"].get<std::string>()));
  const bool coarse = in.value("resolution", "2s") == "1m";
  json samples = json::array();
  for (const UsagePoint& p : usage->Series(info.id, coarse ? UsageResolution::kCoarse : UsageResolution::kFine))
    samples.push_back(PointJson(p));
  return json{
      {"sandbox", info.id}, {"state", info.state}, {"interval_s", coarse ? 60 : 2}, {"samples", std::move(samples)}};
}

}  // namespace

Status AddUsageTool(Registry& registry, Sandboxes& sandboxes, const UsageStore* usage) {
  json point =
      Output({{"at", Str("When it was read (RFC 3339, UTC).", 40)},
              {"cpu_cores", {{"type", "number"}, {"description", "Cores used on average since the point before."}}},
              {"memory_bytes", Int("Memory in use.", 0, INT64_MAX)},
              {"pids", Int("Processes and threads.", 0, INT64_MAX)},
              {"net_rx_bytes",
               Int("Bytes the egress proxy relayed to the sandbox since this daemon began counting it (cumulative: "
                   "the rate is the difference of two points over their time).",
                   0, INT64_MAX)},
              {"net_tx_bytes",
               Int("Bytes the egress proxy relayed from the sandbox, counted as net_rx_bytes is.", 0, INT64_MAX)}},
             {"at", "cpu_cores", "memory_bytes", "pids", "net_rx_bytes", "net_tx_bytes"});
  json input = Object({{"sandbox", Str("The sandbox: its id (\"sb-\" and 16 hex digits) or its name.", 128, 1)},
                       {"resolution",
                        {{"type", "string"},
                         {"enum", {"2s", "1m"}},
                         {"default", "2s"},
                         {"description",
                          "\"2s\": the last hour, a point every 2 s; \"1m\": the last "
                          "day, a point a minute."}}}},
                      {"sandbox"});
  json output = Output({{"sandbox", Str("The sandbox's id.", 64)},
                        {"state", Str("Its state now.", 32)},
                        {"interval_s", Int("Seconds between points.", 2, 60)},
                        {"samples", {{"type", "array"}, {"items", point}}}},
                       {"sandbox", "state", "interval_s", "samples"});
  return registry.Add(
      Tool{"sandbox_usage", "A sandbox's usage over time",
           "CPU (cores), memory, pids and network bytes of one sandbox, sampled every 2 s while it runs: the last hour "
           "at 2 s, or the last day at 1 min. Network bytes are those the egress proxy relayed for the sandbox, to it "
           "(rx) and from it (tx), as counts since the daemon began counting it: a sandbox without an egress list "
           "has none (egress none has no network; open egress is routed past the proxy).",
           input, output, ToolAnnotations{.read_only = true, .idempotent = true}, false,
           [&sandboxes, usage](const json& in, const CallContext& ctx) { return Usage(sandboxes, usage, in, ctx); }});
}

}  // namespace isb::api
