// ForkWipedBytes: the environment variable is gone from this process's environment, and a forked child sees zeroes
// where the parent still has the bytes.
#include "secrets/fork_wiped_bytes.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace isb::secrets {
namespace {

TEST(ForkWipedBytesTest, TheVariableIsWipedAndUnsetAndAForkedChildGetsZeroes) {
  ASSERT_EQ(::setenv("ISB_FORK_WIPED_TEST", "AGE-SECRET-KEY-1TEST", 1), 0);
  char* was = std::getenv("ISB_FORK_WIPED_TEST");
  auto key = ForkWipedBytes::TakeEnv("ISB_FORK_WIPED_TEST");
  ASSERT_TRUE(key.ok()) << key.error().message;
  EXPECT_EQ(std::getenv("ISB_FORK_WIPED_TEST"), nullptr);
  // setenv's copy is overwritten where it lay (glibc keeps it allocated).
  EXPECT_EQ(std::string(was), "xxxxxxxxxxxxxxxxxxxx");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(key->Take() == std::string(20, '\0') ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child saw the bytes";
  EXPECT_EQ(key->Take(), "AGE-SECRET-KEY-1TEST");
  EXPECT_TRUE(key->empty());
}

// An initial environment may name a variable twice: both entries are wiped where they lie and both are gone.
TEST(ForkWipedBytesTest, EveryEntryOfADuplicatedVariableIsWipedAndRemoved) {
  char first[] = "ISB_FORK_WIPED_TWICE=AGE-SECRET-KEY-1ONE";
  char other[] = "PATH=/bin";
  char second[] = "ISB_FORK_WIPED_TWICE=AGE-SECRET-KEY-1TWO";
  char* entries[] = {first, other, second, nullptr};
  char** saved = environ;
  environ = entries;
  auto key = ForkWipedBytes::TakeEnv("ISB_FORK_WIPED_TWICE");
  const char* left = std::getenv("ISB_FORK_WIPED_TWICE");
  const char* path = std::getenv("PATH");
  environ = saved;
  ASSERT_TRUE(key.ok()) << key.error().message;
  EXPECT_EQ(left, nullptr);
  EXPECT_STREQ(path, "/bin");
  EXPECT_EQ(std::string(first), "ISB_FORK_WIPED_TWICE=xxxxxxxxxxxxxxxxxxx");
  EXPECT_EQ(std::string(second), "ISB_FORK_WIPED_TWICE=xxxxxxxxxxxxxxxxxxx");
  EXPECT_EQ(entries[0], other);
  EXPECT_EQ(entries[1], nullptr);
  EXPECT_EQ(key->Take(), "AGE-SECRET-KEY-1ONE");
}

TEST(ForkWipedBytesTest, AnUnsetVariableIsEmpty) {
  ::unsetenv("ISB_FORK_WIPED_UNSET");
  auto key = ForkWipedBytes::TakeEnv("ISB_FORK_WIPED_UNSET");
  ASSERT_TRUE(key.ok());
  EXPECT_TRUE(key->empty());
  EXPECT_EQ(key->Take(), "");
}

}  // namespace
}  // namespace isb::secrets
