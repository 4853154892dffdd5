// Metrics: counters, gauges and histograms with labels, and their Prometheus text exposition.
//
//   metrics::Global().Counter("isb_execs_total", "Execs by outcome.", {"outcome"}).With({"ok"}).Inc();
//
// A family is declared by name once (declaring it again returns the same one, as long as its kind, help and labels
// agree); a child per set of label values is made on its first use and lives as long as the registry, so a reference
// to one may be kept (in a function-local static) and updated without a lock. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace isb::metrics {

using Labels = std::vector<std::string>;  // values, in the order of the family's label names

// A value that only goes up (never resets while the process lives).
class CounterCell {
 public:
  void Inc(double by = 1) {
    if (by > 0) value_.fetch_add(by, std::memory_order_relaxed);
  }
  // For a total kept elsewhere (a subsystem's own atomic count), copied in by a collector.
  void SetTotal(double total) { value_.store(total, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A value that goes up and down.
class GaugeCell {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double by) { value_.fetch_add(by, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Observations counted into buckets by upper bound (each bucket also counts those of the buckets below it when
// rendered, as Prometheus' `le` buckets do), with their sum and count.
class HistogramCell {
 public:
  explicit HistogramCell(const std::vector<double>& bounds);
  void Observe(double v);
  struct Snapshot {
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  const std::vector<double>& bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // one per bound, then +Inf (not cumulative)
  std::atomic<double> sum_{0};
};

enum class Kind { kCounter, kGauge, kHistogram };

class Registry;

// One metric name and its children by label values.
template <class Cell>
class Family {
 public:
  // The child for these label values (as many as the family has label names; missing ones are "", extra ones are
  // dropped).
  Cell& With(const Labels& values);
  // The child of a family without labels.
  Cell& Get() { return With({}); }

 private:
  friend class Registry;
  Family(std::string name, std::string help, Labels label_names, Kind kind, std::vector<double> bounds = {})
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        kind_(kind),
        bounds_(std::move(bounds)) {}
  void Render(std::string& out) const;
  void RenderCell(std::string& out, const Labels& values, const Cell& cell) const;

  const std::string name_, help_;
  const Labels label_names_;
  const Kind kind_;
  const std::vector<double> bounds_;  // histograms only
  mutable Mutex mu_;
  std::map<Labels, std::unique_ptr<Cell>> cells_ ISB_GUARDED_BY(mu_);
};

using CounterFamily = Family<CounterCell>;
using GaugeFamily = Family<GaugeCell>;
using HistogramFamily = Family<HistogramCell>;

// Latency buckets in seconds, from 1 ms to 60 s.
std::vector<double> LatencyBuckets();

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // REQUIRES: a name of [a-zA-Z_:][a-zA-Z0-9_:]*, label names of [a-zA-Z_][a-zA-Z0-9_]*; a name declared before must
  // be declared alike (kind, help, labels, bounds). Either mistake is a programming error: it aborts.
  CounterFamily& Counter(const std::string& name, const std::string& help, const Labels& label_names = {});
  GaugeFamily& Gauge(const std::string& name, const std::string& help, const Labels& label_names = {});
  // `bounds`: ascending upper bounds, without +Inf.
  HistogramFamily& Histogram(const std::string& name, const std::string& help, const Labels& label_names,
                             std::vector<double> bounds);

  // Run before every Render, in the order added: where a gauge is read from elsewhere (the sandboxes by state, a
  // pool's size) rather than kept up to date. Collectors must not add collectors.
  void AddCollector(std::function<void()> collect);

  // Every family in name order: "# HELP", "# TYPE" and a line per child, children in label order.
  std::string Render() const;

 private:
  struct Entry {
    Kind kind;
    std::string help;
    Labels label_names;
    std::vector<double> bounds;
    void* family;  // Family<Cell>* of `kind`
  };
  template <class Cell>
  Family<Cell>& Declare(const std::string& name, const std::string& help, const Labels& label_names, Kind kind,
                        std::vector<double> bounds);

  mutable Mutex mu_;
  std::map<std::string, Entry> entries_ ISB_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<CounterFamily>> counters_ ISB_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<GaugeFamily>> gauges_ ISB_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<HistogramFamily>> histograms_ ISB_GUARDED_BY(mu_);
  std::vector<std::function<void()>> collectors_ ISB_GUARDED_BY(mu_);
};

// The process's registry: what /metrics serves.
Registry& Global();

// A sample value as the text format writes it: an integer without a fraction, "+Inf", "-Inf", "NaN", else the
// shortest text that reads back as the same double.
std::string FormatValue(double v);
// A label value escaped for the text format: backslash, double quote and newline as \\, \" and \n.
std::string EscapeLabelValue(std::string_view v);

}  // namespace isb::metrics
