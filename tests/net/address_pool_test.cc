#include "net/address_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace isb::net {
namespace {

TEST(SubnetTest, ParsesTheDefaultAndRefusesEachBadSpelling) {
  Result<Subnet> d = ParseSubnet(kDefaultSandboxSubnet);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->ToString(), "198.18.0.0/15");
  EXPECT_EQ(ParseSubnet("10.1.0.0").error().message, "subnet \"10.1.0.0\": no prefix length (expected a.b.c.d/n)");
  EXPECT_EQ(ParseSubnet("10.1/16").error().message, "subnet \"10.1/16\": not an IPv4 address (expected a.b.c.d/n)");
  EXPECT_EQ(ParseSubnet("0x0a.0.0.0/8").error().message,
            "subnet \"0x0a.0.0.0/8\": not an IPv4 address (expected a.b.c.d/n)");
  EXPECT_EQ(ParseSubnet("10.1.0.0/31").error().message,
            "subnet \"10.1.0.0/31\": prefix length must be 8 to 30 (expected a.b.c.d/n)");
  EXPECT_EQ(ParseSubnet("10.1.0.0/16x").error().message,
            "subnet \"10.1.0.0/16x\": prefix length must be 8 to 30 (expected a.b.c.d/n)");
  EXPECT_EQ(ParseSubnet("10.1.0.1/16").error().message,
            "subnet \"10.1.0.1/16\": host bits are set (expected a.b.c.d/n)");
  EXPECT_EQ(ParseSubnet("10.1.0.1/16").error().code, Code::kInvalidArgument);
}

TEST(SubnetTest, OverlapWithAHostRouteIsRefusedNamingTheRoute) {
  char path[] = "/tmp/isb-routes-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream f(path);
    // /proc/net/route as the kernel prints it: a default route, 192.168.1.0/24 and 198.19.0.0/16.
    f << "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      << "eth0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
      << "eth0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      << "br0\t000013C6\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n";
  }
  Result<std::vector<Subnet>> routes = HostRoutes(path);
  ::unlink(path);
  ASSERT_TRUE(routes.ok()) << routes.error().message;
  ASSERT_EQ(routes->size(), 2u);
  EXPECT_EQ((*routes)[0].ToString(), "192.168.1.0/24");
  EXPECT_EQ((*routes)[1].ToString(), "198.19.0.0/16");
  Status s = CheckNoOverlap(*ParseSubnet("198.18.0.0/15"), *routes);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "sandbox subnet 198.18.0.0/15 overlaps the host route 198.19.0.0/16; choose another with --sandbox-subnet");
  EXPECT_TRUE(CheckNoOverlap(*ParseSubnet("198.18.0.0/16"), *routes).ok());
  EXPECT_FALSE(CheckNoOverlap(*ParseSubnet("192.168.0.0/16"), *routes).ok());
}

TEST(AddressPoolTest, HandsOutEachSlotOnceAndReusesFreedOnesLast) {
  AddressPool pool(*ParseSubnet("10.9.0.0/28"));  // four /30s
  ASSERT_EQ(pool.capacity(), 4u);
  Result<Slot> a = pool.Allocate();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->index, 0u);
  EXPECT_EQ(FormatIpv4(a->host), "10.9.0.1");
  EXPECT_EQ(FormatIpv4(a->sandbox), "10.9.0.2");
  ASSERT_TRUE(pool.Reserve(2).ok());
  EXPECT_EQ(pool.Reserve(2).error().code, Code::kConflict);
  EXPECT_EQ(pool.Reserve(4).error().code, Code::kInvalidArgument);
  EXPECT_EQ(pool.Allocate()->index, 1u);
  pool.Free(0);
  // Next-fit: a freed slot waits until the rest are used, so a new sandbox does not inherit a fresh one's traffic.
  EXPECT_EQ(pool.Allocate()->index, 3u);
  Result<Slot> last = pool.Allocate();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->index, 0u);
  EXPECT_EQ(FormatIpv4(pool.SlotAt(3).sandbox), "10.9.0.14");
  Result<Slot> none = pool.Allocate();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Code::kUnavailable);
  EXPECT_EQ(none.error().message, "every address of the sandbox subnet 10.9.0.0/28 is in use");
}

}  // namespace
}  // namespace isb::net
