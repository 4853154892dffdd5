// Header lookup, query parsing and SSE framing for the Beast-free request and response.
#include "api/http_message.h"

namespace isb::api {

void Headers::Set(std::string_view name, std::string value) {
  for (auto& [n, v] : fields_) {
    if (EqualsIgnoreCase(n, name)) {
      v = std::move(value);
      return;
    }
  }
  Add(std::string(name), std::move(value));
}

std::string Headers::Get(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return "";
}

bool Headers::Has(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (EqualsIgnoreCase(n, name)) return true;
  }
  return false;
}

std::string_view Request::Path() const {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

std::string_view Request::Query() const {
  std::string_view t = target;
  size_t q = t.find('?');
  return q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
}

std::string Request::QueryParam(std::string_view name) const {
  std::string_view q = Query();
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return "";
}

Response JsonResponse(int status, std::string body) {
  Response r;
  r.status = status;
  r.headers.Set("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

std::string SseEvent(std::string_view event, std::string_view data) {
  std::string out;
  if (!event.empty()) out.append("event: ").append(event).append("\n");
  // A line break inside data would end the field; each line becomes its own data field, which SSE rejoins.
  size_t start = 0;
  while (true) {
    size_t nl = data.find_first_of("\r\n", start);
    out.append("data: ").append(data.substr(start, nl - start)).append("\n");
    if (nl == std::string_view::npos) break;
    start = nl + (data.compare(nl, 2, "\r\n") == 0 ? 2 : 1);
  }
  out.append("\n");
  return out;
}

}  // namespace isb::api
