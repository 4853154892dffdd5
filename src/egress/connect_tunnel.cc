// A CONNECT tunnel's first bytes from the sandbox, told apart (TLS, HTTP, a protocol of its own) and checked
// against the host the CONNECT named before any of them goes on; then the tunnel is relayed untouched.
#include <boost/asio.hpp>

#include "base/ascii.h"
#include "egress/proxy_impl.h"

namespace isb::egress {

namespace asio = boost::asio;

// The sandbox's side of a CONNECT tunnel to `host`:`port`, checked before any of it goes on. TLS whose
// ClientHello names another host (fronting), or HTTP requests (whose Host no one would check: plain HTTP goes
// through the proxy as absolute-form requests, each checked), close the tunnel; a malformed hello or head too.
// Anything else (TLS for `host`, SSH, a database protocol) is the named host's and is relayed untouched. The
// origin's side flows meanwhile, for protocols whose server speaks first.
asio::awaitable<void> Proxy::Impl::RelayTunnel(Socket& from, Socket& to, std::string buffer, const std::string& box,
                                               const std::string& host, uint16_t port, ByteCount up, RelayEnds& ends) {
  char buf[16384];
  for (int reads = 0;; ++reads) {
    Sniff s = buffer.empty() ? Sniff{} : hooks_.classify(buffer, port, false);
    // A whole first line tells HTTP from the line protocols that look like it (SMTP's "EHLO host", IMAP, POP),
    // whose client then waits for an answer: no waiting for the blank line that HTTP's head would end with.
    const bool http_like = s.state == Sniff::State::kNeedMore || s.kind == Sniff::Kind::kHttp;
    if (http_like && s.kind != Sniff::Kind::kTls && !buffer.empty() && buffer[0] != '\x16') {
      if (size_t eol = buffer.find('\n'); eol != std::string::npos) {
        std::string_view line = std::string_view(buffer).substr(0, eol);
        if (line.ends_with('\r')) line.remove_suffix(1);
        // An empty first line is no line protocol's: servers skip it before a request, so the verdict that
        // refuses it stands; re-deciding would relay a request unchecked.
        if (s.state != Sniff::State::kMalformed || !line.empty()) {
          s.state = Sniff::State::kDone;
          s.kind = NamesAnHttpVersion(line) ? Sniff::Kind::kHttp : Sniff::Kind::kUnknown;
        }
      }
    }
    bool undecided = false;  // still not told apart after all the reads or bytes a head may take
    if (s.state == Sniff::State::kNeedMore) {
      if (reads >= kMaxHeadReads || buffer.size() >= opts_.max_head) {
        undecided = true;
      } else {
        auto [ec, n] = co_await ReadSome(from, asio::buffer(buf), ends);
        if (!ec) {
          buffer.append(buf, n);
          continue;
        }
        if (ec != asio::error::eof) co_return CloseBoth(from, to);
        if (buffer.empty()) co_return HalfClose(to, ends);
        // Ended before it could be told apart: what came is too short to carry a request; it goes on.
      }
    }
    std::string refusal;
    if (undecided)
      refusal = "a CONNECT tunnel to " + host +
                " began with bytes that were still neither a TLS ClientHello nor "
                "an HTTP request line after " +
                std::to_string(reads) + " reads and " + std::to_string(buffer.size()) + " bytes";
    else if (s.kind == Sniff::Kind::kHttp)
      refusal =
          "a CONNECT tunnel carries no plain HTTP: send http:// requests to the proxy as they are, each is checked";
    else if (s.kind == Sniff::Kind::kTls && s.state == Sniff::State::kMalformed)
      refusal = "a CONNECT tunnel to " + host + " began with a malformed TLS ClientHello";
    else if (s.kind == Sniff::Kind::kTls && !s.host.empty() && !EqualsIgnoreCase(s.host, host))
      refusal = "a CONNECT tunnel to " + host + " names " + s.host + " in its TLS ClientHello: one host per tunnel";
    if (!refusal.empty()) {
      Report(box, host + ":" + std::to_string(port), refusal);
      co_return CloseBoth(from, to);
    }
    break;
  }
  if (!buffer.empty()) {
    bool sent = co_await Send(to, buffer);
    if (!sent) co_return CloseBoth(from, to);
    up.Add(buffer.size());
  }
  co_return co_await Pump(from, to, up, ends);
}

}  // namespace isb::egress
