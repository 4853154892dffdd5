// Byte sources: a string in pieces, an fd, an observed source seeing every byte once, in order.
#include "image/byte_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "base/fd.h"

namespace isb::image {
namespace {

std::string ReadAll(ByteSource& in, size_t piece) {
  std::string out;
  std::vector<uint8_t> buf(piece);
  for (;;) {
    Result<size_t> n = in.Read(buf);
    EXPECT_TRUE(n.ok());
    if (!n.ok() || *n == 0) return out;
    out.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
}

TEST(ByteSourceTest, AStringSourceHandsOutItsBytesInPiecesThenZero) {
  StringSource s("hello world");
  EXPECT_EQ(ReadAll(s, 3), "hello world");
  uint8_t b;
  EXPECT_EQ(*s.Read({&b, 1}), 0u);
}

TEST(ByteSourceTest, AnFdSourceReadsAPipeToItsEnd) {
  Result<Pipe> p = MakePipe();
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(::write(p->write.get(), "abcdef", 6), 6);
  p->write.Reset();
  FdSource s(p->read.get());
  EXPECT_EQ(ReadAll(s, 4), "abcdef");
}

TEST(ByteSourceTest, AnFdSourceOnAClosedFdIsAnErrorNamingTheFd) {
  FdSource s(987654);
  uint8_t b[4];
  Result<size_t> n = s.Read(b);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().message, "read of fd 987654: Bad file descriptor");
  EXPECT_EQ(n.error().err, EBADF);
}

TEST(ByteSourceTest, AnObservedSourceShowsEveryByteOnceInOrder) {
  StringSource inner("0123456789");
  std::string seen;
  ObservedSource s(inner, [&](std::span<const uint8_t> b) { seen.append(b.begin(), b.end()); });
  EXPECT_EQ(ReadAll(s, 3), "0123456789");
  EXPECT_EQ(seen, "0123456789");
}

TEST(ByteSourceTest, ReadFullFillsTheBufferAcrossShortReadsAndStopsAtTheEnd) {
  StringSource s("abcdefg");
  uint8_t buf[5];
  EXPECT_EQ(*ReadFull(s, buf), 5u);
  EXPECT_EQ(std::string(buf, buf + 5), "abcde");
  EXPECT_EQ(*ReadFull(s, buf), 2u);
  EXPECT_EQ(std::string(buf, buf + 2), "fg");
}

}  // namespace
}  // namespace isb::image
