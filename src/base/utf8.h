// UTF-8 at the byte level: where a valid sequence ends, and what at the end of a piece still waits for its rest.
#pragma once

#include <cstddef>
#include <string_view>

namespace isb {

// The length of the UTF-8 sequence that starts at s[i] (1 to 4), or 0 when it is invalid there (a stray
// continuation byte, overlong, a surrogate, above U+10FFFF, or cut short by the end of `s`). REQUIRES: i < s.size().
size_t Utf8SequenceLength(std::string_view s, size_t i);

// The bytes at the end of `s` (0 to 3) that begin a multi-byte sequence not yet complete: what a reader of pieces
// holds back until the rest of the character comes.
size_t Utf8IncompleteTail(std::string_view s);

}  // namespace isb
