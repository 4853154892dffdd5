// The web UI's files as the daemon serves them: `/` (index.html) and `/assets/...`, with the browser security headers
// spec 002 asks of every page (a strict CSP, no framing, no referrer, no sniffing).
#pragma once

#include <span>
#include <string_view>

#include "api/http_message.h"

namespace isb::api {

// One built file of the UI.
struct WebAsset {
  std::string_view path;  // "/index.html", "/assets/app-HASH.js"
  std::string_view content_type;
  std::string_view etag;  // quoted, of the content
  std::string_view bytes;
  bool immutable = false;  // named by its content's hash: cached for a year
};

// The files the build embedded into the isb binary (web/embed.mjs writes the definition; only the isb binary links
// it).
std::span<const WebAsset> EmbeddedWebAssets();

// The headers every UI response carries: scripts, styles and connections from isb's own origin only, none inline;
// no plugins, no <base>, no framing (CSP and X-Frame-Options); no Referer; no content sniffing.
void SetPageSecurityHeaders(Headers& headers);

// GET or HEAD of `/` (index.html, revalidated on every load) or `/assets/NAME` (immutable); an If-None-Match naming the
// file's ETag gets 304. Another method is 405, an unknown file 404. Thread-safe; `assets` must outlive it.
class WebUi {
 public:
  explicit WebUi(std::span<const WebAsset> assets) : assets_(assets) {}
  Response Handle(const Request& req) const;

 private:
  std::span<const WebAsset> assets_;
};

}  // namespace isb::api
