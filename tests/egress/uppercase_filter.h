// A test filter of WebSocket messages: text messages uppercased both ways, binary ones passed as they came; it
// records which messages it was asked about.
#pragma once

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "egress/message_filter.h"

namespace isb::egress {

class UppercaseBody : public BodyFilter {
 public:
  void Take(std::string_view data, std::string& out) override {
    for (char c : data) out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  void Finish(std::string&) override {}
};

class UppercaseText : public MessageFilter {
 public:
  std::unique_ptr<BodyFilter> WebSocketMessage(const Exchange&, bool to_origin, bool text) override {
    asked.push_back(std::string(to_origin ? "up " : "down ") + (text ? "text" : "binary"));
    return text ? std::make_unique<UppercaseBody>() : nullptr;
  }
  std::vector<std::string> asked;  // "up text", "down binary", ...
};

}  // namespace isb::egress
