// What one daemon's egress owns on a host, claimed so that a second daemon cannot take it: in a network namespace, its
// nftables table, its veths' name prefix and its sandbox subnet (no two live daemons' subnets may overlap).
#pragma once

#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "net/address_pool.h"

namespace isb::daemon {

// Where the claims live: tmpfs, so a boot forgets them; one directory per network namespace (its inode).
inline constexpr char kEgressClaimDir[] = "/run/isb/egress";

// The claims of one daemon, held (each an flock on a file naming the holder) until it is destroyed or its process
// ends, whichever comes first: a crashed daemon's claims are free at once.
class EgressClaims {
 public:
  // Claims `table`, `ifname_prefix` and `subnet` in the calling thread's network namespace for `holder` (a sentence
  // such as "pid 12, state dir /var/lib/isb"). kConflict when a live daemon holds the table or prefix, or a subnet
  // overlapping this one: the message names the holder and the flag to give this daemon instead.
  static Result<EgressClaims> Take(const std::string& dir, const std::string& table, const std::string& ifname_prefix,
                                   const net::Subnet& subnet, const std::string& holder);

 private:
  std::vector<Fd> held_;
};

}  // namespace isb::daemon
