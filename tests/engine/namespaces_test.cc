#include "engine/namespaces.h"

#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "must_work.h"

namespace isb::engine {
namespace {

TEST(Hostname, Validation) {
  EXPECT_TRUE(ValidateHostname("sandbox").ok());
  EXPECT_TRUE(ValidateHostname("a-1").ok());
  for (const char* bad : {"", "-a", "a-", "a.b", "a b", "x/y"}) EXPECT_FALSE(ValidateHostname(bad).ok()) << bad;
  EXPECT_FALSE(ValidateHostname(std::string(64, 'a')).ok());
}

// A child in new uts and net namespaces sets its hostname and brings loopback up; the host's are untouched.
TEST(Namespaces, UtsAndNetAreTheChildsOwn) {
  ISB_REQUIRE_ROOT();
  utsname before{};
  ::uname(&before);
  int pidfd = -1;
  pid_t pid = CloneWithPidfd(CLONE_NEWUTS | CLONE_NEWNET, &pidfd);
  ASSERT_GE(pid, 0) << std::strerror(-pid);
  if (pid == 0) {
    if (SetHostname("isb-unit", 8) != 0) ::_exit(1);
    if (BringUpLoopback() != 0) ::_exit(2);
    int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    ifreq req{};
    std::memcpy(req.ifr_name, "lo", 3);
    if (::ioctl(fd, SIOCGIFFLAGS, &req) != 0 || !(req.ifr_flags & IFF_UP)) ::_exit(3);
    struct if_nameindex* ifs = ::if_nameindex();
    int count = 0;
    for (auto* i = ifs; i->if_index != 0; ++i) ++count;
    ::_exit(count == 1 ? 0 : 4);  // loopback only
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(pidfd);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  utsname after{};
  ::uname(&after);
  EXPECT_STREQ(before.nodename, after.nodename);
}

}  // namespace
}  // namespace isb::engine
