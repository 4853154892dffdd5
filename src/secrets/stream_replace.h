// Replacing a set of needles in a stream cut at any points: an Aho-Corasick automaton over the needles (ReplaceSet,
// immutable and shared) and the state of one stream through it (StreamReplacer, a BodyFilter).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egress/message_filter.h"

namespace isb::secrets {

struct Replacement {
  std::string needle;
  std::string replacement;
};

// The automaton over a list of pairs. An empty needle is ignored; a needle listed twice keeps its first pair (hits
// are counted to that pair's index). Immutable once built: any number of streams may share it.
class ReplaceSet {
 public:
  explicit ReplaceSet(std::vector<Replacement> pairs);

  const std::vector<Replacement>& pairs() const { return pairs_; }
  size_t longest() const { return longest_; }
  bool empty() const { return longest_ == 0; }

  // The whole of `text` replaced at once, with the stream's semantics (StreamReplacer); `counts` (when given, one
  // per pair) is added to.
  std::string ReplaceAll(std::string_view text, std::vector<uint64_t>* counts = nullptr) const;

 private:
  friend class StreamReplacer;
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte; the root's are in root_next_ instead
    int32_t fail = 0;
    int32_t depth = 0;
    int32_t pair = -1;    // the pair whose needle ends here
    int32_t output = -1;  // the deepest node on the fail chain (this one included) where a needle ends
  };
  int32_t Child(int32_t node, uint8_t byte) const;
  int32_t Step(int32_t node, uint8_t byte) const;  // the goto function through failure links
  // The first position in [from, end) of `bytes` holding a byte that starts a needle, or `end`.
  size_t NextStart(const char* bytes, size_t from, size_t end) const;

  std::vector<Replacement> pairs_;
  std::vector<Node> nodes_;
  int32_t root_next_[256];
  // The bytes that start a needle, when there are few (one or two secrets' values: each value's forms begin with
  // about four): the scan for them takes 16 bytes a step. More (many secrets, or rotated values that begin
  // differently) and the table is read byte by byte.
  static constexpr size_t kFewStarts = 8;
  uint8_t starts_[kFewStarts] = {};
  size_t start_count_ = 0;  // 0: too many, the table is read byte by byte
  size_t longest_ = 0;
};

// One stream through a ReplaceSet. Semantics: leftmost-longest and non-overlapping, as a scan from the left that at
// each position where some needle starts replaces the longest such needle and goes on after it; the output is the
// same however the input is cut. At most longest() - 1 bytes are kept back between calls. Time: linear in the
// input, plus a rescan of at most longest() bytes after each replacement.
class StreamReplacer : public egress::BodyFilter {
 public:
  explicit StreamReplacer(std::shared_ptr<const ReplaceSet> set);

  void Take(std::string_view data, std::string& out) override;
  void Finish(std::string& out) override;

  // Replacements made so far, per pair of the set.
  const std::vector<uint64_t>& counts() const { return counts_; }
  // Bytes held back now (at most longest() - 1 between calls).
  size_t kept() const { return pending_.size() - emitted_; }

 private:
  struct Match {
    size_t start = 0;  // in pending_
    size_t length = 0;
    int32_t pair = -1;
  };
  void Scan(std::string& out, bool final);
  void Commit(std::string& out);

  std::shared_ptr<const ReplaceSet> set_;
  std::vector<uint64_t> counts_;
  std::string pending_;  // bytes from emitted_ on are not yet out
  size_t emitted_ = 0;
  size_t scanned_ = 0;  // pending_ up to here went through the automaton
  int32_t state_ = 0;
  std::optional<Match> best_;  // the leftmost, then longest, match found and not yet replaced
};

}  // namespace isb::secrets
