#include "api/event_bus.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "api/events_stream.h"
#include "api/principals.h"

namespace isb::api {
namespace {

using std::chrono::milliseconds;

SandboxEvent Ev(const std::string& type, const std::string& org, const std::string& id = "sb-1") {
  return {.type = type, .org = org, .sandbox = id, .name = "web", .state = "running", .at_ms = 1'764'953'574'123};
}

bool All(const std::string&) { return true; }

std::vector<uint64_t> Ids(const EventBatch& b) {
  std::vector<uint64_t> ids;
  for (const auto& e : b.events) ids.push_back(e.id);
  return ids;
}

TEST(EventBus, NumbersEventsFromOneAndGivesThoseAfterTheCursor) {
  EventBus bus;
  EXPECT_EQ(bus.Publish(Ev("created", "acme")), 1u);
  EXPECT_EQ(bus.Publish(Ev("started", "acme")), 2u);
  EXPECT_EQ(bus.Publish(Ev("stopped", "acme")), 3u);
  EventBatch b = bus.Since(1, All, milliseconds(0));
  EXPECT_FALSE(b.reset);
  EXPECT_EQ(Ids(b), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(b.events[0].type, "started");
  EXPECT_EQ(b.last_id, 3u);
  EXPECT_TRUE(bus.Since(3, All, milliseconds(0)).events.empty());
}

TEST(EventBus, KeepsOnlyTheNewestCapacityEventsAndResetsACursorOlderThanThem) {
  EventBus bus(3);
  for (int i = 0; i < 5; ++i) bus.Publish(Ev("created", "acme"));
  // Kept: 3, 4, 5. After 2 nothing was missed; after 1, event 2 was.
  EXPECT_EQ(Ids(bus.Since(2, All, milliseconds(0))), (std::vector<uint64_t>{3, 4, 5}));
  EventBatch old = bus.Since(1, All, milliseconds(0));
  EXPECT_TRUE(old.reset);
  EXPECT_TRUE(old.events.empty());
  EXPECT_EQ(old.last_id, 5u);
}

TEST(EventBus, ResetsACursorPastTheNewestEvent) {
  EventBus bus;
  bus.Publish(Ev("created", "acme"));
  EventBatch b = bus.Since(7, All, milliseconds(0));  // another daemon's id
  EXPECT_TRUE(b.reset);
  EXPECT_EQ(b.last_id, 1u);
}

TEST(EventBus, FiltersByOrgButMovesTheCursorPastWhatItHides) {
  EventBus bus;
  bus.Publish(Ev("created", "acme"));
  bus.Publish(Ev("created", "other"));
  bus.Publish(Ev("removed", "acme"));
  bus.Publish(Ev("removed", "other"));
  EventBatch b = bus.Since(
      0, [](const std::string& org) { return org == "acme"; }, milliseconds(0));
  EXPECT_EQ(Ids(b), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(b.last_id, 4u);
}

TEST(EventBus, AWaitingReaderWakesOnAPublish) {
  EventBus bus;
  auto reader = std::async(std::launch::async, [&] { return bus.Since(0, All, milliseconds(10'000)); });
  std::this_thread::sleep_for(milliseconds(50));
  bus.Publish(Ev("created", "acme"));
  ASSERT_EQ(reader.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(Ids(reader.get()), (std::vector<uint64_t>{1}));
}

TEST(EventBus, AReaderWithNothingNewReturnsEmptyAfterItsWait) {
  EventBus bus;
  bus.Publish(Ev("created", "acme"));
  const auto start = std::chrono::steady_clock::now();
  EventBatch b = bus.Since(1, All, milliseconds(100));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(100));
  EXPECT_TRUE(b.events.empty());
  EXPECT_FALSE(b.reset);
  EXPECT_EQ(b.last_id, 1u);
}

// The daemon's bus numbers by the clock (unix microseconds): a test clock it reads.
struct TestClock {
  std::shared_ptr<std::atomic<uint64_t>> now = std::make_shared<std::atomic<uint64_t>>(0);
  EventBus::Clock clock() const {
    return [now = now] { return now->load(); };
  }
};

TEST(EventBus, WithAClockTheIdsAnOrgSeesAreTheSameWhateverOtherOrgsDid) {
  auto acme_ids = [](bool others_busy) {
    TestClock t;
    t.now->store(1'000'000);
    EventBus bus(EventBus::kDefaultCapacity, t.clock());
    const uint64_t start = bus.LastId();
    t.now->store(2'000'000);
    bus.Publish(Ev("created", "acme"));
    t.now->store(3'000'000);
    if (others_busy)
      for (int i = 0; i < 5; ++i) bus.Publish(Ev("created", "other", "sb-" + std::to_string(i)));
    t.now->store(4'000'000);
    bus.Publish(Ev("started", "acme"));
    t.now->store(5'000'000);
    EventBatch b = bus.Since(
        start, [](const std::string& org) { return org == "acme"; }, milliseconds(0));
    std::vector<uint64_t> ids = Ids(b);
    ids.push_back(b.last_id);     // the cursor a reader is handed
    ids.push_back(bus.LastId());  // where a new stream starts
    return ids;
  };
  EXPECT_EQ(acme_ids(false), (std::vector<uint64_t>{2'000'001, 4'000'001, 5'000'000, 5'000'000}));
  EXPECT_EQ(acme_ids(true), acme_ids(false));
}

TEST(EventBus, WithAClockACursorFromBeforeTheBusBeganIsResetAndOneFromItIsNot) {
  TestClock t;
  t.now->store(1'000'000);
  EventBus before(EventBus::kDefaultCapacity, t.clock());
  t.now->store(1'000'100);
  const uint64_t seen = before.Publish(Ev("created", "acme"));
  // The daemon restarts: a new bus, later by the clock, whose first event is published before the client returns.
  t.now->store(9'000'000);
  EventBus after(EventBus::kDefaultCapacity, t.clock());
  t.now->store(9'000'500);
  const uint64_t first = after.Publish(Ev("started", "acme"));
  EventBatch b = after.Since(seen, All, milliseconds(0));
  EXPECT_TRUE(b.reset);
  EXPECT_TRUE(b.events.empty());
  EXPECT_EQ(b.last_id, first);  // the reader reloads what it shows, then goes on from here
  // A cursor this bus handed out (its start) is served: the first event is not lost.
  EXPECT_EQ(Ids(after.Since(9'000'000, All, milliseconds(0))), (std::vector<uint64_t>{first}));
  // A cursor past what it handed out (a clock run ahead elsewhere) is reset too.
  EXPECT_TRUE(after.Since(9'999'999, All, milliseconds(0)).reset);
}

TEST(EventBus, WithAClockEveryIdIsPastTheCursorsHandedOutBefore) {
  TestClock t;
  t.now->store(500);
  EventBus bus(EventBus::kDefaultCapacity, t.clock());
  const uint64_t cursor = bus.LastId();
  t.now->store(400);  // the clock steps back
  const uint64_t id = bus.Publish(Ev("created", "acme"));
  EXPECT_EQ(id, 501u);
  EXPECT_EQ(Ids(bus.Since(cursor, All, milliseconds(0))), (std::vector<uint64_t>{501}));
  EXPECT_EQ(bus.Publish(Ev("created", "acme")), 502u);  // two in one tick
}

TEST(EventBus, AnEventIsOneLineOfJsonInTheDocumentedOrder) {
  SandboxEvent e = Ev("egress_changed", "acme", "sb-0123456789abcdef");
  e.id = 42;
  EXPECT_EQ(EventJson(e), R"({"id":42,"type":"egress_changed","org":"acme","sandbox":"sb-0123456789abcdef",)"
                          R"("name":"web","state":"running","at":"2025-12-05T16:52:54.123Z"})");
}

TEST(EventsVisibility, AMemberSeesItsOrgsOnlyAndAPlatformAdminSeesAll) {
  Identity viewer = UserIn("v", "acme", identity::Role::kViewer);
  EXPECT_TRUE(MaySeeEventsOf(viewer, "acme"));
  EXPECT_FALSE(MaySeeEventsOf(viewer, "other"));
  Identity admin = UserIn("a", "acme");
  admin.platform_admin = true;
  EXPECT_TRUE(MaySeeEventsOf(admin, "other"));
  EXPECT_TRUE(MaySeeEventsOf(Identity::Host(), "other"));
  // A token that may call no read tool (the metrics scope) sees nothing.
  Identity scraper = UserIn("s", "acme");
  scraper.scopes = {{identity::ScopeKind::kMetrics, ""}};
  EXPECT_FALSE(MaySeeEventsOf(scraper, "acme"));
}

TEST(EventsResume, TakesTheHeaderBeforeTheQueryAndFlagsWhatIsNotANumber) {
  Request req;
  req.target = "/api/v1/events?last_event_id=5";
  EXPECT_EQ(ResumePoint(req).after, 5u);
  EXPECT_TRUE(ResumePoint(req).given);
  req.headers.Add("Last-Event-ID", "9");
  EXPECT_EQ(ResumePoint(req).after, 9u);
  Request bad;
  bad.target = "/api/v1/events";
  bad.headers.Add("Last-Event-ID", "9x");
  EXPECT_TRUE(ResumePoint(bad).given);
  EXPECT_FALSE(ResumePoint(bad).valid);
  Request none;
  none.target = "/api/v1/events";
  EXPECT_FALSE(ResumePoint(none).given);
}

}  // namespace
}  // namespace isb::api
