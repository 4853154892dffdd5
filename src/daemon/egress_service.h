// Egress for the daemon: gives each sandbox with an egress list (or open egress) its network, keeps the host-side
// rules in step, and runs the proxy and the DNS responder that are such a sandbox's only way out. The proxy and the
// DNS responder learn the sandbox from the address a connection or query arrives at (the host end of its veth).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <thread>

#include <vector>

#include "base/fd.h"
#include "base/mutex.h"
#include "base/result.h"
#include "daemon/egress_claims.h"
#include "daemon/netns_dial.h"
#include "daemon/secret_broker.h"
#include "egress/cert_minter.h"
#include "egress/dialer.h"
#include "egress/judge.h"
#include "egress/pin.h"
#include "egress/policy.h"
#include "egress/proxy.h"
#include "egress/sandbox_traffic.h"
#include "net/address_pool.h"
#include "net/dns_server.h"
#include "net/firewall.h"

namespace isb::daemon {

struct EgressOptions {
  std::string subnet = net::kDefaultSandboxSubnet;
  std::string table = "isb";          // the nftables table (inet family) of this daemon
  std::string ifname_prefix = "isb";  // host ends of this daemon's veths
  std::vector<egress::Pin> pins;
  uint16_t explicit_proxy_port = 3128;  // HTTP_PROXY inside a sandbox points at the host end on this port
  // The judge of names listed under `judge`; none when its url is empty (such names are then refused). It dials
  // through this service's pins.
  egress::JudgeOptions judge;
  std::string upstream_ca_file;  // --egress-ca: trusted for intercepted origins beside the system roots
  // The resolvers an open sandbox's DNS queries are relayed to (--dns-upstream). Empty: the host's /etc/resolv.conf
  // nameservers, read at start.
  std::vector<net::DnsUpstream> dns_upstreams;
  // The daemon's state directory: where the service records (kForwardingMarker) that it turned on the host's IPv4
  // forwarding, so that a later daemon knows the forwarding is isb's. Without one, open egress on a host that
  // does not forward is refused.
  std::string state_dir;
  // Where the table, veth prefix and subnet are claimed against other daemons on the host (egress_claims.h), and
  // who this daemon is in a refusal of another's ("pid N, state dir D").
  std::string claim_dir = kEgressClaimDir;
  std::string holder;
  // A connection refused: called for the first refusal of each sandbox and target every 30 s (the proxy's window),
  // from the proxy's threads, with the sandbox's org; for the audit log.
  std::function<void(const std::string& id, const std::string& org, const std::string& target,
                     const std::string& reason)>
      on_refusal;
  // The host's side of the sandboxes' networks changed under the daemon, by another program: `reason` is
  // "rules_deleted" or "rules_changed" (the table was restored at once). Called from the watch thread for each
  // sandbox with a network (stopped ones included: the service does not know which stopped); for their history.
  // A sandbox prepared with no org (a pooled one, until Assign names its org) is reported to nobody, here and in
  // on_refusal.
  std::function<void(const std::string& id, const std::string& org, const std::string& reason)> on_network_event;
  int watch_interval_ms = 2000;  // how often the table is looked at
  // Every relayed HTTP message passes it (the secrets filter); null: messages go on unchanged.
  std::shared_ptr<egress::MessageFilter> filter;
  // Told of each sandbox's egress spec as it is prepared, assigned, changed or adopted, and of its release: the
  // proxy swaps its secrets' placeholders. Null: a spec's secrets are intercepted and relayed unchanged.
  SecretBroker* secrets = nullptr;
};

// In EgressOptions::state_dir while IPv4 forwarding is on because an isb turned it on: the boot's id
// (kernel.random.boot_id), since a boot turns forwarding off again.
inline constexpr char kForwardingMarker[] = "ip_forward_by_isb";

// What a sandbox with a network is given before it starts.
struct SandboxNet {
  uint32_t slot = 0;
  std::string host_address;  // the gateway, proxy and DNS server, as seen from inside
  std::string sandbox_address;
  std::vector<std::string> env;  // HTTP_PROXY and friends (lists only)
  std::string resolv_conf;       // /etc/resolv.conf for the sandbox: the responder at the host end
  std::string ca_pem;            // the sandbox's own CA certificate, for its trust store (lists only)
};

class EgressService {
 public:
  static Result<std::unique_ptr<EgressService>> Start(EgressOptions options);
  ~EgressService();  // stops the proxy and the DNS responder, removes the rules; veths go with their sandboxes

  // Reserves an address for `id` of org `org` with `spec` (mode list or open; none needs nothing) before the sandbox
  // starts. The org names the sandbox to the judge (and keys its verdicts).
  Result<SandboxNet> Prepare(const std::string& id, const egress::EgressSpec& spec, const std::string& org);
  // Once the sandbox runs, with `netns` opening its network namespace: its veth (in that namespace) and its rules.
  // On failure what was made is undone and the reservation kept (the sandbox is stopped, and a later start attaches
  // again; Release gives it up). `netns` is kept, and called again from the watch thread to put back a veth deleted
  // under the service (a sandbox that no longer runs gets none back), until Release or the service's end: what it
  // uses must outlive the service. An unset `netns` is refused (kInvalidArgument).
  Status Attach(const std::string& id, NetnsOpener netns);
  // A running sandbox's new spec (same mode family): the rules take it in one apply, then new connections and
  // queries see it. When the rules cannot take it, nothing does: the error, and the old spec stays in force.
  Status Update(const std::string& id, const egress::EgressSpec& spec);
  // A sandbox launched ahead with a network (Prepare, Attach) taken by a create: its policy and org become the
  // create's. The rules are applied again only when they differ (a list of other ports); when they cannot be, the
  // error, and nothing changed. Lists only, as Update.
  Status Assign(const std::string& id, const egress::EgressSpec& spec, const std::string& org);
  // Rules, veth and address of `id` go; unknown ids are fine.
  void Release(const std::string& id);
  // At start-up, a sandbox adopted with the slot it had; `netns`, when it runs: what opens its network namespace
  // (its veth is then watched as an attached one's, as Attach's `netns`). A veth of it that an older isb named
  // <prefix><slot> (which no rule matches) is removed, and the error says so.
  Status Adopt(const std::string& id, uint32_t slot, const egress::EgressSpec& spec, const std::string& org,
               NetnsOpener netns = nullptr);

  uint16_t proxy_port() const;
  uint16_t dns_port() const;
  const egress::ProxyStats& proxy_stats() const;
  // The bytes the proxy relayed for `id` each way since it was given its network (or adopted by this daemon);
  // nullopt for a sandbox without one. Traffic an open sandbox sends without the proxy (routed) is not in it.
  std::optional<egress::TrafficTotals> NetworkBytes(const std::string& id) const;
  // Queries the DNS responder answered, and dropped (malformed, or past its bounds).
  uint64_t dns_answered() const;
  uint64_t dns_dropped() const;
  // The sandbox's own CA certificate (PEM), which the proxy's certificates for intercepted names chain to; for the
  // sandbox's trust store.
  Result<std::string> SandboxCaPem(const std::string& id);

 private:
  struct Entry {
    std::string id;
    uint32_t slot = 0;
    std::shared_ptr<const egress::EgressPolicy> policy;
    bool attached = false;
    std::string org;
    // Opens the sandbox's network namespace, since Attach (or an adoption of a running sandbox): while it runs, a
    // veth someone deleted is put back there. Once it has stopped, its veth went with its namespace, and this fails.
    NetnsOpener netns{};
  };
  explicit EgressService(EgressOptions options, net::Subnet subnet, egress::Dialer dialer, EgressClaims claims);
  Status StartServers();
  // The watch thread: CheckNetwork every watch_interval_ms.
  void Watch();
  // Restores a table deleted or changed by someone else; logs it and calls on_network_event for each sandbox with a
  // network. Then CheckVeths.
  void CheckNetwork();
  // Puts back the veth of each attached sandbox whose host end someone deleted, logs it and calls
  // on_network_event(id, org, "veth_deleted").
  void CheckVeths();
  net::SandboxRules RulesFor(const Entry& e) const;
  void BindSecrets(const std::string& id, const std::string& org, const egress::EgressSpec& spec);
  // Open sandboxes are routed by the host: turns its IPv4 forwarding on if it is off (see the .cc).
  Status EnsureForwarding();
  // Lookups for the proxy and the DNS responder.
  std::optional<std::string> SandboxAt(uint32_t host_end);
  std::shared_ptr<const egress::EgressPolicy> PolicyOf(const std::string& id, std::string* org = nullptr);
  bool NameListed(const std::string& id, std::string_view name);
  egress::Admission Decide(const std::string& id, const std::string& host, uint16_t port, const std::string& method,
                           const std::string& path);

  EgressClaims claims_;  // first in, last out: held until the rules are gone
  EgressOptions options_;
  net::Subnet subnet_;
  net::AddressPool pool_;
  egress::Dialer dialer_;
  std::unique_ptr<egress::Judge> judge_;  // null: no judge configured
  std::unique_ptr<net::Firewall> firewall_;
  std::shared_ptr<egress::CertMinter> minter_ = std::make_shared<egress::CertMinter>();
  std::unique_ptr<egress::Proxy> proxy_;
  std::unique_ptr<net::DnsServer> dns_;
  Mutex forwarding_mu_;  // one EnsureForwarding at a time
  Mutex mu_;
  // Attach, Release and CheckVeths: no veth is put back for a sandbox being attached again or released.
  Mutex veth_mu_;
  std::set<uint32_t> veths_lost_ ISB_GUARDED_BY(veth_mu_);  // slots whose veth could not be put back, reported once
  std::map<std::string, Entry> by_id_ ISB_GUARDED_BY(mu_);
  std::map<uint32_t, std::string> by_slot_ ISB_GUARDED_BY(mu_);
  Mutex watch_mu_;
  CondVar watch_cv_;
  bool watch_stop_ ISB_GUARDED_BY(watch_mu_) = false;
  std::thread watch_;
};

// The spec's egress field as the daemon stores it and gives it back.
Result<egress::EgressSpec> ParseSandboxEgress(const nlohmann::json& value);

}  // namespace isb::daemon
