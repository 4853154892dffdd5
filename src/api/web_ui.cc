// Serving the embedded UI: the file for a path, its caching, and the page security headers.
#include "api/web_ui.h"

#include "api/rest.h"

namespace isb::api {
namespace {

constexpr char kContentSecurityPolicy[] =
    "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

const WebAsset* FindAsset(std::span<const WebAsset> assets, std::string_view path) {
  for (const WebAsset& a : assets) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

// Whether an If-None-Match value ("*", or a list of entity tags, weak or strong) names `etag`.
bool NamesEtag(std::string_view header, std::string_view etag) {
  if (header == "*") return true;
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view tag = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
    while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == etag) return true;
  }
  return false;
}

}  // namespace

void SetPageSecurityHeaders(Headers& headers) {
  headers.Set("Content-Security-Policy", kContentSecurityPolicy);
  headers.Set("X-Frame-Options", "DENY");
  headers.Set("Referrer-Policy", "no-referrer");
  headers.Set("X-Content-Type-Options", "nosniff");
  headers.Set("Cross-Origin-Opener-Policy", "same-origin");
}

Response WebUi::Handle(const Request& req) const {
  Response r;
  std::string_view path = req.Path();
  const WebAsset* asset = FindAsset(assets_, path == "/" ? std::string_view("/index.html") : path);
  if (req.method != "GET" && req.method != "HEAD") {
    r = ErrorResponse(Error::Of(Code::kInvalidArgument, "method not allowed; use GET"));
    r.status = 405;
    r.headers.Set("Allow", "GET, HEAD");
  } else if (asset == nullptr || path == "/index.html") {
    r = NoRouteResponse(path);
  } else if (NamesEtag(req.headers.Get("If-None-Match"), asset->etag)) {
    r.status = 304;
  } else {
    r.headers.Set("Content-Type", std::string(asset->content_type));
    r.body = std::string(asset->bytes);
  }
  if (asset != nullptr && r.status < 400) {
    r.headers.Set("ETag", std::string(asset->etag));
    r.headers.Set("Cache-Control", asset->immutable ? "public, max-age=31536000, immutable" : "no-cache");
  }
  SetPageSecurityHeaders(r.headers);
  return r;
}

}  // namespace isb::api
