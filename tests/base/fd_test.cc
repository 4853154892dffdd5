#include "base/fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace isb {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(Fd, ClosesOnDestruction) {
  int raw;
  {
    Fd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = fd.get();
    ASSERT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(Fd, MoveTransfersOwnership) {
  Fd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int raw = a.get();
  Fd b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.get(), raw);
  Fd c;
  c = std::move(b);
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(IsOpen(raw));
}

TEST(Fd, ReleaseDoesNotClose) {
  Fd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  int raw = a.Release();
  EXPECT_FALSE(a.valid());
  EXPECT_TRUE(IsOpen(raw));
  ::close(raw);
}

TEST(Fd, PipeEndsAreCloseOnExec) {
  auto p = MakePipe();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(::fcntl(p->read.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(::fcntl(p->write.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  ASSERT_EQ(::write(p->write.get(), "x", 1), 1);
  char c = 0;
  ASSERT_EQ(::read(p->read.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
}

}  // namespace
}  // namespace isb
