#include "base/metrics.h"
#include "base/metric_families.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>
#include <vector>

namespace isb::metrics {
namespace {

TEST(Metrics, RendersCountersGaugesAndHistogramsExactlyInNameOrder) {
  Registry r;
  auto& execs = r.Counter("isb_execs_total", "Execs by outcome.", {"outcome"});
  execs.With({"ok"}).Inc();
  execs.With({"ok"}).Inc(2);
  execs.With({"error"}).Inc();
  r.Gauge("isb_pool_size", "Launched sandboxes waiting.").Get().Set(3);
  auto& latency = r.Histogram("isb_exec_seconds", "Exec latency.", {}, {0.1, 1});
  latency.Get().Observe(0.05);
  latency.Get().Observe(0.1);
  latency.Get().Observe(5);
  EXPECT_EQ(r.Render(),
            "# HELP isb_exec_seconds Exec latency.\n"
            "# TYPE isb_exec_seconds histogram\n"
            "isb_exec_seconds_bucket{le=\"0.1\"} 2\n"
            "isb_exec_seconds_bucket{le=\"1\"} 2\n"
            "isb_exec_seconds_bucket{le=\"+Inf\"} 3\n"
            "isb_exec_seconds_sum 5.15\n"
            "isb_exec_seconds_count 3\n"
            "# HELP isb_execs_total Execs by outcome.\n"
            "# TYPE isb_execs_total counter\n"
            "isb_execs_total{outcome=\"error\"} 1\n"
            "isb_execs_total{outcome=\"ok\"} 3\n"
            "# HELP isb_pool_size Launched sandboxes waiting.\n"
            "# TYPE isb_pool_size gauge\n"
            "isb_pool_size 3\n");
}

TEST(Metrics, EscapesLabelValuesAndHelpText) {
  Registry r;
  r.Counter("isb_refusals_total", "Refusals\\by \"reason\"\nsecond line.", {"reason"})
      .With({"a \"quoted\"\\path\nnext"})
      .Inc();
  EXPECT_EQ(r.Render(),
            "# HELP isb_refusals_total Refusals\\\\by \"reason\"\\nsecond line.\n"
            "# TYPE isb_refusals_total counter\n"
            "isb_refusals_total{reason=\"a \\\"quoted\\\"\\\\path\\nnext\"} 1\n");
}

TEST(Metrics, HistogramWithLabelsPutsLeLast) {
  Registry r;
  r.Histogram("isb_create_seconds", "Create latency.", {"outcome"}, {1}).With({"ok"}).Observe(2);
  EXPECT_EQ(r.Render(),
            "# HELP isb_create_seconds Create latency.\n"
            "# TYPE isb_create_seconds histogram\n"
            "isb_create_seconds_bucket{outcome=\"ok\",le=\"1\"} 0\n"
            "isb_create_seconds_bucket{outcome=\"ok\",le=\"+Inf\"} 1\n"
            "isb_create_seconds_sum{outcome=\"ok\"} 2\n"
            "isb_create_seconds_count{outcome=\"ok\"} 1\n");
}

TEST(Metrics, DeclaringAgainReturnsTheSameFamily) {
  Registry r;
  auto& a = r.Counter("isb_x_total", "X.", {"k"});
  auto& b = r.Counter("isb_x_total", "X.", {"k"});
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(&a.With({"v"}), &b.With({"v"}));
}

TEST(Metrics, DeclaringANameTwiceDifferentlyAborts) {
  Registry r;
  r.Counter("isb_x_total", "X.");
  EXPECT_DEATH(r.Gauge("isb_x_total", "X."), "metric isb_x_total: declared twice, differently");
  EXPECT_DEATH(r.Counter("isb-x", "X."), "metric isb-x: not a metric name");
  EXPECT_DEATH(r.Counter("isb_y_total", "Y.", {"le"}), "metric isb_y_total: a bad label name");
}

TEST(Metrics, CountersIgnoreNegativeSteps) {
  Registry r;
  auto& c = r.Counter("isb_c_total", "C.").Get();
  c.Inc(5);
  c.Inc(-3);
  EXPECT_EQ(c.Value(), 5);
}

TEST(Metrics, CollectorsRunBeforeEachRender) {
  Registry r;
  auto& g = r.Gauge("isb_g", "G.", {"state"});
  int runs = 0;
  r.AddCollector([&] { g.With({"running"}).Set(++runs); });
  EXPECT_EQ(r.Render(), "# HELP isb_g G.\n# TYPE isb_g gauge\nisb_g{state=\"running\"} 1\n");
  EXPECT_EQ(r.Render(), "# HELP isb_g G.\n# TYPE isb_g gauge\nisb_g{state=\"running\"} 2\n");
}

TEST(Metrics, FormatsValuesAsTheTextFormatReadsThem) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-4), "-4");
  EXPECT_EQ(FormatValue(1e15), "1000000000000000");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(Metrics, CountsFromManyThreadsAreAllKept) {
  Registry r;
  auto& c = r.Counter("isb_n_total", "N.", {"t"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.With({"x"}).Inc();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.With({"x"}).Value(), 40000);
}

TEST(RefusalKind, NamesEachKindOfProxyRefusalWithoutTheHostItNames) {
  EXPECT_EQ(RefusalKind("unlisted.test:80 is not in the egress list"), "not_listed");
  EXPECT_EQ(RefusalKind("evil.test:443 is blocked by *.test"), "blocked");
  EXPECT_EQ(RefusalKind("egress to x.test:25 is not allowed"), "not_allowed");
  EXPECT_EQ(RefusalKind("judge denied: exfiltration"), "judge");
  EXPECT_EQ(RefusalKind("a CONNECT tunnel to x.test began with a malformed TLS ClientHello"), "protocol");
  EXPECT_EQ(RefusalKind("egress is none: this sandbox has no network"), "other");
}

}  // namespace
}  // namespace isb::metrics
