// Bech32: the BIP 173 checksum over 5-bit groups.
#include "secrets/age_bech32.h"

#include <openssl/crypto.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace isb::secrets {
namespace {

constexpr std::string_view kCharset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

uint32_t Polymod(const std::vector<uint8_t>& values) {
  constexpr uint32_t kGenerator[5] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3};
  uint32_t chk = 1;
  for (uint8_t v : values) {
    uint32_t top = chk >> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (int i = 0; i < 5; ++i) {
      if ((top >> i) & 1) chk ^= kGenerator[i];
    }
  }
  return chk;
}

std::vector<uint8_t> ExpandHrp(std::string_view hrp) {
  std::vector<uint8_t> out;
  out.reserve(hrp.size() * 2 + 1);
  for (char c : hrp) out.push_back(static_cast<uint8_t>(c) >> 5);
  out.push_back(0);
  for (char c : hrp) out.push_back(static_cast<uint8_t>(c) & 31);
  return out;
}

// Regroups bits; from 8 to 5 pads the tail, from 5 to 8 refuses non-zero padding or a whole spare group.
bool Regroup(const std::vector<uint8_t>& in, int from, int to, bool pad, std::vector<uint8_t>& out) {
  uint32_t acc = 0;
  int bits = 0;
  const uint32_t mask = (1u << to) - 1;
  for (uint8_t v : in) {
    acc = (acc << from) | v;
    bits += from;
    while (bits >= to) {
      bits -= to;
      out.push_back(static_cast<uint8_t>((acc >> bits) & mask));
    }
  }
  if (pad) {
    if (bits > 0) out.push_back(static_cast<uint8_t>((acc << (to - bits)) & mask));
    return true;
  }
  return bits < from && ((acc << (to - bits)) & mask) == 0;
}

// Identities pass through here: every buffer that held their bits is wiped whole (capacity, not only size) on the
// way out.
template <typename... Buffers>
class WipeOnExit {
 public:
  explicit WipeOnExit(Buffers&... buffers) : buffers_(buffers...) {}
  ~WipeOnExit() {
    std::apply([](auto&... b) { (Wipe(b), ...); }, buffers_);
  }

 private:
  template <typename B>
  static void Wipe(B& b) {
    b.resize(b.capacity());
    OPENSSL_cleanse(b.data(), b.size());
  }
  std::tuple<Buffers&...> buffers_;
};

Error Invalid(std::string why) { return Error::Of(Code::kInvalidArgument, "bech32: " + std::move(why)); }

}  // namespace

std::string Bech32Encode(std::string_view hrp, std::string_view bytes) {
  std::vector<uint8_t> in(bytes.begin(), bytes.end()), data, values;
  WipeOnExit wipe(in, data, values);
  // Sized up front: a buffer that grew would leave its old copy behind, unwiped.
  data.reserve(bytes.size() * 8 / 5 + 1);
  values.reserve(hrp.size() * 2 + 1 + data.capacity() + 6);
  for (uint8_t v : ExpandHrp(hrp)) values.push_back(v);
  Regroup(in, 8, 5, true, data);
  values.insert(values.end(), data.begin(), data.end());
  values.insert(values.end(), 6, 0);
  const uint32_t chk = Polymod(values) ^ 1;
  std::string out;
  out.reserve(hrp.size() + 1 + data.size() + 6);
  out += hrp;
  out += '1';
  for (uint8_t v : data) out += kCharset[v];
  for (int i = 0; i < 6; ++i) out += kCharset[(chk >> (5 * (5 - i))) & 31];
  return out;
}

Result<Bech32Data> Bech32Decode(std::string_view text) {
  bool lower = false, upper = false;
  std::string folded;
  std::vector<uint8_t> data, values, bytes;
  WipeOnExit wipe(folded, data, values, bytes);
  folded.reserve(text.size());
  for (char c : text) {
    if (c < 33 || c > 126) return Invalid("a character outside printable ASCII");
    if (c >= 'a' && c <= 'z') lower = true;
    if (c >= 'A' && c <= 'Z') {
      upper = true;
      c = static_cast<char>(c - 'A' + 'a');
    }
    folded += c;
  }
  if (lower && upper) return Invalid("mixed upper and lower case");
  const size_t sep = folded.rfind('1');
  if (sep == std::string::npos || sep == 0) return Invalid("no human-readable part before the last '1'");
  if (folded.size() - sep - 1 < 6) return Invalid("too short for its checksum");
  data.reserve(folded.size());
  values.reserve(sep * 2 + 1 + folded.size());
  bytes.reserve(folded.size());
  for (size_t i = sep + 1; i < folded.size(); ++i) {
    size_t v = kCharset.find(folded[i]);
    if (v == std::string_view::npos) return Invalid("a character outside the bech32 alphabet");
    data.push_back(static_cast<uint8_t>(v));
  }
  Bech32Data out{folded.substr(0, sep), {}};
  for (uint8_t v : ExpandHrp(out.hrp)) values.push_back(v);
  values.insert(values.end(), data.begin(), data.end());
  if (Polymod(values) != 1) return Invalid("checksum mismatch (a character was mistyped or lost)");
  data.resize(data.size() - 6);
  if (!Regroup(data, 5, 8, false, bytes)) return Invalid("invalid padding");
  out.bytes.assign(bytes.begin(), bytes.end());
  return out;
}

}  // namespace isb::secrets
