// Egress claims: one lock file per claimed thing, in a directory per network namespace, taken under a lock of the
// directory's so that two daemons starting at once see each other's subnets.
#include "daemon/egress_claims.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/file.h"

namespace isb::daemon {
namespace {

constexpr char kSubnetPrefix[] = "subnet-";

// The holder written in a claim file, read back by a daemon it refuses.
std::string HolderOf(int fd) {
  char buf[512];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "another isb";
  std::string text(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return "another isb (" + text + ")";
}

// Opens `path` and locks it without waiting. A file a live holder locks: the fd (not locked) in *busy, no error.
Result<Fd> Lock(const std::string& path, Fd* busy) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::Sys("open " + path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
  if (errno != EWOULDBLOCK) return Error::Sys("flock " + path);
  *busy = std::move(fd);
  return Fd();
}

Status Record(const Fd& fd, const std::string& path, const std::string& holder) {
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size()))
    return Error::Sys("write " + path);
  return {};
}

}  // namespace

Result<EgressClaims> EgressClaims::Take(const std::string& dir, const std::string& table,
                                        const std::string& ifname_prefix, const net::Subnet& subnet,
                                        const std::string& holder) {
  struct stat ns {};
  if (::stat("/proc/thread-self/ns/net", &ns) != 0) return Error::Sys("stat /proc/thread-self/ns/net");
  const std::string here = dir + "/net-" + std::to_string(ns.st_ino);
  ISB_TRY(MakeDirs(here, 0700));
  // The directory's own lock, held while claiming: a subnet is checked against every other one and then taken.
  Fd guard(::open((here + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!guard.valid()) return Error::Sys("open " + here + "/.lock");
  if (::flock(guard.get(), LOCK_EX) != 0) return Error::Sys("flock " + here + "/.lock");

  EgressClaims claims;
  struct Named {
    std::string file, what, flag;
  };
  for (const Named& n :
       {Named{"table-" + table, "the nftables table \"" + table + "\"", "--egress-table"},
        Named{"veth-" + ifname_prefix, "the veth prefix \"" + ifname_prefix + "\"", "--egress-table"}}) {
    const std::string path = here + "/" + n.file;
    Fd busy;
    ISB_ASSIGN_OR_RETURN(Fd fd, Lock(path, &busy));
    if (!fd.valid())
      return Error::Of(Code::kConflict, n.what + " is held by " + HolderOf(busy.get()) +
                                            " on this host; give this daemon another with " + n.flag);
    ISB_TRY(Record(fd, path, holder));
    claims.held_.push_back(std::move(fd));
  }

  const std::string mine =
      std::string(kSubnetPrefix) + net::FormatIpv4(subnet.base) + "-" + std::to_string(subnet.prefix_len);
  DIR* d = ::opendir(here.c_str());
  if (d == nullptr) return Error::Sys("opendir " + here);
  std::vector<std::string> others;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.starts_with(kSubnetPrefix) && name != mine) others.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : others) {
    const std::string path = here + "/" + name;
    std::string text = name.substr(std::strlen(kSubnetPrefix));
    const size_t dash = text.rfind('-');
    if (dash == std::string::npos) continue;
    text[dash] = '/';
    Result<net::Subnet> other = net::ParseSubnet(text);
    if (!other.ok() || !other->Overlaps(subnet)) continue;
    Fd busy;
    ISB_ASSIGN_OR_RETURN(Fd stale, Lock(path, &busy));
    if (stale.valid()) {  // its holder is gone
      ::unlink(path.c_str());
      continue;
    }
    return Error::Of(Code::kConflict, "the sandbox subnet " + subnet.ToString() + " overlaps " + other->ToString() +
                                          ", held by " + HolderOf(busy.get()) +
                                          " on this host; give this daemon another with --sandbox-subnet");
  }
  const std::string path = here + "/" + mine;
  Fd busy;
  ISB_ASSIGN_OR_RETURN(Fd fd, Lock(path, &busy));
  if (!fd.valid())
    return Error::Of(Code::kConflict, "the sandbox subnet " + subnet.ToString() + " is held by " +
                                          HolderOf(busy.get()) +
                                          " on this host; give this daemon another with --sandbox-subnet");
  ISB_TRY(Record(fd, path, holder));
  claims.held_.push_back(std::move(fd));
  return claims;
}

}  // namespace isb::daemon
