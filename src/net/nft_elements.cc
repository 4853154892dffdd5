// An nfnetlink batch built by hand: BATCH_BEGIN (with the generation the batch was made for), DELSETELEM and
// NEWSETELEM messages of at most kKeysPerMessage keys (each acknowledged), BATCH_END. The kernel applies the messages
// between begin and end as one transaction and answers every message that asked for an acknowledgement, failed or not,
// after the whole batch ran.
#include "net/nft_elements.h"

// glibc's netinet/in.h before the kernel's headers, which then leave its definitions alone.
#include <netinet/in.h>
// clang-format off
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
// clang-format on
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "base/fd.h"
#include "net/netlink_message.h"

namespace isb::net {
namespace {

void Header(NetlinkMessage& m, uint8_t family, uint16_t res_id) {
  auto* g = m.Fixed<nfgenmsg>();
  g->nfgen_family = family;
  g->version = NFNETLINK_V0;
  g->res_id = htons(res_id);
}

void Append(std::string& batch, NetlinkMessage& m, uint32_t seq) {
  const nlmsghdr* h = m.Finish(seq);
  batch.append(reinterpret_cast<const char*>(h), m.size());
}

}  // namespace

Result<std::string> IfnameKey(const std::string& ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ || ifname.find('\0') != std::string::npos)
    return Error::Of(Code::kInvalidArgument, "interface name '" + ifname + "' is not one an interface can have");
  std::string key(IFNAMSIZ, '\0');
  std::memcpy(key.data(), ifname.data(), ifname.size());
  return key;
}

Result<std::string> IfnamePortKey(const std::string& ifname, uint16_t port) {
  ISB_ASSIGN_OR_RETURN(std::string key, IfnameKey(ifname));
  const uint16_t be = htons(port);
  char reg[4] = {};
  std::memcpy(reg, &be, sizeof be);
  key.append(reg, sizeof reg);
  return key;
}

namespace {

// A netfilter netlink socket of the calling thread's namespace, its answers awaited at most 2 s: a lost answer must
// not hold the firewall's lock for good. Batches up to 4 MiB (a sandbox's 16384 listed ports take 512 KiB).
Result<Fd> OpenNfnetlink() {
  const int raw = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
  if (raw < 0) return Error::Sys("nfnetlink socket");
  Fd fd(raw);
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) return Error::Sys("nfnetlink bind");
  int one = 1;
  // Errors come back with only the failed message's header, not all of it.
  (void)::setsockopt(fd.get(), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  timeval tv{2, 0};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) return Error::Sys("nfnetlink timeout");
  int sndbuf = 4 << 20;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) != 0)
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);  // without CAP_NET_ADMIN
  return fd;
}

Status Send(int fd, const std::string& bytes, const std::string& what) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
      static_cast<ssize_t>(bytes.size()))
    return Error::Sys("nfnetlink send (" + what + ")");
  return {};
}

// Keys per element message: each element takes at most 36 bytes, and a message's nest of elements must stay under
// the 64 KiB an attribute's length can say.
constexpr size_t kKeysPerMessage = 1024;

}  // namespace

uint32_t NextGeneration(uint32_t generation) { return generation + 1 == 0 ? 1 : generation + 1; }

Result<uint32_t> RulesetGeneration() {
  ISB_ASSIGN_OR_RETURN(Fd fd, OpenNfnetlink());
  NetlinkMessage m((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETGEN, NLM_F_ACK);
  Header(m, AF_UNSPEC, 0);
  std::string bytes;
  Append(bytes, m, 1);
  ISB_TRY(Send(fd.get(), bytes, "asking the ruleset's generation"));
  std::optional<uint32_t> generation;
  alignas(nlmsghdr) char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::Sys("nfnetlink receive (the ruleset's generation)");
    }
    for (auto* r = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(r, static_cast<unsigned>(n)); r = NLMSG_NEXT(r, n)) {
      if (r->nlmsg_seq != 1) continue;
      if (r->nlmsg_type == NLMSG_ERROR) {
        const int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
        if (err != 0) return Error::Sys("the ruleset's generation", err);
        if (!generation) return Error::Msg("the ruleset's generation: the kernel sent none");
        return *generation;
      }
      if (r->nlmsg_type != ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWGEN)) continue;
      const size_t header = NLMSG_ALIGN(sizeof(nfgenmsg));
      auto* a = reinterpret_cast<rtattr*>(static_cast<char*>(NLMSG_DATA(r)) + header);
      int left = static_cast<int>(r->nlmsg_len) - static_cast<int>(NLMSG_HDRLEN + header);
      for (; RTA_OK(a, left); a = RTA_NEXT(a, left)) {
        if ((a->rta_type & NLA_TYPE_MASK) == NFTA_GEN_ID && RTA_PAYLOAD(a) == sizeof(uint32_t)) {
          uint32_t be;
          std::memcpy(&be, RTA_DATA(a), sizeof be);
          generation = ntohl(be);
        }
      }
    }
  }
}

Status ChangeSetElements(const std::string& table, const std::vector<SetElement>& remove,
                         const std::vector<SetElement>& add, uint32_t generation) {
  // Per set, in the order given: deletes first, so that a change may delete and add the same key.
  std::map<std::string, std::vector<const std::string*>> by_set[2];
  for (const SetElement& e : remove) by_set[0][e.set].push_back(&e.key);
  for (const SetElement& e : add) by_set[1][e.set].push_back(&e.key);
  if (by_set[0].empty() && by_set[1].empty()) return {};
  ISB_ASSIGN_OR_RETURN(Fd fd, OpenNfnetlink());

  std::string batch;
  uint32_t seq = 0;
  NetlinkMessage begin(NFNL_MSG_BATCH_BEGIN, 0);
  Header(begin, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  begin.Scalar<uint32_t>(NFNL_BATCH_GENID, htonl(generation));
  Append(batch, begin, ++seq);
  const uint32_t first = seq + 1;
  std::map<uint32_t, std::string> what;  // seq -> "deleting from SET" / "adding to SET"
  for (int op = 0; op < 2; ++op) {
    for (const auto& [set, keys] : by_set[op]) {
      for (size_t from = 0; from < keys.size(); from += kKeysPerMessage) {
        const uint16_t type = (NFNL_SUBSYS_NFTABLES << 8) | (op == 0 ? NFT_MSG_DELSETELEM : NFT_MSG_NEWSETELEM);
        NetlinkMessage m(type, static_cast<uint16_t>(NLM_F_ACK | (op == 0 ? 0 : NLM_F_CREATE | NLM_F_EXCL)));
        Header(m, NFPROTO_INET, 0);
        m.Str(NFTA_SET_ELEM_LIST_TABLE, table);
        m.Str(NFTA_SET_ELEM_LIST_SET, set);
        const size_t elements = m.BeginNest(NLA_F_NESTED | NFTA_SET_ELEM_LIST_ELEMENTS);
        for (size_t i = from; i < std::min(keys.size(), from + kKeysPerMessage); ++i) {
          const size_t elem = m.BeginNest(NLA_F_NESTED | NFTA_LIST_ELEM);
          const size_t k = m.BeginNest(NLA_F_NESTED | NFTA_SET_ELEM_KEY);
          m.Attr(NFTA_DATA_VALUE, keys[i]->data(), keys[i]->size());
          m.EndNest(k);
          m.EndNest(elem);
        }
        m.EndNest(elements);
        if (m.overflowed()) return Error::Msg("an element message of set " + set + " is over 64 KiB");
        Append(batch, m, ++seq);
        what[seq] = (op == 0 ? "deleting elements from set " : "adding elements to set ") + set;
      }
    }
  }
  const uint32_t last = seq;
  NetlinkMessage end(NFNL_MSG_BATCH_END, 0);
  Header(end, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  Append(batch, end, ++seq);
  ISB_TRY(Send(fd.get(), batch, "table inet " + table));

  std::set<uint32_t> waiting;
  for (uint32_t s = first; s <= last; ++s) waiting.insert(s);
  Status first_error;
  alignas(nlmsghdr) char buf[16384];
  while (!waiting.empty()) {
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = Error::Sys("nfnetlink receive (table inet " + table + ")");
      e.code = Code::kUnavailable;  // sent: made or not, no one knows
      return e;
    }
    for (auto* r = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(r, static_cast<unsigned>(n)); r = NLMSG_NEXT(r, n)) {
      if (r->nlmsg_type != NLMSG_ERROR) continue;
      const int err = -reinterpret_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
      if (r->nlmsg_seq < first || r->nlmsg_seq > last) {
        // The batch as a whole refused (its begin or end): nothing else is answered.
        if (err == ERESTART)
          return Error::Of(Code::kConflict, "table inet " + table + ": the ruleset changed since generation " +
                                                std::to_string(generation));
        if (err != 0) return Error::Sys("nfnetlink batch (table inet " + table + ")", err);
        continue;
      }
      waiting.erase(r->nlmsg_seq);
      if (err != 0 && first_error.ok()) {
        Error e = Error::Sys(what[r->nlmsg_seq] + " of table inet " + table, err);
        if (err == ENOENT) e.code = Code::kNotFound;
        if (err == EEXIST) e.code = Code::kConflict;
        first_error = e;
      }
    }
  }
  return first_error;
}

}  // namespace isb::net
