// Parsing of the sizes ("512M"), durations ("30s") and CPU amounts ("1.5") that users type.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "base/result.h"

namespace isb {

// "1024", "64K", "512M", "2G", "1T" (binary multiples; an optional trailing "B"/"iB" is accepted).
Result<uint64_t> ParseSize(std::string_view text);
// "500ms", "30s", "5m", "2h", "1d"; a bare number is seconds.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);
// "UID[:GID]" (GID defaults to UID), each below 65536: ids inside a sandbox's range.
Result<std::pair<uint32_t, uint32_t>> ParseIds(std::string_view text);
// A positive decimal amount of CPUs such as "2" or "0.5", returned in millicpus.
Result<uint32_t> ParseCpus(std::string_view text);

// The whole of `text` as a decimal T: nullopt when it is empty, holds anything but digits, or is out of T's range.
template <class T>
std::optional<T> ParseDecimal(std::string_view text) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;  // no sign, even for a signed T
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace isb
