// Terminal sessions that outlive their connection: the output ring's exact contents, what a connection that attaches
// is sent, a takeover, the grace period on a clock of the test's own, and a reattach by another caller.
#include "api/terminal_sessions.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace isb::api {
namespace {

using namespace std::chrono_literals;
using Time = std::chrono::steady_clock::time_point;

// What a connection was sent, in order: "text:JSON", "out:BYTES", "close:CODE:REASON".
class FakeScreen : public TerminalScreen {
 public:
  bool Text(std::string_view message) override {
    sent.push_back("text:" + std::string(message));
    return true;
  }
  bool Output(std::string_view bytes) override {
    sent.push_back("out:" + std::string(bytes));
    return true;
  }
  void Close(uint16_t code, std::string_view reason) override {
    sent.push_back("close:" + std::to_string(code) + ":" + std::string(reason));
  }
  std::vector<std::string> sent;
};

// A steady clock the test moves.
struct FakeClock {
  std::atomic<int64_t> ms{1000};
  SteadyClock Fn() {
    return [this] { return Time(std::chrono::milliseconds(ms.load())); };
  }
};

const TerminalOwner kOwner{"token:7", "acme", "box"};

TEST(OutputRingTest, KeepsExactlyTheLatestBytesCountedFromTheStart) {
  OutputRing ring(8);
  ring.Append("abcdef");
  EXPECT_EQ(ring.data(), "abcdef");
  ring.Append("ghij");
  EXPECT_EQ(ring.data(), "cdefghij");
  EXPECT_EQ(ring.start(), 2u);
  EXPECT_EQ(ring.end(), 10u);
  EXPECT_EQ(ring.From(5), std::make_pair(uint64_t{5}, std::string_view("fghij")));
  EXPECT_EQ(ring.From(10), std::make_pair(uint64_t{10}, std::string_view("")));
  // Dropped already, or never sent: all that is kept, from where it starts.
  EXPECT_EQ(ring.From(1), std::make_pair(uint64_t{2}, std::string_view("cdefghij")));
  EXPECT_EQ(ring.From(11), std::make_pair(uint64_t{2}, std::string_view("cdefghij")));
  // One piece larger than the ring: its tail.
  ring.Append("0123456789AB");
  EXPECT_EQ(ring.data(), "456789AB");
  EXPECT_EQ(ring.end(), 22u);
}

TEST(OutputRingTest, NeverStartsInsideAUtf8Character) {
  OutputRing ring(4);
  ring.Append("a\xC3\xA9\xE2\x82\xAC");  // "aé€": the cut at 2 falls inside é, which goes whole
  EXPECT_EQ(ring.data(), "\xE2\x82\xAC");
  EXPECT_EQ(ring.start(), 3u);
  ring.Append("\xF0\x9F\x99\x82");  // 🙂 (4 bytes): the cut at 3 falls inside it; nothing of € is kept either
  EXPECT_EQ(ring.data(), "\xF0\x9F\x99\x82");
  ring.Append("b");  // a cut inside 🙂 drops the whole character
  EXPECT_EQ(ring.data(), "b");
  EXPECT_EQ(ring.end(), 11u);
}

TEST(OutputRingTest, HoldsSixtyFourKibByDefault) {
  OutputRing ring;
  ring.Append(std::string(70000, 'x'));
  ring.Append("end");
  EXPECT_EQ(ring.data().size(), kTerminalRingBytes);
  EXPECT_EQ(ring.data().size(), 65536u);
  EXPECT_EQ(ring.data().substr(65533), "end");
  EXPECT_EQ(ring.start(), 70003u - 65536u);
}

TEST(TerminalSessionTest, AReattachGetsTheSessionMessageThenWhatItMissedThenLiveOutput) {
  FakeClock clock;
  TerminalSession session(kOwner, 60s, clock.Fn());
  FakeScreen first, second;
  session.Attach(&first, 0);
  EXPECT_TRUE(first.sent.empty());  // the id comes with the exec's announcement
  session.Announce("ts-1");
  session.Output("$ export X=42\r\n");
  session.Detach(&first, /*end=*/false);
  session.Output("late\r\n");
  EXPECT_FALSE(session.Over());
  session.Attach(&second, 15);  // it has the first 15 bytes
  session.Output("live");
  EXPECT_EQ(first.sent, (std::vector<std::string>{R"(text:{"offset":0,"session":"ts-1","type":"session"})",
                                                  "out:$ export X=42\r\n"}));
  EXPECT_EQ(second.sent, (std::vector<std::string>{R"(text:{"offset":15,"session":"ts-1","type":"session"})",
                                                   "out:late\r\n", "out:live"}));
  // A reload has nothing: it is sent all that is kept.
  FakeScreen third;
  session.Attach(&third, 0);
  EXPECT_EQ(third.sent, (std::vector<std::string>{R"(text:{"offset":0,"session":"ts-1","type":"session"})",
                                                  "out:$ export X=42\r\nlate\r\nlive"}));
  // The end goes to whoever is attached.
  session.End({{"type", "exit"}, {"exit_code", 0}});
  EXPECT_EQ(third.sent.back(), "close:1000:the command ended");
  EXPECT_EQ(third.sent[third.sent.size() - 2], R"(text:{"exit_code":0,"type":"exit"})");
}

TEST(TerminalSessionTest, ANewConnectionTakesOverAndTheOldOneIsClosedWithItsCode) {
  FakeClock clock;
  TerminalSession session(kOwner, 60s, clock.Fn());
  FakeScreen a, b;
  session.Attach(&a, 0);
  session.Announce("ts-2");
  session.Attach(&b, 0);
  EXPECT_EQ(a.sent, (std::vector<std::string>{R"(text:{"offset":0,"session":"ts-2","type":"session"})",
                                              "close:4000:the terminal was attached from another connection"}));
  // The old connection's end detaches nothing: the new one stays, past any grace period.
  session.Detach(&a, /*end=*/true);
  clock.ms += 3'600'000;
  EXPECT_FALSE(session.Over());
  session.Output("x");
  EXPECT_EQ(b.sent.back(), "out:x");
  EXPECT_EQ(a.sent.size(), 2u);
}

TEST(TerminalSessionTest, ADetachedShellIsOverOnceItsGracePasses) {
  FakeClock clock;
  TerminalSession session(kOwner, 60s, clock.Fn());
  FakeScreen screen;
  session.Attach(&screen, 0);
  session.Announce("ts-3");
  clock.ms += 600'000;  // attached: no limit of this class's
  EXPECT_FALSE(session.Over());
  session.Detach(&screen, /*end=*/false);
  clock.ms += 59'999;
  EXPECT_FALSE(session.Over());
  clock.ms += 1;
  EXPECT_TRUE(session.Over());
}

TEST(TerminalSessionTest, ANormalCloseAGraceOfZeroOrNoAnnouncementEndsTheShellAtOnce) {
  FakeClock clock;
  FakeScreen screen;
  TerminalSession closed(kOwner, 60s, clock.Fn());
  closed.Attach(&screen, 0);
  closed.Announce("ts-4");
  closed.Detach(&screen, /*end=*/true);
  EXPECT_TRUE(closed.Over());

  TerminalSession no_grace(kOwner, 0s, clock.Fn());
  no_grace.Attach(&screen, 0);
  no_grace.Announce("ts-5");
  no_grace.Detach(&screen, /*end=*/false);
  EXPECT_TRUE(no_grace.Over());

  // Gone before anyone learnt its id: no one could attach again.
  TerminalSession unannounced(kOwner, 60s, clock.Fn());
  unannounced.Attach(&screen, 0);
  EXPECT_FALSE(unannounced.Over());
  unannounced.Detach(&screen, /*end=*/false);
  EXPECT_TRUE(unannounced.Over());
}

// A connection in the first session, the id never reached it: no client can attach again, so the shell ends with its
// connection instead of waiting out the grace period. Announced after the connection was lost, or its session
// message could not be sent.
TEST(TerminalSessionTest, AShellWhoseIdReachedNoConnectionEndsWithIt) {
  FakeClock clock;
  FakeScreen screen;
  TerminalSession late(kOwner, 60s, clock.Fn());
  late.Attach(&screen, 0);
  late.Detach(&screen, /*end=*/false);
  late.Announce("ts-6");
  EXPECT_TRUE(late.Over());
  EXPECT_TRUE(screen.sent.empty());

  struct BrokenScreen : FakeScreen {
    bool Text(std::string_view message) override {
      FakeScreen::Text(message);
      return false;
    }
  } broken;
  TerminalSession unsent(kOwner, 60s, clock.Fn());
  unsent.Attach(&broken, 0);
  unsent.Announce("ts-7");
  ASSERT_EQ(broken.sent, std::vector<std::string>{"text:" + TerminalSession::SessionMessage("ts-7", 0)});
  EXPECT_FALSE(unsent.Over());  // attached: its connection's end decides
  unsent.Detach(&broken, /*end=*/false);
  EXPECT_TRUE(unsent.Over());

  // Sent: it waits for a reattach for the grace period, as before.
  TerminalSession sent(kOwner, 60s, clock.Fn());
  sent.Attach(&screen, 0);
  sent.Announce("ts-8");
  sent.Detach(&screen, /*end=*/false);
  EXPECT_FALSE(sent.Over());
  EXPECT_EQ(sent.WaitingSince(), Time(std::chrono::milliseconds(clock.ms.load())));
  // Neither of the others waits for anyone.
  EXPECT_EQ(late.WaitingSince(), std::nullopt);
  EXPECT_EQ(unsent.WaitingSince(), std::nullopt);

  // A connection that attaches once the session is announced came with its id (Find(id) is the only way there):
  // though the first connection's session message could not be sent, the shell then waits for a reattach.
  TerminalSession found(kOwner, 60s, clock.Fn());
  BrokenScreen first;
  found.Attach(&first, 0);
  found.Announce("ts-9");
  FakeScreen again;
  found.Attach(&again, 0);
  found.Detach(&again, /*end=*/false);
  EXPECT_FALSE(found.Over());
  clock.ms += 60'000;
  EXPECT_TRUE(found.Over());
}

TEST(TerminalSessionTest, AReattachToAShellThatEndedIsToldItsEnd) {
  TerminalSession session(kOwner, 60s);
  FakeScreen first, late;
  session.Attach(&first, 0);
  session.Announce("ts-6");
  session.Detach(&first, /*end=*/false);
  session.Output("bye\r\n");
  session.End({{"type", "exit"}, {"exit_code", 3}});
  session.Attach(&late, 0);
  EXPECT_EQ(late.sent,
            (std::vector<std::string>{R"(text:{"offset":0,"session":"ts-6","type":"session"})", "out:bye\r\n",
                                      R"(text:{"exit_code":3,"type":"exit"})", "close:1000:the command ended"}));
}

// An exec as the terminal socket runs one: until its session is over.
void RunUntilOver(const std::shared_ptr<TerminalSession>& session) {
  while (!session->Over()) std::this_thread::sleep_for(5ms);
}

TEST(TerminalSessionsTest, OnlyTheOwnerFindsASessionAndOthersGetTheSameNotFound) {
  FakeClock clock;
  TerminalSessions sessions;
  auto session = std::make_shared<TerminalSession>(kOwner, 60s, clock.Fn());
  FakeScreen screen;
  session->Attach(&screen, 0);
  sessions.Start(session, [session] { RunUntilOver(session); });
  sessions.Add("ts-aa", session);
  session->Announce("ts-aa");
  Result<std::shared_ptr<TerminalSession>> mine = sessions.Find("ts-aa", kOwner);
  ASSERT_TRUE(mine.ok()) << mine.error().message;
  EXPECT_EQ(mine->get(), session.get());
  const std::string not_found_end =
      "': it ended (its shell exited, or it was left with no connection past its grace period), or it is not this "
      "caller's";
  for (const TerminalOwner& other : {TerminalOwner{"token:8", "acme", "box"}, TerminalOwner{"token:7", "beta", "box"},
                                     TerminalOwner{"token:7", "acme", "other"}}) {
    Result<std::shared_ptr<TerminalSession>> refused = sessions.Find("ts-aa", other);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Code::kNotFound);
    EXPECT_EQ(refused.error().message,
              "no terminal session 'ts-aa' to reattach in sandbox '" + other.sandbox + not_found_end);
  }
  Result<std::shared_ptr<TerminalSession>> made_up = sessions.Find("ts-bb", kOwner);
  ASSERT_FALSE(made_up.ok());
  EXPECT_EQ(made_up.error().message, "no terminal session 'ts-bb' to reattach in sandbox 'box" + not_found_end);

  // Detached past its grace: the exec ends, and the session is gone.
  session->Detach(&screen, /*end=*/false);
  clock.ms += 60'000;
  for (auto until = std::chrono::steady_clock::now() + 5s;
       sessions.size() > 0 && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(5ms);
  EXPECT_EQ(sessions.size(), 0u);
  EXPECT_FALSE(sessions.Find("ts-aa", kOwner).ok());
}

// A caller keeps at most kMaxDetachedTerminals shells waiting; a shell whose id reached no connection waits for no
// one, so it does not count and does not make the limit end a shell that does wait.
TEST(TerminalSessionsTest, OnlyShellsThatCanBeAttachedAgainCountTowardTheDetachedLimit) {
  FakeClock clock;
  TerminalSessions sessions;
  std::atomic<bool> release{false};
  std::vector<std::shared_ptr<TerminalSession>> waiting;
  for (int i = 0; i < 4; ++i) {
    auto session = std::make_shared<TerminalSession>(kOwner, 60s, clock.Fn());
    FakeScreen screen;
    session->Attach(&screen, 0);
    session->Announce("ts-w" + std::to_string(i));
    session->Detach(&screen, /*end=*/false);
    sessions.Start(session, [&release] {
      while (!release) std::this_thread::sleep_for(1ms);
    });
    waiting.push_back(session);
    clock.ms += 10;
  }
  auto untold = std::make_shared<TerminalSession>(kOwner, 60s, clock.Fn());
  FakeScreen screen;
  untold->Attach(&screen, 0);
  untold->Detach(&screen, /*end=*/false);
  untold->Announce("ts-u");
  sessions.Start(untold, [&release] {
    while (!release) std::this_thread::sleep_for(1ms);
  });
  EXPECT_EQ(untold->WaitingSince(), std::nullopt);
  sessions.KeepDetachedWithin(kOwner.subject, kMaxDetachedTerminals);
  for (const auto& session : waiting) EXPECT_FALSE(session->Over()) << session->id();
  EXPECT_TRUE(untold->Over());
  release = true;
  sessions.Stop();
  EXPECT_EQ(sessions.size(), 0u);
}

TEST(TerminalSessionsTest, StopEndsDetachedShellsAndWaitsForThem) {
  TerminalSessions sessions;
  std::atomic<int> ended{0};
  std::vector<std::shared_ptr<TerminalSession>> all;
  for (int i = 0; i < 3; ++i) {
    auto session = std::make_shared<TerminalSession>(kOwner, 3600s);
    FakeScreen screen;
    session->Attach(&screen, 0);
    session->Announce("ts-" + std::to_string(i));
    sessions.Add("ts-" + std::to_string(i), session);
    session->Detach(&screen, /*end=*/false);
    sessions.Start(session, [session, &ended] {
      RunUntilOver(session);
      ++ended;
    });
    all.push_back(session);
  }
  EXPECT_EQ(sessions.size(), 3u);
  sessions.Stop();
  EXPECT_EQ(ended.load(), 3);
  EXPECT_EQ(sessions.size(), 0u);
  EXPECT_FALSE(sessions.Find("ts-0", kOwner).ok());
  // One started after the stop is cancelled from the start.
  auto late = std::make_shared<TerminalSession>(kOwner, 3600s);
  sessions.Start(late, [late] { RunUntilOver(late); });
  EXPECT_TRUE(late->Over());
  sessions.Stop();
}

}  // namespace
}  // namespace isb::api
