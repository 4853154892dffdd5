// Fuzzes what a preview's client sends before isb knows whose it is: the Host field and target a preview is picked
// by, and the header fields the proxy edits on the way to the app (and the Set-Cookie fields on the way back).
// Input: a Host line, a target line, then header lines "Name: value"; the whole input is also scanned as the bytes
// of a head the HTTP server refused (ScanRequestNames, ScanHostField).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "api/preview_filter.h"
#include "api/preview_host.h"
#include "base/ascii.h"

using namespace isb;

namespace {

std::string_view NextLine(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return line;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = AsciiLower(c);
  return out;
}

// What a scan finds is a piece of what it scanned, a value without its blanks or a line's end.
void CheckScanned(std::string_view scanned, std::string_view found) {
  if (found.empty()) return;
  if (found.data() < scanned.data() || found.data() + found.size() > scanned.data() + scanned.size()) abort();
  if (found.find('\n') != std::string_view::npos) abort();
  if (found.front() == ' ' || found.front() == '\t' || found.back() == ' ' || found.back() == '\t' ||
      found.back() == '\r')
    abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const api::RequestNames names = api::ScanRequestNames(in);
  CheckScanned(in, names.host);
  CheckScanned(in, names.target);
  if (names.target.find(' ') != std::string_view::npos) abort();
  const std::string_view field_host = api::ScanHostField(in);
  CheckScanned(in, field_host);
  // The request line is never read as a field: the host is the first Host line after it (unless the head ends
  // right at the request line).
  if (const size_t eol = in.find('\n'); eol != std::string_view::npos && eol > 0 && in.find("\r\n\r\n") != eol - 1 &&
                                        names.host != api::ScanHostField(in.substr(eol + 1)))
    abort();
  const std::string_view host = NextLine(in);
  const std::string_view target = NextLine(in);
  for (std::string_view domain : {std::string_view("localhost"), std::string_view("preview.example.net")}) {
    auto named = api::ParsePreviewOfRequest(host, target, domain);
    if (!named) continue;
    // A preview's name written again names the same preview, and only names under the domain are previews.
    const std::string name = api::PreviewHostName(*named, domain);
    auto again = api::ParsePreviewHost(name, domain);
    if (!again || !(*again == *named)) abort();
    if (named->port == 0 || named->sandbox.size() != 19 || named->org.empty()) abort();
    if (Lower(std::string(host) + std::string(target)).find(std::string(domain)) == std::string::npos) abort();
  }
  std::vector<egress::HttpHeader> fields;
  while (!in.empty()) {
    std::string_view line = NextLine(in);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    fields.push_back({std::string(line.substr(0, colon)), std::string(line.substr(colon + 1))});
  }
  std::vector<egress::HttpHeader> request = fields;
  api::StripRequestCredentials(request);
  for (const egress::HttpHeader& h : request) {
    const std::string name = Lower(h.name);
    if (name == "forwarded" || name == "x-real-ip" || name.starts_with("x-forwarded-") ||
        name.starts_with("cf-access-") || name == "cf-connecting-ip" || name == "true-client-ip" ||
        name == "x-client-ip" || name == "via")
      abort();
    if (name != "cookie") continue;
    if (h.value.empty()) abort();
    // No cookie left is named like isb's or Cloudflare Access'.
    std::string_view rest(h.value);
    while (!rest.empty()) {
      std::string_view pair = rest.substr(0, rest.find(';'));
      rest = pair.size() == rest.size() ? std::string_view() : rest.substr(pair.size() + 1);
      std::string_view cookie_name = pair.substr(0, pair.find('='));
      while (!cookie_name.empty() && (cookie_name.front() == ' ' || cookie_name.front() == '\t'))
        cookie_name.remove_prefix(1);
      while (!cookie_name.empty() && (cookie_name.back() == ' ' || cookie_name.back() == '\t'))
        cookie_name.remove_suffix(1);
      if (api::IsIsbCookieName(cookie_name)) abort();
    }
  }
  std::vector<egress::HttpHeader> response = fields;
  api::EditSetCookies(response);
  for (const egress::HttpHeader& h : response) {
    if (Lower(h.name) != "set-cookie") continue;
    std::string_view v(h.value);
    for (size_t semi = v.find(';'); semi != std::string_view::npos; semi = v.find(';', semi + 1)) {
      std::string_view attribute = v.substr(semi + 1);
      attribute = attribute.substr(0, attribute.find_first_of(";="));
      while (!attribute.empty() && (attribute.front() == ' ' || attribute.front() == '\t')) attribute.remove_prefix(1);
      while (!attribute.empty() && (attribute.back() == ' ' || attribute.back() == '\t')) attribute.remove_suffix(1);
      if (Lower(attribute) == "domain") abort();
    }
  }
  return 0;
}
