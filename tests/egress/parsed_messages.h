// Test helpers: a request or response head parsed from its bytes (a failure when it does not parse), and the
// content of a chunked body.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "egress/http_body.h"
#include "egress/http_head.h"
#include "egress/http_response.h"

namespace isb::egress {

inline HttpHead Request(std::string_view bytes) {
  HeadResult r = ParseHttpHead(bytes);
  EXPECT_EQ(r.kind, HeadResult::kParsed) << r.reason;
  return r.head;
}

inline ResponseHead Response(std::string_view bytes) {
  ResponseHeadResult r = ParseResponseHead(bytes);
  EXPECT_EQ(r.kind, ResponseHeadResult::kParsed) << r.reason;
  return r.head;
}

// The content of a chunked body, or "" with a failure when it does not scan whole.
inline std::string Dechunk(std::string_view body) {
  ChunkedScanner scanner;
  std::string data;
  ChunkedScanner::Step step = scanner.Feed(body, &data);
  EXPECT_EQ(step.state, ChunkedScanner::State::kDone) << step.reason;
  EXPECT_EQ(step.used, body.size());
  return data;
}

}  // namespace isb::egress
