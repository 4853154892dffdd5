// Elements of an nftables table's sets added and deleted in one transaction over nfnetlink, in-process: how a
// sandbox's rules join and leave the table RenderRuleset made, without an `nft` process (15 ms each here) on the
// create path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace isb::net {

// One element of one set, its key as the kernel holds it.
struct SetElement {
  std::string set;
  std::string key;
  bool operator<(const SetElement& o) const { return set != o.set ? set < o.set : key < o.key; }
  bool operator==(const SetElement& o) const = default;
};

// The key of an `ifname` element: the name, zero-padded to IFNAMSIZ. Names of IFNAMSIZ bytes or more are refused.
Result<std::string> IfnameKey(const std::string& ifname);
// The key of an `ifname . inet_service` element: the name's 16 bytes, then the port in network order padded to
// the 4 bytes of a register.
Result<std::string> IfnamePortKey(const std::string& ifname, uint16_t port);

// The ruleset's generation in the calling thread's network namespace: every commit by anyone (nft, another
// program, ChangeSetElements) moves it on by one, skipping 0.
Result<uint32_t> RulesetGeneration();
// The generation after `generation` (what a commit made on top of it leaves).
uint32_t NextGeneration(uint32_t generation);

// Deletes `remove` and adds `add` in table `inet TABLE` of the calling thread's network namespace, all or
// nothing (one nfnetlink batch), and only if the ruleset is still at `generation` (the kernel refuses the batch
// otherwise: kConflict, "the ruleset changed"), so a change never lands on a table someone else changed since.
// Deleting an element that is not there fails the whole batch (ENOENT, kNotFound), as does a missing table or set,
// and so does adding one that is there already (EEXIST, kConflict): either says the table is not what the caller
// thinks, and a batch that changed nothing would commit nothing. Errors name the set and the errno. kUnavailable:
// the batch was sent but its answer not read, so whether it was made is not known.
Status ChangeSetElements(const std::string& table, const std::vector<SetElement>& remove,
                         const std::vector<SetElement>& add, uint32_t generation);

}  // namespace isb::net
