// What a preview's app is sent and what it may set: isb's credentials and forwarding fields the client made up are
// taken out of each request head, and the app's Set-Cookie fields lose their Domain attribute (cookies named like
// isb's are dropped). The app's other response fields pass as they are (spec 002, "Workspace port previews").
#pragma once

#include <string_view>
#include <vector>

#include "egress/http_head.h"
#include "egress/message_filter.h"

namespace isb::api {

// Whether a cookie called `name` is named like one of isb's (isb_session, isb_preview: any "isb_" name, also behind a
// "__Host-" or "__Secure-" prefix) or is Cloudflare Access' (CF_Authorization), in any case.
bool IsIsbCookieName(std::string_view name);

// Removes from a request's fields: Authorization carrying an isb credential ("isb_" after the scheme), isb's and
// Cloudflare Access' cookies (other cookies stay, in order; a Cookie field left empty goes), Cf-Access-* fields,
// and Forwarded, X-Forwarded-* and X-Real-IP.
void StripRequestCredentials(std::vector<egress::HttpHeader>& headers);

// Edits a response's Set-Cookie fields: the Domain attribute removed (the cookie stays host-only), a cookie named
// like isb's (IsIsbCookieName) dropped whole.
void EditSetCookies(std::vector<egress::HttpHeader>& headers);

// The two edits above as the message relay's filter; bodies pass untouched.
class PreviewFilter final : public egress::MessageFilter {
 public:
  std::string RequestHead(const egress::Exchange&, egress::HttpHead& head) override;
  void ResponseHead(const egress::Exchange&, const egress::HttpHead& request, egress::ResponseHead& head) override;
};

}  // namespace isb::api
