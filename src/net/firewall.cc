#include "net/firewall.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <optional>
#include <utility>
#include <set>
#include <sstream>

#include "base/program.h"
#include "net/nft_elements.h"
#include "net/sandbox_network.h"

namespace isb::net {
namespace {

// Every IPv4 destination an open sandbox may not reach: this host, private networks, other sandboxes, and every
// special-purpose range (RFC 6890 and its successors).
constexpr const char* kNonPublic4 =
    "0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.0.0.0/24, "
    "192.0.2.0/24, 192.31.196.0/24, 192.52.193.0/24, 192.88.99.0/24, 192.168.0.0/16, 192.175.48.0/24, "
    "198.18.0.0/15, 198.51.100.0/24, 203.0.113.0/24, 224.0.0.0/3";

std::string Elements(const std::set<std::string>& items) {
  if (items.empty()) return "";
  std::string out = "elements = { ";
  bool first = true;
  for (const std::string& i : items) {
    if (!first) out += ", ";
    out += i;
    first = false;
  }
  return out + " }";
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

std::string RenderRuleset(const FirewallConfig& c, const std::vector<SandboxRules>& sandboxes) {
  std::set<std::string> list_ifaces, list_ports, any_port_ifaces, open_ifaces;
  for (const SandboxRules& s : sandboxes) {
    if (s.mode == EgressMode::kOpen) {
      open_ifaces.insert(Quoted(s.ifname));
      continue;
    }
    list_ifaces.insert(Quoted(s.ifname));
    if (s.all_ports) any_port_ifaces.insert(Quoted(s.ifname));
    for (uint16_t p : s.ports) list_ports.insert(Quoted(s.ifname) + " . " + std::to_string(p));
  }
  // This daemon's veths and no other's (sandbox_network.h: no name of one prefix is another's).
  const std::string sb = Quoted(c.ifname_prefix + kSlotSeparator + "*");
  const std::string proxy = std::to_string(c.proxy_port), dns = std::to_string(c.dns_port);
  std::ostringstream o;
  // Creating the table first makes the delete valid when there is none; the three lines are one transaction.
  o << "table inet " << c.table << "\n"
    << "delete table inet " << c.table << "\n"
    << "table inet " << c.table << " {\n"
    << "  set list_ifaces { type ifname; " << Elements(list_ifaces) << " }\n"
    << "  set list_ports { type ifname . inet_service; " << Elements(list_ports) << " }\n"
    << "  set any_port_ifaces { type ifname; " << Elements(any_port_ifaces) << " }\n"
    << "  set open_ifaces { type ifname; " << Elements(open_ifaces) << " }\n"
    << "  set nonpublic4 { type ipv4_addr; flags interval; elements = { " << kNonPublic4
    << " } }\n"
    // A listed port, or DNS, to the host end: to the proxy or the DNS responder, which know the sandbox by the
    // address the connection arrives at.
    << "  chain prerouting {\n"
    << "    type nat hook prerouting priority dstnat; policy accept;\n"
    // DNS first: port 53 of the host end is the responder's, also where a list names a host on port 53. An open
    // sandbox's over UDP: the responder relays it to the host's resolvers.
    << "    iifname @list_ifaces fib daddr type local udp dport 53 redirect to :" << dns << "\n"
    << "    iifname @list_ifaces fib daddr type local tcp dport 53 redirect to :" << dns << "\n"
    << "    iifname @open_ifaces fib daddr type local udp dport 53 redirect to :" << dns << "\n"
    << "    iifname " << sb << " fib daddr type local meta iifname . tcp dport @list_ports redirect to :" << proxy
    << "\n"
    << "    iifname @any_port_ifaces fib daddr type local tcp dport != 53 redirect to :" << proxy << "\n"
    << "  }\n"
    // To the host itself: only what was redirected above.
    << "  chain input {\n"
    << "    type filter hook input priority filter; policy accept;\n"
    << "    iifname " << sb
    << " jump from_sandbox\n"
    // The proxy and the DNS responder listen on every address; only redirected sandbox traffic may reach them.
    << "    tcp dport " << proxy << " counter drop\n"
    << "    udp dport " << dns << " counter drop\n"
    << "    tcp dport " << dns << " counter drop\n"
    << "  }\n"
    // By port, never by state alone: the ports change at every daemon start, and a flow tracked before (a sandbox
    // may keep one alive for good, querying from one port) still leads to the old one, where anything may listen.
    << "  chain from_sandbox {\n"
    << "    meta nfproto ipv6 drop\n"
    // A source its veth does not route back to: forged (its root holds CAP_NET_RAW there), so that an answer (the
    // DNS responder's) would go from the host to an address the sandbox may not reach.
    << "    fib saddr . iif oif missing counter drop\n"
    << "    ct status dnat tcp dport " << proxy << " accept\n"
    << "    ct status dnat iifname @list_ifaces udp dport " << dns << " accept\n"
    << "    ct status dnat iifname @list_ifaces tcp dport " << dns << " accept\n"
    << "    ct status dnat iifname @open_ifaces udp dport " << dns << " accept\n"
    << "    meta l4proto tcp counter reject with tcp reset\n"
    << "    counter drop\n"
    << "  }\n"
    // Through the host: open sandboxes to public IPv4 addresses, and the replies; nothing else.
    << "  chain forward {\n"
    << "    type filter hook forward priority filter; policy accept;\n"
    << "    iifname " << sb << " jump sandbox_out\n"
    << "    oifname " << sb << " jump sandbox_in\n";
  // Neither from nor to a sandbox's veth, this daemon's or another isb's (whose own rules judge it): dropped.
  if (c.forward_only_sandboxes)
    o << "    iifgroup != " << kSandboxVethGroup << " oifgroup != " << kSandboxVethGroup << " counter drop\n";
  o << "  }\n"
    << "  chain sandbox_out {\n"
    << "    meta nfproto ipv6 drop\n"
    << "    fib saddr . iif oif missing counter drop\n"
    << "    oifname != " << sb << " iifname @open_ifaces ip daddr != @nonpublic4 accept\n"
    << "    meta l4proto tcp counter reject with tcp reset\n"
    << "    counter drop\n"
    << "  }\n"
    << "  chain sandbox_in {\n"
    << "    ct state established,related accept\n"
    << "    counter drop\n"
    << "  }\n"
    << "  chain postrouting {\n"
    << "    type nat hook postrouting priority srcnat; policy accept;\n"
    << "    iifname @open_ifaces oifname != " << sb << " masquerade\n"
    << "  }\n"
    << "}\n";
  return o.str();
}

namespace {

// How long one nft may take: the firewall's lock is held across it, and every sandbox's start waits on that lock.
// Far more than the largest table takes (its whole apply is retried while it fails): a bound on a hang, not a pace.
constexpr std::chrono::minutes kNftTimeout{5};

// Why nft did not run: not installed, not started, or killed at kNftTimeout.
Error NftRunError(const Error& e) {
  if (e.code == Code::kTimeout) return Error::Of(Code::kUnavailable, "the firewall's " + e.message);
  if (e.err == ENOENT) return Error::Sys("starting nft (install the nftables package)", e.err);
  return Error::Sys("running nft", e.err);
}

// Runs `nft` with `args`, `input` on its stdin; its stderr is the error on failure.
Status RunNft(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {"nft"};
  argv.insert(argv.end(), args.begin(), args.end());
  Result<ProgramExit> exit = RunProgram(argv, input, 0, kNftTimeout);
  if (!exit.ok()) return NftRunError(exit.error());
  if (exit->ok()) return {};
  return Error::Msg("nft refused the ruleset: " + exit->stderr_text);
}

}  // namespace

Status ApplyRuleset(const std::string& ruleset) { return RunNft({"-f", "-"}, ruleset); }

Status DeleteTable(const std::string& table) {
  return RunNft({"-f", "-"}, "table inet " + table + "\ndelete table inet " + table + "\n");
}

namespace {

// A sandbox's part of the table: the set elements RenderRuleset gives its rules.
Result<std::set<SetElement>> ElementsOf(const SandboxRules& r) {
  std::set<SetElement> out;
  ISB_ASSIGN_OR_RETURN(std::string iface, IfnameKey(r.ifname));
  if (r.mode == EgressMode::kOpen) {
    out.insert({"open_ifaces", iface});
    return out;
  }
  out.insert({"list_ifaces", iface});
  if (r.all_ports) out.insert({"any_port_ifaces", iface});
  for (uint16_t p : r.ports) {
    ISB_ASSIGN_OR_RETURN(std::string key, IfnamePortKey(r.ifname, p));
    out.insert({"list_ports", std::move(key)});
  }
  return out;
}

}  // namespace

Status Firewall::Set(const SandboxRules& rules) {
  MutexLock lock(mu_);
  std::optional<SandboxRules> before;
  if (auto it = sandboxes_.find(rules.ifname); it != sandboxes_.end()) before = it->second;
  sandboxes_[rules.ifname] = rules;
  Status s = ChangeLocked(before ? &*before : nullptr, &rules);
  if (!s.ok()) {
    // The kernel still has the previous table: keep the model equal to it.
    if (before) {
      sandboxes_[rules.ifname] = *before;
    } else {
      sandboxes_.erase(rules.ifname);
    }
  }
  return s;
}

Status Firewall::Remove(const std::string& ifname) {
  MutexLock lock(mu_);
  auto it = sandboxes_.find(ifname);
  if (it == sandboxes_.end()) return {};
  const SandboxRules before = it->second;
  sandboxes_.erase(it);
  return ChangeLocked(&before, nullptr);
}

Status Firewall::ChangeLocked(const SandboxRules* before, const SandboxRules* after) {
  // Until the whole table was written once there is no table of this firewall's to change (or another daemon's old
  // one), and no generation of its own; after a failure the kernel's table may differ from the model; without a
  // generation of its own, a change could land on someone else's edit: in each case the whole table.
  if (dirty_ || generation_ == 0) return ApplyLocked();
  std::set<SetElement> was, will;
  if (before != nullptr) {
    Result<std::set<SetElement>> e = ElementsOf(*before);
    if (!e.ok()) return ApplyLocked();
    was = std::move(*e);
  }
  if (after != nullptr) {
    ISB_ASSIGN_OR_RETURN(will, ElementsOf(*after));
  }
  std::vector<SetElement> remove, add;
  std::set_difference(was.begin(), was.end(), will.begin(), will.end(), std::back_inserter(remove));
  std::set_difference(will.begin(), will.end(), was.begin(), was.end(), std::back_inserter(add));
  if (remove.empty() && add.empty()) return {};
  Status changed = ChangeSetElements(config_.table, remove, add, generation_);
  if (!changed.ok()) {
    // Refused when anyone committed since this firewall's last commit (another program may have changed or deleted
    // the table: expected where other programs keep rules), when the table does not hold what the model says, or
    // made and unanswered: the whole table then, which puts every sandbox's part back as the model has it.
    if (changed.error().code != Code::kConflict || changed.error().message.find("ruleset changed") == std::string::npos)
      std::fprintf(stderr, "isb: egress: the table inet %s: %s; writing it whole\n", config_.table.c_str(),
                   changed.error().message.c_str());
    return ApplyLocked();
  }
  generation_ = NextGeneration(generation_);
  ++counts_.elements;
  return {};
}

Status Firewall::Sync() {
  MutexLock lock(mu_);
  return ApplyLocked();
}

Status Firewall::SetForwardOnlySandboxes(bool on) {
  MutexLock lock(mu_);
  const bool before = config_.forward_only_sandboxes;
  config_.forward_only_sandboxes = on;
  Status s = ApplyLocked();
  if (!s.ok()) config_.forward_only_sandboxes = before;
  return s;
}

Status Firewall::ApplyLocked() {
  std::vector<SandboxRules> all;
  all.reserve(sandboxes_.size());
  for (const auto& [name, r] : sandboxes_) all.push_back(r);
  // The generation before, so that the one after is known to be this apply's own: nft's commit moves it by one,
  // and anything more is someone else's commit right after it, which may have edited the table.
  Result<uint32_t> before = RulesetGeneration();
  Status s = ApplyRuleset(RenderRuleset(config_, all));
  // A failed apply leaves the kernel's table as it was, which the model may no longer be (a removal's): until a
  // whole apply succeeds, every change and every look of the watch is one.
  dirty_ = !s.ok();
  generation_ = 0;  // unknown: the next change is a whole apply, the next look lists the table
  if (s.ok()) {
    Result<uint32_t> after = RulesetGeneration();
    if (before.ok() && after.ok() && *after == NextGeneration(*before)) generation_ = *after;
    ++counts_.whole;
    listing_.reset();
  }
  return s;
}

namespace {

// The table as the kernel has it, without counters; nullopt when there is no such table.
Result<std::optional<std::string>> ListTable(const std::string& table) {
  constexpr size_t kLimit = 64 << 20;
  Result<ProgramExit> exit = RunProgram({"nft", "-s", "list", "table", "inet", table}, {}, kLimit, kNftTimeout);
  if (!exit.ok()) return NftRunError(exit.error());
  // Cut at the limit, it would hide the table's end from the comparison.
  if (exit->stdout_text.size() >= kLimit) return Error::Msg("nft list table inet " + table + ": over 64 MiB");
  if (!exit->ok()) {
    if (exit->stderr_text.find("No such file or directory") != std::string::npos) return std::optional<std::string>();
    return Error::Msg("nft list table inet " + table + ": " + exit->stderr_text);
  }
  return std::optional<std::string>(exit->stdout_text);
}

}  // namespace

Result<std::string> Firewall::Restore() {
  MutexLock lock(mu_);
  if (counts_.whole == 0) return std::string();  // nothing applied yet
  if (dirty_) {
    // The model is what the table must be; the kernel's differs by the failed change, or by an edit a look found
    // and could not undo then (pending_, told now that it is undone).
    ISB_TRY(ApplyLocked());
    return std::exchange(pending_, std::string());
  }
  // An edit found by a look whose rewrite failed, undone since by a change's whole apply.
  if (!pending_.empty()) return std::exchange(pending_, std::string());
  // Nobody has committed since this firewall's last commit: the table is as it left it, and no nft need run.
  Result<uint32_t> generation = RulesetGeneration();
  if (generation.ok() && generation_ != 0 && *generation == generation_) return std::string();
  // Someone has (or the generation cannot be read, or is not this firewall's own): the table as the kernel has it.
  // One that cannot be listed (rules nft cannot show, a listing too large) is written whole all the same.
  Result<std::optional<std::string>> before = ListTable(config_.table);
  // The same as this firewall's own last listing, with no commit of its own since: another table's commit (another
  // isb's, a container runtime's). Changes go on on top of it, and nothing is written.
  if (before.ok() && *before && listing_ && listing_->first == CommitsLocked() && listing_->second == **before &&
      generation.ok()) {
    generation_ = *generation;
    return std::string();
  }
  if (before.ok() && !*before) pending_ = "deleted";
  if (!before.ok()) pending_ = "changed";
  ISB_TRY(ApplyLocked());
  Result<std::optional<std::string>> after = ListTable(config_.table);
  // The listing is this apply's table only if no one committed after it: else the next look lists again.
  if (Result<uint32_t> now = RulesetGeneration();
      after.ok() && *after && now.ok() && generation_ != 0 && *now == generation_) {
    listing_.emplace(CommitsLocked(), **after);
  }
  // A listing from before any change of this firewall's own since its last look cannot tell an edit from those
  // changes; the rewrite undid whatever it was, and only a listing unlike the model's is reported.
  if (pending_.empty() && before.ok() && after.ok() && **before != after->value_or("")) pending_ = "changed";
  return std::exchange(pending_, std::string());
}

}  // namespace isb::net
