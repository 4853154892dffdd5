// Fuzzes what an OAuth client sends before it is anyone: a form body or query string, a registration body, a
// client_id URL, and a client metadata document with the Cache-Control it came with. Input: the same bytes read
// each way.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/oauth_form.h"

using namespace isb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto form = api::ParseForm(in);
  if (form.ok() && form->size() > api::kMaxFormFields) abort();
  // A metadata document's client is held to what a registration is (below).
  auto doc = api::ParseClientDocument("https://client.example/c.json", in);
  if (api::CheckClientIdUrl(in).ok()) {
    if (!api::IsClientIdUrl(in) || in.find('#') != std::string_view::npos || in.size() > api::kMaxClientIdUrlBytes)
      abort();
    for (unsigned char c : in)
      if (c <= 0x20 || c >= 0x7f) abort();
  }
  (void)api::ClientDocumentLifetime(in);
  for (auto reg : {api::ParseClientRegistration(in), doc}) {
    if (!reg.ok()) continue;
    // What registers is what the authorize endpoint will trust: every URI passes the check on its own, and the
    // name holds no control character.
    if (reg->redirect_uris.empty() || reg->redirect_uris.size() > api::kMaxRedirectUris) abort();
    for (const std::string& uri : reg->redirect_uris)
      if (!api::CheckRedirectUri(uri).ok() || api::RedirectHost(uri).empty()) abort();
    for (unsigned char c : reg->name)
      if (c < 0x20 || c == 0x7f) abort();
  }
  // Escaped text never holds a character that could open markup or end an attribute.
  const std::string escaped = api::HtmlEscape(in);
  if (escaped.find_first_of("<>\"'") != std::string::npos) abort();
  return 0;
}
