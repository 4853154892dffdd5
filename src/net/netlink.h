// Rtnetlink, the kernel's own interface for links, addresses and routes: what isb needs to give a sandbox its
// network, spoken in-process (no `ip` processes on the hot path).
#pragma once

#include <netinet/in.h>

#include <functional>
#include <string>

#include "base/fd.h"
#include "base/result.h"

namespace isb::net {

class Netlink {
 public:
  // A socket in the calling thread's network namespace.
  static Result<Netlink> Open();
  // A socket in the network namespace `netns_fd` refers to; the caller's namespace is left as it was.
  static Result<Netlink> OpenIn(int netns_fd);

  // A veth pair: `host` stays in this socket's namespace, `peer` is created straight in `peer_netns_fd`'s.
  Status CreateVeth(const std::string& host, const std::string& peer, int peer_netns_fd);
  // 0 with kNotFound when there is no such link.
  Result<int> IfIndex(const std::string& name);
  Status SetUp(int ifindex);
  Status Rename(int ifindex, const std::string& name);
  Status SetGroup(int ifindex, uint32_t group);
  Status AddAddress(int ifindex, in_addr addr, int prefix_len);
  Status AddDefaultRoute(in_addr gateway, int ifindex);
  // Deleting one end of a veth deletes both.
  Status DeleteLink(int ifindex);

 private:
  explicit Netlink(Fd fd) : fd_(std::move(fd)) {}
  // Sends one request and waits for its acknowledgement; the kernel's errno comes back as the error.
  Status Transact(void* msg, size_t len, const char* what);
  Fd fd_;
  uint32_t seq_ = 0;
};

// Runs `fn` on a short-lived thread that has joined the network namespace `netns_fd`, so the caller's threads never
// change namespace.
Status InNetns(int netns_fd, const std::function<Status()>& fn);

}  // namespace isb::net
