#include "base/units.h"

#include <gtest/gtest.h>

namespace isb {
namespace {

TEST(ParseSize, AcceptsBinaryMultiples) {
  EXPECT_EQ(*ParseSize("65536"), 65536u);
  EXPECT_EQ(*ParseSize("64K"), 64u << 10);
  EXPECT_EQ(*ParseSize("512M"), 512ull << 20);
  EXPECT_EQ(*ParseSize("512MiB"), 512ull << 20);
  EXPECT_EQ(*ParseSize("2g"), 2ull << 30);
  EXPECT_EQ(*ParseSize("1T"), 1ull << 40);
}

TEST(ParseSize, RefusesGarbageNamingTheInput) {
  for (const char* bad : {"", "M", "12Q", "-1", "1.5G", "1MM", "99999999999999999999", "20000000T"}) {
    auto r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.find("invalid size '" + std::string(bad) + "'"), 0u) << r.error().message;
  }
}

TEST(ParseDuration, Units) {
  using std::chrono::milliseconds;
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("30s"), milliseconds(30000));
  EXPECT_EQ(*ParseDuration("30"), milliseconds(30000));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("5m"), milliseconds(300000));
  EXPECT_EQ(*ParseDuration("2h"), milliseconds(7200000));
  EXPECT_EQ(*ParseDuration("1d"), milliseconds(86400000));
  EXPECT_EQ(*ParseDuration("0"), milliseconds(0));
  for (const char* bad : {"", "s", "1x", "-5s", "1.2345s", ".5s"}) EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
}

TEST(ParseCpus, Millicpus) {
  EXPECT_EQ(*ParseCpus("2"), 2000u);
  EXPECT_EQ(*ParseCpus("0.5"), 500u);
  EXPECT_EQ(*ParseCpus("0.001"), 1u);
  for (const char* bad : {"0", "0.0001", "", "-1", "abc", "1001"}) EXPECT_FALSE(ParseCpus(bad).ok()) << bad;
}

}  // namespace
}  // namespace isb

namespace isb {
namespace {

TEST(ParseIds, UidAndOptionalGid) {
  EXPECT_EQ(*ParseIds("1000"), (std::pair<uint32_t, uint32_t>{1000, 1000}));
  EXPECT_EQ(*ParseIds("0:5"), (std::pair<uint32_t, uint32_t>{0, 5}));
  for (const char* bad : {"", "root", "1000:", ":1", "65536", "1:65536", "-1", "1:2:3"})
    EXPECT_EQ(ParseIds(bad).error().message.find("invalid user '" + std::string(bad) + "'"), 0u) << bad;
}

TEST(ParseDecimal, TheWholeTextAsDigitsInRange) {
  EXPECT_EQ(ParseDecimal<uint32_t>("0"), std::optional<uint32_t>(0));
  EXPECT_EQ(ParseDecimal<uint32_t>("4294967295"), std::optional<uint32_t>(4294967295u));
  EXPECT_EQ(ParseDecimal<uint32_t>("4294967296"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>("-5"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>("+5"), std::nullopt);
  for (const char* bad : {"", " 1", "1 ", "1\n", "0x10", "12a"})
    EXPECT_EQ(ParseDecimal<uint64_t>(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace isb
