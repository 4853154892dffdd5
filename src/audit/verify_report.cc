// Formats a chain's verification for the CLI and the audit_verify tool.
#include "audit/verify_report.h"

namespace isb::audit {
namespace {

nlohmann::json HeadJson(const Head& h) { return {{"id", h.id}, {"hash", h.hash}}; }

std::string HeadText(const Head& h) { return std::to_string(h.id) + " " + h.hash; }

}  // namespace

nlohmann::json VerifyReportJson(const VerifyResult& r) {
  nlohmann::json out = {{"ok", r.ok}, {"rows", r.rows}, {"head", HeadJson(r.head)}};
  out["pruned_through"] = r.pruned_through.id > 0 ? HeadJson(r.pruned_through) : nlohmann::json(nullptr);
  out["first_broken"] = r.first_broken ? nlohmann::json{{"id", r.first_broken->id}, {"reason", r.first_broken->reason}}
                                       : nlohmann::json(nullptr);
  return out;
}

std::string VerifyReportLine(std::string_view chain, const VerifyResult& r) {
  std::string counts = std::to_string(r.rows) + (r.rows == 1 ? " row" : " rows") + ", head " + HeadText(r.head);
  if (r.pruned_through.id > 0) counts += ", pruned through " + HeadText(r.pruned_through);
  std::string name(chain);
  if (r.ok) return name + " ok: " + counts;
  std::string where = r.first_broken ? std::to_string(r.first_broken->id) + ": " + r.first_broken->reason : "?";
  return name + " BROKEN at row " + where + " (" + counts + ")";
}

}  // namespace isb::audit
