// The exec control messages both ways: what the daemon writes, init reads back field for field, and what init
// refuses (each rule of DecodeExecRequest) and what the daemon refuses of an event.
#include "engine/exec_protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/exec_client.h"

namespace isb::engine {
namespace {

// What a decode read, copied out of the message (which ends with Decode).
struct Read {
  bool ok = false;
  ExecRequestParts parts{};
  std::vector<std::string> argv, env;
  std::string workdir;
};

Read Decode(std::string message, int nfds) {
  static char* argv[kExecMaxStrings + 1];
  static char* envp[kExecMaxStrings + 1];
  Read r;
  r.ok = DecodeExecRequest(message.data(), message.size(), nfds, &r.parts, argv, envp, kExecMaxStrings + 1);
  if (!r.ok) return r;
  for (char** a = argv; *a != nullptr; ++a) r.argv.emplace_back(*a);
  for (char** e = envp; *e != nullptr; ++e) r.env.emplace_back(*e);
  r.workdir = r.parts.workdir;
  r.parts.workdir = nullptr;
  return r;
}

TEST(ExecProtocolTest, WhatTheDaemonWritesInitReadsBack) {
  ExecSpec spec;
  spec.argv = {"ls", "-l", ""};
  spec.env = {"PATH=/bin", "A="};
  spec.workdir = "/work";
  spec.uid = 1000;
  spec.gid = 1001;
  auto message = EncodeExecRequest(spec);
  ASSERT_TRUE(message.ok()) << message.error().message;
  Read r = Decode(*message, 3);
  ASSERT_TRUE(r.ok);
  EXPECT_FALSE(r.parts.tty);
  EXPECT_EQ(r.argv, spec.argv);
  EXPECT_EQ(r.env, spec.env);
  EXPECT_EQ(r.workdir, "/work");
  EXPECT_EQ(r.parts.header.uid, 1000u);
  EXPECT_EQ(r.parts.header.gid, 1001u);

  spec.tty = true;
  spec.rows = 40;
  spec.cols = 120;
  auto tty = EncodeExecRequest(spec);
  ASSERT_TRUE(tty.ok());
  Read t = Decode(*tty, 0);
  ASSERT_TRUE(t.ok);
  EXPECT_TRUE(t.parts.tty);
  EXPECT_EQ(t.parts.size.rows, 40);
  EXPECT_EQ(t.parts.size.cols, 120);
  EXPECT_EQ(t.argv, spec.argv);
}

TEST(ExecProtocolTest, InitRefusesEveryMalformedRequest) {
  ExecSpec spec;
  spec.argv = {"true"};
  const std::string good = *EncodeExecRequest(spec);
  ASSERT_TRUE(Decode(good, 3).ok);
  EXPECT_FALSE(Decode(good, 0).ok);  // stdio without its three descriptors
  EXPECT_FALSE(Decode(good, 2).ok);
  EXPECT_FALSE(Decode(good + "x", 3).ok);                       // a byte past the working directory
  EXPECT_FALSE(Decode(good.substr(0, good.size() - 1), 3).ok);  // the last string without its NUL
  EXPECT_FALSE(Decode(good.substr(0, 10), 3).ok);               // shorter than the header
  auto with = [&](size_t offset, uint32_t value) {
    std::string m = good;
    std::memcpy(m.data() + offset, &value, sizeof value);
    return m;
  };
  EXPECT_FALSE(Decode(with(offsetof(ExecRequestHeader, magic), 0x33627369), 3).ok);
  EXPECT_FALSE(Decode(with(offsetof(ExecRequestHeader, uid), 65536), 3).ok);
  EXPECT_FALSE(Decode(with(offsetof(ExecRequestHeader, gid), 65536), 3).ok);
  EXPECT_FALSE(Decode(with(offsetof(ExecRequestHeader, argc), 0), 3).ok);
  EXPECT_FALSE(Decode(with(offsetof(ExecRequestHeader, argc), 0xffffffff), 3).ok);  // count + 1 would wrap
  EXPECT_FALSE(Decode(with(offsetof(ExecRequestHeader, envc), 4), 3).ok);           // more strings than there are
  EXPECT_FALSE(Decode(with(offsetof(ExecRequestHeader, strings_len), 1), 3).ok);

  spec.tty = true;
  std::string tty = *EncodeExecRequest(spec);
  ASSERT_TRUE(Decode(tty, 0).ok);
  EXPECT_FALSE(Decode(tty, 3).ok);  // a terminal request carries no descriptors
  const uint16_t zero = 0;
  std::memcpy(tty.data() + sizeof(ExecRequestHeader), &zero, sizeof zero);
  EXPECT_FALSE(Decode(tty, 0).ok);  // no rows
}

TEST(ExecProtocolTest, TheDaemonTakesOnlyWholeEventsOfAKnownKind) {
  ExecEvent in{ExecEventKind::kExited, 256, 0}, out{};
  EXPECT_TRUE(DecodeExecEvent(&in, sizeof in, &out));
  EXPECT_EQ(out.kind, ExecEventKind::kExited);
  EXPECT_EQ(out.value, 256);
  EXPECT_FALSE(DecodeExecEvent(&in, sizeof in - 1, &out));
  in.kind = static_cast<ExecEventKind>(4);
  EXPECT_FALSE(DecodeExecEvent(&in, sizeof in, &out));
  in.kind = static_cast<ExecEventKind>(0);
  EXPECT_FALSE(DecodeExecEvent(&in, sizeof in, &out));
}

}  // namespace
}  // namespace isb::engine
