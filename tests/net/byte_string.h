// Byte strings written as numbers, for the wire tests' expected bytes (frames, compressed data).
#pragma once

#include <initializer_list>
#include <string>

namespace isb::testing {

inline std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

}  // namespace isb::testing
