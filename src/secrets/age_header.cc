// The age v1 header grammar: a version line, stanzas ("-> " arguments, base64 body lines of 64 columns ending with a
// shorter one), and "--- " with the MAC.
#include "secrets/age_header.h"

#include "base/base64.h"

namespace isb::secrets {
namespace {

constexpr std::string_view kArmorBegin = "-----BEGIN AGE ENCRYPTED FILE-----";
constexpr size_t kBodyColumns = 64;
constexpr size_t kMacBase64Size = 43;

Error Refuse(std::string why) { return Error::Of(Code::kInvalidArgument, "age file: " + std::move(why)); }
Error RefuseLine(size_t line, std::string why) {
  return Refuse("header line " + std::to_string(line) + ": " + std::move(why));
}

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

bool IsArgument(std::string_view arg) {
  if (arg.empty()) return false;
  for (char c : arg) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// Reads the header one line at a time; a line is the bytes up to a '\n', which must be there.
class LineReader {
 public:
  explicit LineReader(std::string_view file) : file_(file) {}
  bool Next(std::string_view& line) {
    size_t end = file_.find('\n', pos_);
    if (end == std::string_view::npos) return false;
    line = file_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++number_;
    return true;
  }
  size_t number() const { return number_; }
  size_t pos() const { return pos_; }

 private:
  std::string_view file_;
  size_t pos_ = 0;
  size_t number_ = 0;
};

Result<std::vector<std::string>> ParseArguments(std::string_view line, size_t number) {
  std::vector<std::string> args;
  for (;;) {
    size_t space = line.find(' ');
    std::string_view arg = line.substr(0, space);
    if (!IsArgument(arg)) {
      return RefuseLine(number, "a stanza argument is empty or holds a character outside printable ASCII");
    }
    args.emplace_back(arg);
    if (space == std::string_view::npos) return args;
    line.remove_prefix(space + 1);
  }
}

Result<std::string> ParseBody(LineReader& lines) {
  std::string text;
  for (;;) {
    std::string_view line;
    if (!lines.Next(line)) return Refuse("header truncated inside a stanza body");
    if (line.size() > kBodyColumns) return RefuseLine(lines.number(), "a stanza body line is over 64 columns");
    for (char c : line) {
      if (!IsBase64Char(c)) return RefuseLine(lines.number(), "a stanza body line is not unpadded base64");
    }
    text += line;
    if (line.size() < kBodyColumns) break;
  }
  auto body = AgeBase64Decode(text);
  if (!body.ok()) return RefuseLine(lines.number(), "the stanza body is not canonical base64");
  return std::move(body).value();
}

}  // namespace

std::string AgeBase64Encode(std::string_view bytes) {
  std::string out = Base64Encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

Result<std::string> AgeBase64Decode(std::string_view text) {
  for (char c : text) {
    if (!IsBase64Char(c)) return Error::Of(Code::kInvalidArgument, "invalid base64: a character outside the alphabet");
  }
  auto bytes = Base64Decode(text);
  if (!bytes.ok()) return bytes.error();
  if (AgeBase64Encode(*bytes) != text) {
    return Error::Of(Code::kInvalidArgument, "invalid base64: not canonical (unused bits are set)");
  }
  return bytes;
}

Result<AgeHeader> ParseAgeHeader(std::string_view file) {
  if (file.empty()) return Refuse("empty");
  if (file.starts_with(kArmorBegin)) {
    return Refuse("ASCII-armored (" + std::string(kArmorBegin) +
                  ") files are not read; give the binary form (encrypt without -a/--armor)");
  }
  if (!file.starts_with(kAgeVersionLine)) {
    if (file.starts_with("age-encryption.org/")) return Refuse("not version v1, the only version isb reads");
    return Refuse("not an age file (it does not start with 'age-encryption.org/v1')");
  }
  LineReader lines(file);
  std::string_view line;
  lines.Next(line);
  AgeHeader header;
  for (;;) {
    if (!lines.Next(line)) return Refuse("header truncated before its MAC line");
    if (line.starts_with("-> ")) {
      if (header.stanzas.size() == kAgeMaxStanzas) {
        return Refuse("more than " + std::to_string(kAgeMaxStanzas) + " recipient stanzas");
      }
      AgeStanza stanza;
      ISB_ASSIGN_OR_RETURN(stanza.args, ParseArguments(line.substr(3), lines.number()));
      ISB_ASSIGN_OR_RETURN(stanza.body, ParseBody(lines));
      header.stanzas.push_back(std::move(stanza));
      continue;
    }
    if (line.starts_with("---")) break;
    return RefuseLine(lines.number(), "expected a stanza ('-> ') or the MAC line ('--- ')");
  }
  if (header.stanzas.empty()) return Refuse("the header has no recipient stanza");
  if (line.size() != 4 + kMacBase64Size || line[3] != ' ') {
    return RefuseLine(lines.number(), "the MAC line is not '--- ' and 43 base64 characters");
  }
  auto mac = AgeBase64Decode(line.substr(4));
  if (!mac.ok()) return RefuseLine(lines.number(), "the MAC is not canonical base64");
  header.mac = std::move(mac).value();
  header.payload_offset = lines.pos();
  header.mac_input_size = header.payload_offset - 1 - 1 - kMacBase64Size;
  return header;
}

std::string FormatAgeHeaderForMac(const std::vector<AgeStanza>& stanzas) {
  std::string out(kAgeVersionLine);
  for (const AgeStanza& stanza : stanzas) {
    out += "->";
    for (const std::string& arg : stanza.args) out += " " + arg;
    out += '\n';
    std::string body = AgeBase64Encode(stanza.body);
    // Wrapped at 64 columns, ending with a shorter line, empty when the body fills its last line.
    for (size_t at = 0;; at += kBodyColumns) {
      std::string_view part = std::string_view(body).substr(std::min(at, body.size()), kBodyColumns);
      out += part;
      out += '\n';
      if (part.size() < kBodyColumns) break;
    }
  }
  out += "---";
  return out;
}

}  // namespace isb::secrets
