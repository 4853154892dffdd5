#include "daemon/egress_service.h"

#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "base/fd.h"
#include "base/file.h"
#include "egress/classify.h"
#include "net/sandbox_network.h"

namespace isb::daemon {
namespace {

bool Proxied(egress::EgressMode m) {
  return m == egress::EgressMode::kAllowlist || m == egress::EgressMode::kBlocklist;
}

constexpr const char* kBootId = "/proc/sys/kernel/random/boot_id";

std::string MarkerPath(const std::string& state_dir) { return state_dir + "/" + kForwardingMarker; }

// Whether the host forwards IPv4 because an isb turned forwarding on, in this boot: then it is to route sandboxes
// only. A marker of an earlier boot (which reset forwarding) or of a turn-on that never came (forwarding is off) is
// no longer true and goes, so that forwarding someone else turns on later is never taken for isb's.
Result<bool> ForwardingIsIsbs(const std::string& state_dir) {
  if (state_dir.empty()) return false;
  const std::string marker = MarkerPath(state_dir);
  Result<std::string> mark = ReadFile(marker);
  if (!mark.ok()) return mark.error().err == ENOENT ? Result<bool>(false) : Result<bool>(mark.error());
  ISB_ASSIGN_OR_RETURN(std::string boot, ReadFile(kBootId));
  ISB_ASSIGN_OR_RETURN(bool on, net::Ipv4ForwardingOn());
  if (*mark == boot && on) return true;
  if (::unlink(marker.c_str()) != 0 && errno != ENOENT) return Error::Sys("removing " + marker);
  return false;
}

}  // namespace

Result<egress::EgressSpec> ParseSandboxEgress(const nlohmann::json& value) { return egress::ParseEgressSpec(value); }

Result<std::unique_ptr<EgressService>> EgressService::Start(EgressOptions options) {
  ISB_ASSIGN_OR_RETURN(net::Subnet subnet, net::ParseSubnet(options.subnet));
  ISB_TRY(net::CheckIfnamePrefix(options.ifname_prefix, subnet));
  // Before anything is looked at or changed: another live daemon's table, veths or subnet are not this one's.
  const std::string holder = options.holder.empty() ? "pid " + std::to_string(::getpid()) : options.holder;
  ISB_ASSIGN_OR_RETURN(EgressClaims claims,
                       EgressClaims::Take(options.claim_dir, options.table, options.ifname_prefix, subnet, holder));
  ISB_ASSIGN_OR_RETURN(std::vector<net::Subnet> routes, net::HostRoutes());
  // Our own veths' routes from a previous run are in the table too; they are ours, not an overlap.
  std::erase_if(routes, [&](const net::Subnet& r) { return r.prefix_len == 30 && subnet.Contains(r.base); });
  ISB_TRY(net::CheckNoOverlap(subnet, routes));
  egress::DialerOptions d;
  d.pins = options.pins;
  ISB_ASSIGN_OR_RETURN(egress::Dialer dialer, egress::Dialer::Create(std::move(d)));
  std::unique_ptr<egress::Judge> judge;
  if (!options.judge.url.empty()) {
    options.judge.pins = options.pins;
    ISB_ASSIGN_OR_RETURN(judge, egress::Judge::Create(options.judge));
  }
  std::unique_ptr<EgressService> s(new EgressService(std::move(options), subnet, std::move(dialer), std::move(claims)));
  s->judge_ = std::move(judge);
  ISB_TRY(s->StartServers());
  return s;
}

EgressService::EgressService(EgressOptions options, net::Subnet subnet, egress::Dialer dialer, EgressClaims claims)
    : claims_(std::move(claims)),
      options_(std::move(options)),
      subnet_(subnet),
      pool_(subnet),
      dialer_(std::move(dialer)) {}

Status EgressService::StartServers() {
  egress::ProxyHooks h;
  h.classify = egress::ClassifyConnection;
  h.sandbox = [this](uint32_t a) { return SandboxAt(a); };
  h.host_for_port = [this](const std::string& id, uint16_t port) -> std::optional<std::string> {
    auto policy = PolicyOf(id);
    if (!policy) return std::nullopt;
    Result<std::string> host = policy->SingleHostOnPort(port);
    if (!host.ok()) return std::nullopt;
    return *host;
  };
  h.decide = [this](const std::string& id, const std::string& host, uint16_t port, const std::string& method,
                    const std::string& path) { return Decide(id, host, port, method, path); };
  h.dial = [this](const std::string& host, uint16_t port) { return dialer_.Dial(host, port); };
  h.on_deny = [this](const std::string& id, const std::string& target, const std::string& reason, bool first) {
    if (!first) return;
    std::fprintf(stderr, "isb: egress: %s refused %s: %s\n", id.c_str(), target.c_str(), reason.c_str());
    if (!options_.on_refusal) return;
    std::string org;
    if (PolicyOf(id, &org) == nullptr || org.empty()) return;  // gone meanwhile, or pooled (nobody's yet)
    options_.on_refusal(id, org, target, reason);
  };
  // The hosts of the sandbox's secrets: their TLS ends at the proxy, where the secrets filter swaps placeholders.
  h.intercept = [this](const std::string& id, const std::string& host, uint16_t port) {
    auto policy = PolicyOf(id);
    return policy != nullptr && policy->Intercepted(host, port);
  };
  egress::ProxyOptions po;
  po.explicit_port = options_.explicit_proxy_port;
  po.intercept.minter = minter_;
  po.intercept.upstream_ca_file = options_.upstream_ca_file;
  po.filter = options_.filter;
  ISB_ASSIGN_OR_RETURN(proxy_, egress::Proxy::Start(po, std::move(h)));

  net::DnsHooks dh;
  dh.sandbox = [this](uint32_t a) { return SandboxAt(a); };
  dh.listed = [this](const std::string& id, std::string_view name) { return NameListed(id, name); };
  dh.forwarded = [this](const std::string& id) {
    auto policy = PolicyOf(id);
    return policy != nullptr && policy->spec().mode == egress::EgressMode::kOpen;
  };
  std::vector<net::DnsUpstream> upstreams = options_.dns_upstreams;
  if (upstreams.empty()) {
    if (auto conf = isb::ReadFile("/etc/resolv.conf"); conf.ok()) upstreams = net::UpstreamsFromResolvConf(*conf);
  }
  ISB_ASSIGN_OR_RETURN(dns_, net::DnsServer::Start("0.0.0.0", 0, std::move(dh), std::move(upstreams)));

  net::FirewallConfig fc;
  fc.table = options_.table;
  fc.ifname_prefix = options_.ifname_prefix;
  fc.proxy_port = proxy_->port();
  fc.dns_port = dns_->port();
  // From the first apply on: the table this one replaces may be all that kept the host from routing for others.
  ISB_ASSIGN_OR_RETURN(fc.forward_only_sandboxes, ForwardingIsIsbs(options_.state_dir));
  firewall_ = std::make_unique<net::Firewall>(fc);
  ISB_TRY(firewall_->Sync());
  // The thread shares this one's network namespace (a test's own), where the table and veths are.
  if (options_.watch_interval_ms > 0) watch_ = std::thread([this] { Watch(); });
  return {};
}

void EgressService::Watch() {
  MutexLock lock(watch_mu_);
  for (;;) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.watch_interval_ms);
    while (!watch_stop_ && watch_cv_.WaitUntil(watch_mu_, deadline)) {
    }
    if (watch_stop_) return;
    lock.Unlock();
    CheckNetwork();
    lock.Lock();
  }
}

void EgressService::CheckNetwork() {
  Result<std::string> found = firewall_->Restore();
  if (!found.ok()) {
    std::fprintf(stderr, "isb: egress: cannot check the table inet %s: %s\n", options_.table.c_str(),
                 found.error().message.c_str());
    return CheckVeths();  // the veths are looked at all the same
  }
  if (found->empty()) return CheckVeths();
  std::vector<std::pair<std::string, std::string>> attached;  // id, org
  {
    MutexLock lock(mu_);
    for (const auto& [id, e] : by_id_)
      if (e.attached && !e.org.empty()) attached.emplace_back(id, e.org);  // a pooled one is nobody's yet
  }
  std::fprintf(stderr,
               "isb: egress: the table inet %s was %s under this daemon by another program; restored it (%zu "
               "sandboxes with a network)\n",
               options_.table.c_str(), found->c_str(), attached.size());
  if (options_.on_network_event)
    for (const auto& [id, org] : attached) options_.on_network_event(id, org, "rules_" + *found);
  CheckVeths();
}

void EgressService::CheckVeths() {
  MutexLock releasing(veth_mu_);
  std::vector<Entry> attached;
  {
    MutexLock lock(mu_);
    for (const auto& [id, e] : by_id_)
      if (e.attached) attached.push_back(e);
  }
  for (const Entry& e : attached) {
    const std::string ifname = net::HostIfname(options_.ifname_prefix, e.slot);
    if (::if_nametoindex(ifname.c_str()) != 0 || errno != ENODEV) {
      veths_lost_.erase(e.slot);
      continue;
    }
    // A sandbox that is not running (stopped, or adopted stopped) has no veth: its namespace took it along.
    if (!e.netns) continue;
    Result<Fd> ns = e.netns();
    if (!ns.ok()) continue;
    const bool open = e.policy->spec().mode == egress::EgressMode::kOpen;
    auto link = net::AttachSandbox(ns->get(), pool_.SlotAt(e.slot), options_.ifname_prefix, open);
    // One that cannot be put back (a host tool took its names) is told once, not at every look.
    if (!link.ok() && !veths_lost_.insert(e.slot).second) continue;
    if (link.ok()) veths_lost_.erase(e.slot);
    const std::string outcome = link.ok() ? "put it back" : "could not put it back: " + link.error().message;
    std::fprintf(stderr, "isb: egress: sandbox %s: its veth %s was deleted under this daemon by another program; %s\n",
                 e.id.c_str(), ifname.c_str(), outcome.c_str());
    if (options_.on_network_event && !e.org.empty()) options_.on_network_event(e.id, e.org, "veth_deleted");
  }
}

EgressService::~EgressService() {
  {
    MutexLock lock(watch_mu_);
    watch_stop_ = true;
    watch_cv_.NotifyOne();
  }
  if (watch_.joinable()) watch_.join();
  proxy_.reset();
  dns_.reset();
  MutexLock lock(mu_);
  // Rules stay while any sandbox with a network outlives the daemon: they keep confining it, and the next daemon
  // replaces them. With none left, nothing needs them, unless isb turned forwarding on: that stays on
  // (EnsureForwarding), and the table's drop is what keeps the host from routing for anyone else.
  if (by_id_.empty() && firewall_ && !firewall_->config().forward_only_sandboxes)
    (void)net::DeleteTable(options_.table);
}

uint16_t EgressService::proxy_port() const { return proxy_->port(); }
uint16_t EgressService::dns_port() const { return dns_->port(); }
const egress::ProxyStats& EgressService::proxy_stats() const { return proxy_->stats(); }
std::optional<egress::TrafficTotals> EgressService::NetworkBytes(const std::string& id) const {
  return proxy_->traffic().Read(id);
}
uint64_t EgressService::dns_answered() const { return dns_->answered(); }
uint64_t EgressService::dns_dropped() const { return dns_->dropped(); }
Result<std::string> EgressService::SandboxCaPem(const std::string& id) { return minter_->CaPem(id); }

net::SandboxRules EgressService::RulesFor(const Entry& e) const {
  net::SandboxRules r;
  r.ifname = net::HostIfname(options_.ifname_prefix, e.slot);
  const egress::EgressSpec& spec = e.policy->spec();
  if (spec.mode == egress::EgressMode::kOpen) {
    r.mode = net::EgressMode::kOpen;
  } else if (spec.mode == egress::EgressMode::kBlocklist) {
    r.mode = net::EgressMode::kList;
    r.all_ports = true;
  } else {
    r.mode = net::EgressMode::kList;
    r.ports = e.policy->ListedPorts();
    r.ports.push_back(options_.explicit_proxy_port);
  }
  return r;
}

void EgressService::BindSecrets(const std::string& id, const std::string& org, const egress::EgressSpec& spec) {
  if (options_.secrets != nullptr) options_.secrets->Bind(id, org, spec);
}

Result<SandboxNet> EgressService::Prepare(const std::string& id, const egress::EgressSpec& spec,
                                          const std::string& org) {
  if (spec.mode == egress::EgressMode::kNone) return Error::Of(Code::kInvalidArgument, "egress none needs no network");
  ISB_ASSIGN_OR_RETURN(net::Slot slot, pool_.Allocate());
  {
    MutexLock lock(mu_);
    by_id_[id] = Entry{id, slot.index, std::make_shared<const egress::EgressPolicy>(spec), false, org};
    by_slot_[slot.index] = id;
  }
  proxy_->traffic().Track(id);
  BindSecrets(id, org, spec);
  SandboxNet n;
  n.slot = slot.index;
  n.host_address = net::FormatIpv4(slot.host);
  n.sandbox_address = net::FormatIpv4(slot.sandbox);
  // The responder: a list sandbox's answers, an open one's relayed from the host's resolvers.
  n.resolv_conf = "nameserver " + n.host_address + "\n";
  if (Proxied(spec.mode)) {
    std::string proxy = "http://" + n.host_address + ":" + std::to_string(options_.explicit_proxy_port);
    for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
      n.env.push_back(std::string(k) + "=" + proxy);
    n.env.push_back("NO_PROXY=localhost,127.0.0.1");
    n.env.push_back("no_proxy=localhost,127.0.0.1");
    // Every list sandbox trusts its CA (the bundle is the caller's to write): a live change may mark names for
    // interception in a sandbox that had none.
    ISB_ASSIGN_OR_RETURN(n.ca_pem, minter_->CaPem(id));
  }
  return n;
}

Status EgressService::Attach(const std::string& id, NetnsOpener netns) {
  Entry e;
  {
    MutexLock lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return Error::Of(Code::kNotFound, "no network prepared for " + id);
    e = it->second;
  }
  MutexLock attaching(veth_mu_);
  Status s = [&]() -> Status {
    if (!netns) return Error::Of(Code::kInvalidArgument, "attaching " + id + ": no way to its network namespace");
    Result<Fd> ns = netns();
    if (!ns.ok()) {
      Error failed = ns.error();  // its code and errno kept
      failed.message = "the sandbox's network namespace: " + failed.message;
      return failed;
    }
    const bool open = e.policy->spec().mode == egress::EgressMode::kOpen;
    if (open) ISB_TRY(EnsureForwarding());
    ISB_TRY(net::AttachSandbox(ns->get(), pool_.SlotAt(e.slot), options_.ifname_prefix, open));
    return firewall_->Set(RulesFor(e));
  }();
  if (!s.ok()) {
    // Undone, but the sandbox keeps its slot, as a stopped sandbox does: its state dir names it (net_slot), the
    // next start attaches it again, and no other sandbox is handed it meanwhile.
    std::string ifname = net::HostIfname(options_.ifname_prefix, e.slot);
    (void)firewall_->Remove(ifname);
    (void)net::DetachSandbox(ifname);
    return s;
  }
  MutexLock lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    it->second.attached = true;
    it->second.netns = std::move(netns);
  }
  return {};
}

Status EgressService::Update(const std::string& id, const egress::EgressSpec& spec) {
  Entry e;
  {
    MutexLock lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return Error::Of(Code::kInvalidArgument, "the sandbox has no network (egress none)");
    const egress::EgressMode before = it->second.policy->spec().mode;
    if (spec.mode == egress::EgressMode::kNone ||
        (before == egress::EgressMode::kOpen) != (spec.mode == egress::EgressMode::kOpen))
      return Error::Of(Code::kInvalidArgument,
                       "egress can change between lists while the sandbox runs, not to or from none or open");
    e = it->second;
  }
  // The proxy and the DNS responder take the new list only once the rules have it: a change the rules refused is
  // refused whole, and the old list stays in force everywhere.
  auto policy = std::make_shared<const egress::EgressPolicy>(spec);
  e.policy = policy;
  ISB_TRY(firewall_->Set(RulesFor(e)));
  BindSecrets(id, e.org, spec);
  MutexLock lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) it->second.policy = std::move(policy);
  return {};
}

namespace {

bool SameRules(net::SandboxRules a, net::SandboxRules b) {
  std::sort(a.ports.begin(), a.ports.end());
  std::sort(b.ports.begin(), b.ports.end());
  return a.ifname == b.ifname && a.mode == b.mode && a.ports == b.ports && a.all_ports == b.all_ports;
}

}  // namespace

Status EgressService::Assign(const std::string& id, const egress::EgressSpec& spec, const std::string& org) {
  if (!Proxied(spec.mode)) return Error::Of(Code::kInvalidArgument, "only a list is assigned to a prepared network");
  Entry e;
  {
    MutexLock lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return Error::Of(Code::kNotFound, "no network prepared for " + id);
    if (!Proxied(it->second.policy->spec().mode))
      return Error::Of(Code::kInvalidArgument, "the network of " + id + " was prepared for another mode");
    e = it->second;
  }
  const net::SandboxRules before = RulesFor(e);
  auto policy = std::make_shared<const egress::EgressPolicy>(spec);
  e.policy = policy;
  if (const net::SandboxRules after = RulesFor(e); !SameRules(before, after)) ISB_TRY(firewall_->Set(after));
  BindSecrets(id, org, spec);
  MutexLock lock(mu_);
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    it->second.policy = std::move(policy);
    it->second.org = org;
  }
  return {};
}

void EgressService::Release(const std::string& id) {
  MutexLock releasing(veth_mu_);
  Entry e;
  {
    MutexLock lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    e = it->second;
    by_slot_.erase(e.slot);
    by_id_.erase(it);
  }
  minter_->Forget(id);
  proxy_->traffic().Forget(id);
  if (options_.secrets != nullptr) options_.secrets->Unbind(id);
  veths_lost_.erase(e.slot);
  std::string ifname = net::HostIfname(options_.ifname_prefix, e.slot);
  (void)firewall_->Remove(ifname);
  // The veth usually went with the sandbox's namespace; this removes one that did not.
  (void)net::DetachSandbox(ifname);
  pool_.Free(e.slot);
}

Status EgressService::Adopt(const std::string& id, uint32_t slot, const egress::EgressSpec& spec,
                            const std::string& org, NetnsOpener netns) {
  ISB_TRY(pool_.Reserve(slot));
  Entry e{id, slot, std::make_shared<const egress::EgressPolicy>(spec), true, org, std::move(netns)};
  {
    MutexLock lock(mu_);
    by_id_[id] = e;
    by_slot_[slot] = id;
  }
  proxy_->traffic().Track(id);  // from 0: what an earlier daemon counted went with it
  BindSecrets(id, org, spec);
  ISB_TRY(firewall_->Set(RulesFor(e)));
  // A veth of an isb from before the group: another daemon that forwards only sandboxes would drop its traffic.
  if (Status grouped = net::GroupHostEnd(net::HostIfname(options_.ifname_prefix, slot)); !grouped.ok())
    std::fprintf(stderr, "isb: egress: %s: %s\n", id.c_str(), grouped.error().message.c_str());
  // A sandbox started by an isb from before veths were <prefix>-<slot> has a veth that none of the rules match: cut
  // off rather than unconfined, until a restart attaches it again under its name.
  ISB_ASSIGN_OR_RETURN(bool unseparated, net::DetachUnseparatedVeth(options_.ifname_prefix, slot));
  if (unseparated)
    return Error::Msg("its veth " + options_.ifname_prefix + std::to_string(slot) +
                      " was named by an older isb and matched no rule: removed, the sandbox has no network until it "
                      "is restarted");
  if (spec.mode == egress::EgressMode::kOpen) return EnsureForwarding();
  return {};
}

// A default Debian routes nothing (net.ipv4.ip_forward=0), so an open sandbox would reach nothing. Forwarding that is
// on already (a router, a container host) is someone else's: left as it is, with all it forwards. Forwarding isb turns
// on routes sandboxes only: the rules drop every other forwarded packet before it is on, and the marker is written
// before too, so that no crash leaves it on with a later daemon taking it for someone else's.
// It is never turned off again, not even when the last open sandbox goes: an attach or an adoption running meanwhile
// would lose its route, each write of ip_forward resets every interface's forwarding host-wide, and with the drop in
// place forwarding left on routes nothing but sandboxes. The marker tells the next daemon as much.
Status EgressService::EnsureForwarding() {
  MutexLock lock(forwarding_mu_);
  ISB_ASSIGN_OR_RETURN(bool on, net::Ipv4ForwardingOn());
  if (on) return {};
  if (options_.state_dir.empty())
    return Error::Msg(
        "open egress needs IPv4 forwarding (net.ipv4.ip_forward), which is off, and the egress service "
        "has no state directory to record turning it on in");
  const std::string marker = MarkerPath(options_.state_dir);
  ISB_ASSIGN_OR_RETURN(std::string boot, ReadFile(kBootId));
  ISB_TRY(WriteFileAtomically(marker, boot, 0600));
  Status s = firewall_->SetForwardOnlySandboxes(true);
  if (s.ok()) s = net::TurnOnIpv4Forwarding();
  if (s.ok()) return {};
  // Forwarding is off still: neither the marker nor the rules may claim it, since whoever turns it on later is not isb.
  (void)firewall_->SetForwardOnlySandboxes(false);
  ::unlink(marker.c_str());
  return Error{"open egress needs IPv4 forwarding: " + s.error().message +
                   " (let isb serve write /proc/sys, or turn it on before isb serve starts, which leaves the host "
                   "forwarding for others too)",
               s.error().err};
}

std::optional<std::string> EgressService::SandboxAt(uint32_t host_end) {
  if (!subnet_.Contains(host_end) || (host_end - subnet_.base) % 4 != 1) return std::nullopt;
  MutexLock lock(mu_);
  auto it = by_slot_.find((host_end - subnet_.base) / 4);
  if (it == by_slot_.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<const egress::EgressPolicy> EgressService::PolicyOf(const std::string& id, std::string* org) {
  MutexLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  if (org != nullptr) *org = it->second.org;
  return it->second.policy;
}

egress::Admission EgressService::Decide(const std::string& id, const std::string& host, uint16_t port,
                                        const std::string& method, const std::string& path) {
  std::string org;
  auto policy = PolicyOf(id, &org);
  if (!policy) return egress::Admission{false, "the sandbox is gone"};
  egress::Decision d = policy->Check(host, port);
  if (d.verdict == egress::Verdict::kAllow) return egress::Admission{true, ""};
  if (d.verdict == egress::Verdict::kDeny) return egress::Admission{false, d.reason};
  if (!judge_) return egress::Admission{false, d.reason + "; no judge configured (isb serve --judge-url)"};
  // Each sandbox's policy is its own (cache and circuit breaker); the judge hears its org too.
  egress::JudgeVerdict v = judge_->Decide(egress::JudgeQuestion{org, id, id, host, port, method, path});
  // The verdict was for this method and path: each later request on a plain HTTP connection is asked about too.
  return egress::Admission{v.allow, v.reason, true};
}

bool EgressService::NameListed(const std::string& id, std::string_view name) {
  auto policy = PolicyOf(id);
  if (!policy) return false;
  // A block list lets through every port of a name but those blocked: the name resolves unless it is blocked on
  // every port (port 0 matches only entries without one).
  if (policy->spec().mode == egress::EgressMode::kBlocklist)
    return policy->Check(name, 0).verdict != egress::Verdict::kDeny;
  for (uint16_t port : policy->ListedPorts())
    if (policy->Check(name, port).verdict != egress::Verdict::kDeny) return true;
  return false;
}

}  // namespace isb::daemon
