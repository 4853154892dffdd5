// Editing a preview's request and response heads.
#include "api/preview_filter.h"

#include <algorithm>
#include <string>

#include "base/ascii.h"
#include "egress/http_response.h"

namespace isb::api {
namespace {

bool StartsNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A field a client could make up to pass as its proxy's word on who it is or which proxies it came through; the
// app behind a preview gets none (no proxy of isb's says these).
bool IsForwardingField(std::string_view name) {
  return EqualsIgnoreCase(name, "Forwarded") || StartsNoCase(name, "X-Forwarded-") ||
         EqualsIgnoreCase(name, "X-Real-IP") || EqualsIgnoreCase(name, "CF-Connecting-IP") ||
         EqualsIgnoreCase(name, "True-Client-IP") || EqualsIgnoreCase(name, "X-Client-IP") ||
         EqualsIgnoreCase(name, "Via");
}

// "Bearer isb_tok_...", or any scheme whose credential is isb's.
bool CarriesIsbCredential(std::string_view value) {
  value = Trim(value);
  size_t space = value.find(' ');
  std::string_view credential = Trim(space == std::string_view::npos ? value : value.substr(space + 1));
  return StartsNoCase(credential, "isb_") || StartsNoCase(value, "isb_");
}

// A Cookie field's pairs without isb's; empty when none is left.
std::string KeepAppCookies(std::string_view value) {
  std::string kept;
  size_t start = 0;
  while (start <= value.size()) {
    size_t semi = value.find(';', start);
    std::string_view pair =
        Trim(value.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start));
    std::string_view name = Trim(pair.substr(0, pair.find('=')));
    if (!pair.empty() && !IsIsbCookieName(name)) {
      if (!kept.empty()) kept += "; ";
      kept += pair;
    }
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  return kept;
}

// A Set-Cookie value without its Domain attribute; empty when the cookie is to be dropped.
std::string WithoutDomain(std::string_view value) {
  size_t semi = value.find(';');
  std::string_view pair = value.substr(0, semi);
  if (IsIsbCookieName(Trim(pair.substr(0, pair.find('='))))) return {};
  std::string out(pair);
  while (semi != std::string_view::npos) {
    size_t next = value.find(';', semi + 1);
    std::string_view attribute =
        value.substr(semi + 1, next == std::string_view::npos ? std::string_view::npos : next - semi - 1);
    std::string_view attr_name = Trim(attribute.substr(0, attribute.find('=')));
    if (!EqualsIgnoreCase(attr_name, "Domain")) {
      out += ';';
      out += attribute;
    }
    semi = next;
  }
  return out;
}

}  // namespace

bool IsIsbCookieName(std::string_view name) {
  if (StartsNoCase(name, "__Host-"))
    name.remove_prefix(7);
  else if (StartsNoCase(name, "__Secure-"))
    name.remove_prefix(9);
  return StartsNoCase(name, "isb_") || EqualsIgnoreCase(name, "CF_Authorization");
}

void StripRequestCredentials(std::vector<egress::HttpHeader>& headers) {
  std::vector<egress::HttpHeader> out;
  out.reserve(headers.size());
  for (egress::HttpHeader& h : headers) {
    if (IsForwardingField(h.name) || StartsNoCase(h.name, "Cf-Access-")) continue;
    if (EqualsIgnoreCase(h.name, "Authorization") && CarriesIsbCredential(h.value)) continue;
    if (EqualsIgnoreCase(h.name, "Cookie")) {
      h.value = KeepAppCookies(h.value);
      if (h.value.empty()) continue;
    }
    out.push_back(std::move(h));
  }
  headers = std::move(out);
}

void EditSetCookies(std::vector<egress::HttpHeader>& headers) {
  std::vector<egress::HttpHeader> out;
  out.reserve(headers.size());
  for (egress::HttpHeader& h : headers) {
    if (EqualsIgnoreCase(h.name, "Set-Cookie")) {
      h.value = WithoutDomain(h.value);
      if (h.value.empty()) continue;
    }
    out.push_back(std::move(h));
  }
  headers = std::move(out);
}

std::string PreviewFilter::RequestHead(const egress::Exchange&, egress::HttpHead& head) {
  StripRequestCredentials(head.headers);
  return {};
}

void PreviewFilter::ResponseHead(const egress::Exchange&, const egress::HttpHead&, egress::ResponseHead& head) {
  EditSetCookies(head.headers);
}

}  // namespace isb::api
