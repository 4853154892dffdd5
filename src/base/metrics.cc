// The metrics registry and its Prometheus text exposition (format 0.0.4).
#include "base/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace isb::metrics {
namespace {

bool NameChar(char c, bool first, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
         (!first && c >= '0' && c <= '9');
}

bool ValidName(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!NameChar(name[i], i == 0, colon)) return false;
  return true;
}

[[noreturn]] void Misdeclared(const std::string& name, const char* why) {
  std::fprintf(stderr, "isb: metric %s: %s\n", name.c_str(), why);
  std::abort();
}

// HELP text escapes backslash and newline only.
std::string EscapeHelp(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

// `{a="x",b="y"}` with `extra` (le="...") last; "" when there are no labels at all.
std::string LabelText(const Labels& names, const Labels& values, std::string_view extra = {}) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra;
  }
  if (!out.empty()) out += "}";
  return out;
}

std::string_view TypeName(Kind kind) {
  switch (kind) {
    case Kind::kCounter:
      return "counter";
    case Kind::kGauge:
      return "gauge";
    case Kind::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::vector<double> LatencyBuckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

HistogramCell::HistogramCell(const std::vector<double>& bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i] = 0;
}

void HistogramCell::Observe(double v) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

HistogramCell::Snapshot HistogramCell::Read() const {
  Snapshot s;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

template <class Cell>
Cell& Family<Cell>::With(const Labels& values) {
  Labels key(label_names_.size());
  for (size_t i = 0; i < key.size() && i < values.size(); ++i) key[i] = values[i];
  MutexLock lock(mu_);
  std::unique_ptr<Cell>& cell = cells_[key];
  if (!cell) {
    if constexpr (std::is_same_v<Cell, HistogramCell>) {
      cell = std::make_unique<Cell>(bounds_);
    } else {
      cell = std::make_unique<Cell>();
    }
  }
  return *cell;
}

template <class Cell>
void Family<Cell>::RenderCell(std::string& out, const Labels& values, const Cell& cell) const {
  if constexpr (std::is_same_v<Cell, HistogramCell>) {
    HistogramCell::Snapshot s = cell.Read();
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      const std::string le = "le=\"" + (i < bounds_.size() ? FormatValue(bounds_[i]) : std::string("+Inf")) + "\"";
      out += name_ + "_bucket" + LabelText(label_names_, values, le) + " " + std::to_string(s.cumulative[i]) + "\n";
    }
    out += name_ + "_sum" + LabelText(label_names_, values) + " " + FormatValue(s.sum) + "\n";
    out += name_ + "_count" + LabelText(label_names_, values) + " " + std::to_string(s.count) + "\n";
  } else {
    out += name_ + LabelText(label_names_, values) + " " + FormatValue(cell.Value()) + "\n";
  }
}

template <class Cell>
void Family<Cell>::Render(std::string& out) const {
  out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  out += "# TYPE " + name_ + " " + std::string(TypeName(kind_)) + "\n";
  MutexLock lock(mu_);
  for (const auto& [values, cell] : cells_) RenderCell(out, values, *cell);
}

template class Family<CounterCell>;
template class Family<GaugeCell>;
template class Family<HistogramCell>;

template <class Cell>
Family<Cell>& Registry::Declare(const std::string& name, const std::string& help, const Labels& label_names, Kind kind,
                                std::vector<double> bounds) {
  if (!ValidName(name, true)) Misdeclared(name, "not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  for (const std::string& label : label_names)
    if (!ValidName(label, false) || label == "le" || label.starts_with("__")) Misdeclared(name, "a bad label name");
  if (!std::is_sorted(bounds.begin(), bounds.end())) Misdeclared(name, "histogram bounds must ascend");
  MutexLock lock(mu_);
  if (auto it = entries_.find(name); it != entries_.end()) {
    const Entry& e = it->second;
    if (e.kind != kind || e.help != help || e.label_names != label_names || e.bounds != bounds)
      Misdeclared(name, "declared twice, differently");
    return *static_cast<Family<Cell>*>(e.family);
  }
  auto family = std::unique_ptr<Family<Cell>>(new Family<Cell>(name, help, label_names, kind, bounds));
  Family<Cell>* raw = family.get();
  if constexpr (std::is_same_v<Cell, CounterCell>)
    counters_.push_back(std::move(family));
  else if constexpr (std::is_same_v<Cell, GaugeCell>)
    gauges_.push_back(std::move(family));
  else
    histograms_.push_back(std::move(family));
  entries_.emplace(name, Entry{kind, help, label_names, std::move(bounds), raw});
  return *raw;
}

CounterFamily& Registry::Counter(const std::string& name, const std::string& help, const Labels& label_names) {
  return Declare<CounterCell>(name, help, label_names, Kind::kCounter, {});
}

GaugeFamily& Registry::Gauge(const std::string& name, const std::string& help, const Labels& label_names) {
  return Declare<GaugeCell>(name, help, label_names, Kind::kGauge, {});
}

HistogramFamily& Registry::Histogram(const std::string& name, const std::string& help, const Labels& label_names,
                                     std::vector<double> bounds) {
  return Declare<HistogramCell>(name, help, label_names, Kind::kHistogram, std::move(bounds));
}

void Registry::AddCollector(std::function<void()> collect) {
  MutexLock lock(mu_);
  collectors_.push_back(std::move(collect));
}

std::string Registry::Render() const {
  std::vector<std::function<void()>> collectors;
  {
    MutexLock lock(mu_);
    collectors = collectors_;
  }
  for (const auto& collect : collectors) collect();
  std::string out;
  MutexLock lock(mu_);
  for (const auto& [name, entry] : entries_) {
    switch (entry.kind) {
      case Kind::kCounter:
        static_cast<const CounterFamily*>(entry.family)->Render(out);
        break;
      case Kind::kGauge:
        static_cast<const GaugeFamily*>(entry.family)->Render(out);
        break;
      case Kind::kHistogram:
        static_cast<const HistogramFamily*>(entry.family)->Render(out);
        break;
    }
  }
  return out;
}

Registry& Global() {
  static Registry* registry = new Registry();  // never destroyed: threads may count until the process exits
  return *registry;
}

}  // namespace isb::metrics
