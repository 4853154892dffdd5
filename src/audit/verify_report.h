// Verify()'s result as the `isb audit verify` command and the audit_verify tool show it.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/chain.h"

namespace isb::audit {

// {"ok":true,"rows":3,"head":{"id":3,"hash":"…"},"pruned_through":null,"first_broken":null}; pruned_through is
// {"id","hash"} once something was pruned, first_broken {"id","reason"} when the chain is broken.
nlohmann::json VerifyReportJson(const VerifyResult& r);

// One line for people, naming the chain ("audit log", "history"):
//   audit log ok: 3 rows, head 3 <hash>
//   audit log ok: 3 rows, head 12 <hash>, pruned through 9 <hash>
//   audit log BROKEN at row 7: hash does not match the row's contents (12 rows, head 12 <hash>)
// Hashes are printed whole so the head can be copied elsewhere and pinned.
std::string VerifyReportLine(std::string_view chain, const VerifyResult& r);

}  // namespace isb::audit
