// The host-side rules that confine sandboxes: one nftables table of isb's, its chains fixed and each sandbox's
// part a few elements of its sets. The table is written as a whole and atomically (`nft -f -`) at start-up, when
// the policy changes and when another program changed it; a sandbox's network joins and leaves it by its set
// elements, in one nfnetlink transaction (nft_elements.h). The rules live in the host's namespace, on the host end
// of each sandbox's veth, so nothing inside a sandbox can change them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/result.h"

namespace isb::net {

enum class EgressMode { kList, kOpen };

// One sandbox that has a network (a sandbox with egress `none` has none and needs no rules).
struct SandboxRules {
  std::string ifname;  // the host end of its veth
  EgressMode mode = EgressMode::kList;
  std::vector<uint16_t> ports;  // kList: the TCP ports that reach the proxy
  bool all_ports = false;       // kList: every TCP port reaches the proxy (a blocklist decides by name there)
};

struct FirewallConfig {
  std::string table = "isb";
  std::string ifname_prefix = "isb";  // every sandbox veth's host end is <prefix>-<slot> (HostIfname), none else
  uint16_t proxy_port = 0;            // where listed ports are redirected (on the host end's address)
  uint16_t dns_port = 0;              // where DNS (udp and tcp 53) is redirected
  // When isb had to turn on IPv4 forwarding for open sandboxes, the host routes nothing that isb did not ask for.
  bool forward_only_sandboxes = false;
};

// The whole table, as `nft -f` input that replaces any previous version in one transaction.
std::string RenderRuleset(const FirewallConfig& config, const std::vector<SandboxRules>& sandboxes);

// Feeds `ruleset` to `nft -f -`; nft's own message comes back in the error.
Status ApplyRuleset(const std::string& ruleset);
// Removes the table if it exists.
Status DeleteTable(const std::string& table);

// The rules of every sandbox with a network, kept in step with the kernel.
class Firewall {
 public:
  // How many whole-table applies and element changes were made: tests tell the paths apart by them.
  struct Counts {
    uint64_t whole = 0;
    uint64_t elements = 0;
  };
  explicit Firewall(FirewallConfig config) : config_(std::move(config)) {}
  Status Set(const SandboxRules& rules);
  Status Remove(const std::string& ifname);
  // Reapplies the whole table (at start-up, after adopting sandboxes).
  Status Sync();
  // Whether the kernel's table is still the one this firewall made: someone else (`nft`, another program) may
  // delete or change it. While no one has committed to the ruleset since this firewall's last commit, it is, and
  // nothing runs but one netlink request. After anyone's commit the table is listed: the same as the watch's own
  // last listing with no change of this firewall's since, it is intact (another table's commit) and nothing is
  // written; otherwise it is written whole from the model and listed again, and the answer says what was found
  // ("deleted", "changed"), "" when the listing was the model's. Errors: nft could not be run, or the table could
  // not be applied again.
  Result<std::string> Restore();
  // Sets forward_only_sandboxes and reapplies; on failure the kernel and the config keep the previous value.
  Status SetForwardOnlySandboxes(bool on);
  FirewallConfig config() const {
    MutexLock lock(mu_);
    return config_;
  }
  Counts counts() const {
    MutexLock lock(mu_);
    return counts_;
  }

 private:
  Status ApplyLocked() ISB_REQUIRES(mu_);
  // The table's elements moved from `before`'s rules to `after`'s (either may be absent) by one element change,
  // or by a whole apply when that fails (the table was changed or deleted by someone else).
  Status ChangeLocked(const SandboxRules* before, const SandboxRules* after) ISB_REQUIRES(mu_);
  // The commits this firewall made: whole applies and element changes.
  uint64_t CommitsLocked() const ISB_REQUIRES(mu_) { return counts_.whole + counts_.elements; }
  mutable Mutex mu_;
  FirewallConfig config_ ISB_GUARDED_BY(mu_);
  std::map<std::string, SandboxRules> sandboxes_ ISB_GUARDED_BY(mu_);
  Counts counts_ ISB_GUARDED_BY(mu_);
  // The ruleset generation this firewall's last commit made (0: not known); element changes are made only on it.
  uint32_t generation_ ISB_GUARDED_BY(mu_) = 0;
  // The last whole apply failed: the kernel's table may not be the model's.
  bool dirty_ ISB_GUARDED_BY(mu_) = false;
  // The watch's last listing of the table after writing it, with CommitsLocked() then: while no commit of this
  // firewall's own follows, a listing equal to it is the table intact under someone else's commit.
  std::optional<std::pair<uint64_t, std::string>> listing_ ISB_GUARDED_BY(mu_);
  // What a look found ("deleted", "changed") and could not yet report, its rewrite having failed.
  std::string pending_ ISB_GUARDED_BY(mu_);
};

}  // namespace isb::net
