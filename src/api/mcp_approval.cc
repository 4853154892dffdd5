// Sealing and redeeming the requestState of a stateless MCP approval (HMAC-SHA-256, single use).
#include "api/mcp_approval.h"

#include <algorithm>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <nlohmann/json.hpp>

#include "api/json_util.h"
#include "base/base64.h"
#include "base/random.h"

namespace isb::api {
namespace {

constexpr size_t kMaxState = 4096;  // a state this server issued is a few hundred bytes

Error Refused(const std::string& why) {
  return Error::Of(Code::kForbidden, why + "; call the tool again without it to be asked anew");
}

}  // namespace

std::string CallerOf(const identity::Principal& who) {
  return std::string(identity::PrincipalKindName(who.kind)) + "/" + std::to_string(who.user_id) + "/" +
         std::to_string(who.credential_id) + "/" + who.Subject();
}

ApprovalStates::ApprovalStates(std::string key, std::chrono::seconds ttl, identity::Clock now)
    : key_(std::move(key)), ttl_(ttl), now_(std::move(now)) {}

std::string ApprovalStates::Seal(std::string_view payload) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (::HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
             reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), mac, &len) == nullptr) {
    return "";
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

Result<std::string> ApprovalStates::Issue(const ApprovalCall& call) {
  if (key_.size() < 32) return Error::Of(Code::kUnavailable, "no key to seal an approval's state with");
  ISB_ASSIGN_OR_RETURN(std::string nonce, RandomHex(16));
  const nlohmann::json payload = {{"v", 1},
                                  {"tool", call.tool},
                                  {"org", call.org},
                                  {"exp", now_() + ttl_.count()},
                                  {"nonce", nonce},
                                  {"caller", Seal("caller\n" + call.caller)},
                                  {"args", Seal("args\n" + call.args)}};
  const std::string text = Base64Encode(Dump(payload));
  const std::string mac = Seal(text);
  if (mac.empty()) return Error::Of(Code::kUnavailable, "an approval's state could not be sealed");
  return text + "." + mac;
}

Status ApprovalStates::Redeem(std::string_view state, const ApprovalCall& call) {
  const Error forged = Refused("requestState is not one this server issued, or it was altered");
  const size_t dot = state.find('.');
  if (key_.size() < 32 || state.size() > kMaxState || dot == std::string_view::npos) return forged;
  // The seal covers the text as sent, so no two spellings of one payload both pass.
  const std::string mac = Seal(state.substr(0, dot));
  const std::string_view sent = state.substr(dot + 1);
  if (mac.empty() || sent.size() != mac.size() || CRYPTO_memcmp(sent.data(), mac.data(), mac.size()) != 0)
    return forged;
  auto text = Base64Decode(state.substr(0, dot), Base64Padding::kRequired);
  if (!text.ok()) return forged;
  // Sealed by this server: the payload is the one Issue wrote, so its members are there with their types.
  const nlohmann::json payload = nlohmann::json::parse(*text, nullptr, false);
  if (!payload.is_object() || payload.value("v", 0) != 1) return forged;
  const int64_t expiry = payload.value("exp", int64_t{0});
  const Error expired =
      Refused("requestState expired: an approval is answered within " + std::to_string(ttl_.count()) + " s");
  if (now_() >= expiry) return expired;
  if (payload.value("caller", "") != Seal("caller\n" + call.caller))
    return Refused("requestState was issued to another caller");
  if (payload.value("org", "") != call.org)
    return Refused("requestState was issued in org '" + payload.value("org", "") + "'");
  if (payload.value("tool", "") != call.tool)
    return Refused("requestState was issued for a call of " + payload.value("tool", ""));
  if (payload.value("args", "") != Seal("args\n" + call.args))
    return Refused("requestState was issued for other arguments");
  const std::string nonce = payload.value("nonce", "");
  MutexLock lock(mu_);
  // The time never goes back here: a state forgotten below has lapsed for every later call too, so it cannot be
  // redeemed again however the calls interleave or the clock is set.
  const int64_t now = latest_ = std::max(latest_, now_());
  if (now >= expiry) return expired;
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    redeemed_.erase(by_expiry_.begin()->second);
    by_expiry_.erase(by_expiry_.begin());
  }
  if (redeemed_.contains(nonce)) return Refused("requestState was used already: an approval answers one call");
  if (redeemed_.size() >= kMaxRedeemed)
    return Error::Of(Code::kUnavailable, "too many approvals were answered in the last " +
                                             std::to_string(ttl_.count()) + " s; try again later");
  redeemed_.insert(nonce);
  by_expiry_.emplace(expiry, nonce);
  return {};
}

}  // namespace isb::api
