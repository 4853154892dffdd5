// A test filter that changes bodies' lengths: every `needle` in a body becomes `replacement`, found across any split
// of the body's pieces (it keeps back a tail one byte shorter than the needle), and a request head gets a field.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "egress/message_filter.h"

namespace isb::egress {

class ReplacingBody : public BodyFilter {
 public:
  ReplacingBody(std::string needle, std::string replacement)
      : needle_(std::move(needle)), replacement_(std::move(replacement)) {}

  void Take(std::string_view data, std::string& out) override {
    pending_.append(data);
    size_t at = 0;
    for (size_t hit; (hit = pending_.find(needle_, at)) != std::string::npos; at = hit + needle_.size())
      out.append(pending_, at, hit - at).append(replacement_);
    // What could still be the start of a needle stays back.
    const size_t keep = std::min(pending_.size() - at, needle_.size() - 1);
    out.append(pending_, at, pending_.size() - at - keep);
    pending_.erase(0, pending_.size() - keep);
    most_kept_ = std::max(most_kept_, pending_.size());
  }
  void Finish(std::string& out) override {
    out.append(pending_);
    pending_.clear();
  }
  size_t most_kept() const { return most_kept_; }

 private:
  std::string needle_, replacement_;
  std::string pending_;
  size_t most_kept_ = 0;
};

// Replaces `needle` in every request and response body, and adds "X-Filtered: <sandbox>" to every request head.
class ReplacingFilter : public MessageFilter {
 public:
  ReplacingFilter(std::string needle, std::string replacement)
      : needle_(std::move(needle)), replacement_(std::move(replacement)) {}
  std::string RequestHead(const Exchange& exchange, HttpHead& head) override {
    head.headers.push_back({"X-Filtered", exchange.sandbox});
    return {};
  }
  std::unique_ptr<BodyFilter> RequestBody(const Exchange&, const HttpHead&) override {
    return std::make_unique<ReplacingBody>(needle_, replacement_);
  }
  std::unique_ptr<BodyFilter> ResponseBody(const Exchange&, const HttpHead&, const egress::ResponseHead&) override {
    return std::make_unique<ReplacingBody>(needle_, replacement_);
  }

 private:
  std::string needle_, replacement_;
};

}  // namespace isb::egress
