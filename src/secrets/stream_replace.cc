// The automaton is built once per set of needles (a trie, its failure links in breadth-first order, and for each
// node the deepest needle ending on its failure chain); a stream keeps a state, the bytes it could still replace and
// the best match not yet committed.
#include "secrets/stream_replace.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace isb::secrets {

ReplaceSet::ReplaceSet(std::vector<Replacement> pairs) : pairs_(std::move(pairs)) {
  nodes_.emplace_back();
  for (size_t i = 0; i < pairs_.size(); ++i) {
    const std::string& needle = pairs_[i].needle;
    if (needle.empty()) continue;
    int32_t node = 0;
    for (char c : needle) {
      const uint8_t byte = static_cast<uint8_t>(c);
      auto& next = nodes_[node].next;
      auto it = std::lower_bound(next.begin(), next.end(), byte,
                                 [](const std::pair<uint8_t, int32_t>& e, uint8_t b) { return e.first < b; });
      if (it != next.end() && it->first == byte) {
        node = it->second;
        continue;
      }
      const int32_t child = static_cast<int32_t>(nodes_.size());
      const int32_t depth = nodes_[node].depth + 1;
      nodes_[node].next.insert(it, {byte, child});
      nodes_.emplace_back();
      nodes_.back().depth = depth;
      node = child;
    }
    if (nodes_[node].pair < 0) nodes_[node].pair = static_cast<int32_t>(i);
    longest_ = std::max(longest_, needle.size());
  }
  std::fill(std::begin(root_next_), std::end(root_next_), 0);
  for (const auto& [byte, child] : nodes_[0].next) root_next_[byte] = child;
  if (nodes_[0].next.size() <= kFewStarts)
    for (const auto& [byte, child] : nodes_[0].next) starts_[start_count_++] = byte;
  // Breadth first, so a node's failure target (shallower) is complete before the node.
  std::deque<int32_t> queue;
  for (const auto& [byte, child] : nodes_[0].next) {
    (void)byte;
    nodes_[child].fail = 0;
    nodes_[child].output = nodes_[child].pair >= 0 ? child : -1;
    queue.push_back(child);
  }
  while (!queue.empty()) {
    const int32_t node = queue.front();
    queue.pop_front();
    for (const auto& [byte, child] : nodes_[node].next) {
      Node& c = nodes_[child];
      c.fail = Step(nodes_[node].fail, byte);
      c.output = c.pair >= 0 ? child : nodes_[c.fail].output;
      queue.push_back(child);
    }
  }
}

int32_t ReplaceSet::Child(int32_t node, uint8_t byte) const {
  if (node == 0) return root_next_[byte];
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), byte,
                             [](const std::pair<uint8_t, int32_t>& e, uint8_t b) { return e.first < b; });
  return it != next.end() && it->first == byte ? it->second : -1;
}

int32_t ReplaceSet::Step(int32_t node, uint8_t byte) const {
  for (;;) {
    const int32_t child = Child(node, byte);
    if (child >= 0) return child;
    node = nodes_[node].fail;
  }
}

size_t ReplaceSet::NextStart(const char* bytes, size_t from, size_t end) const {
  size_t at = from;
  if (start_count_ > 0) {
    // 16 bytes compared with each start at once (GCC and Clang vectors: SSE2 on x86-64, NEON on arm64).
    using Block = uint8_t __attribute__((vector_size(16)));
    Block starts[kFewStarts];
    for (size_t i = 0; i < start_count_; ++i) starts[i] = Block{} + starts_[i];
    for (; at + 16 <= end; at += 16) {
      Block block;
      std::memcpy(&block, bytes + at, sizeof block);
      Block hit = Block{};
      for (size_t i = 0; i < start_count_; ++i) hit |= (Block)(block == starts[i]);
      uint64_t halves[2];
      std::memcpy(halves, &hit, sizeof halves);
      if ((halves[0] | halves[1]) != 0) break;
    }
  }
  while (at < end && root_next_[static_cast<uint8_t>(bytes[at])] == 0) ++at;
  return at;
}

std::string ReplaceSet::ReplaceAll(std::string_view text, std::vector<uint64_t>* counts) const {
  // A stream that does not own the set: it lives only for this call.
  StreamReplacer stream(std::shared_ptr<const ReplaceSet>(std::shared_ptr<const ReplaceSet>(), this));
  std::string out;
  stream.Take(text, out);
  stream.Finish(out);
  if (counts != nullptr) {
    counts->resize(pairs_.size());
    for (size_t i = 0; i < pairs_.size(); ++i) (*counts)[i] += stream.counts()[i];
  }
  return out;
}

StreamReplacer::StreamReplacer(std::shared_ptr<const ReplaceSet> set)
    : set_(std::move(set)), counts_(set_->pairs().size(), 0) {}

void StreamReplacer::Take(std::string_view data, std::string& out) {
  if (set_->empty()) {
    out.append(data);
    return;
  }
  if (pending_.empty() && state_ == 0 && !best_) {
    // Nothing held and the automaton at its root: the bytes before the first that starts a needle go straight out.
    const size_t free = set_->NextStart(data.data(), 0, data.size());
    out.append(data.substr(0, free));
    data.remove_prefix(free);
    if (data.empty()) return;
  }
  pending_.append(data);
  Scan(out, false);
}

void StreamReplacer::Finish(std::string& out) { Scan(out, true); }

void StreamReplacer::Commit(std::string& out) {
  out.append(pending_, emitted_, best_->start - emitted_);
  out.append(set_->pairs_[best_->pair].replacement);
  ++counts_[best_->pair];
  // Matching starts again after the replaced needle: matches do not overlap.
  emitted_ = best_->start + best_->length;
  scanned_ = emitted_;
  state_ = 0;
  best_.reset();
}

void StreamReplacer::Scan(std::string& out, bool final) {
  const std::vector<ReplaceSet::Node>& nodes = set_->nodes_;
  for (;;) {
    while (scanned_ < pending_.size()) {
      if (state_ == 0) {
        // At the root, bytes that start no needle are passed over in a tight loop: most of a body is such bytes.
        scanned_ = set_->NextStart(pending_.data(), scanned_, pending_.size());
        if (scanned_ == pending_.size()) break;
      }
      state_ = set_->Step(state_, static_cast<uint8_t>(pending_[scanned_]));
      ++scanned_;
      const ReplaceSet::Node& node = nodes[state_];
      if (node.output >= 0) {
        // The deepest needle ending here starts leftmost of those ending here.
        const ReplaceSet::Node& hit = nodes[node.output];
        const Match m{scanned_ - static_cast<size_t>(hit.depth), static_cast<size_t>(hit.depth), hit.pair};
        if (!best_ || m.start < best_->start || (m.start == best_->start && m.length > best_->length)) best_ = m;
      }
      if (!best_) continue;
      // No needle still in progress can start at or before the best match's start (or, starting there, be longer).
      const size_t frontier = scanned_ - static_cast<size_t>(node.depth);
      if (frontier > best_->start || (frontier == best_->start && node.next.empty())) Commit(out);
    }
    if (!final || !best_) break;
    Commit(out);
  }
  size_t safe = final ? pending_.size() : scanned_ - static_cast<size_t>(nodes[state_].depth);
  if (best_) safe = std::min(safe, best_->start);
  out.append(pending_, emitted_, safe - emitted_);
  pending_.erase(0, safe);
  scanned_ -= safe;
  if (best_) best_->start -= safe;
  emitted_ = 0;
}

}  // namespace isb::secrets
