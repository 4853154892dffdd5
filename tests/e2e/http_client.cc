// The suite's raw HTTP/1.1 client.
#include "e2e/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace isb::e2e {
namespace {

using Clock = std::chrono::steady_clock;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// De-chunks `in`; false when it is not complete chunked encoding.
bool Dechunk(const std::string& in, std::string* out) {
  size_t pos = 0;
  for (;;) {
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string::npos) return false;
    size_t len = 0;
    try {
      len = std::stoul(in.substr(pos, eol - pos), nullptr, 16);
    } catch (...) {
      return false;
    }
    pos = eol + 2;
    if (len == 0) return true;
    if (pos + len + 2 > in.size()) return false;
    out->append(in, pos, len);
    pos += len + 2;
  }
}

}  // namespace

std::string HttpResponse::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

std::string RedactSecrets(std::string text) {
  for (const char* prefix : {"isb_tok_", "isb_sa_", "isb_sess_", "isb_inv_", "isb_rst_", "isb_setup_"}) {
    const std::string p = prefix;
    for (size_t at = text.find(p); at != std::string::npos; at = text.find(p, at + p.size())) {
      size_t end = at + p.size();
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '-'))
        ++end;
      text.replace(at + p.size(), end - at - p.size(), "[redacted]");
    }
  }
  return text;
}

std::string HttpResponse::Describe() const {
  std::ostringstream o;
  o << "HTTP " << status;
  if (!error.empty()) o << " (transport error: " << error << ")";
  o << " body=[" << body.substr(0, 1500) << (body.size() > 1500 ? "...]" : "]");
  return RedactSecrets(o.str());
}

HttpResponse ParseHttpResponse(const std::string& raw, bool decoded) {
  HttpResponse r;
  size_t start = 0;
  for (;;) {
    size_t end = raw.find("\r\n\r\n", start);
    if (end == std::string::npos) {
      r.error = "no complete response head in " + std::to_string(raw.size() - start) + " bytes";
      return r;
    }
    std::istringstream head(raw.substr(start, end - start));
    std::string line;
    std::getline(head, line);
    if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) {
      r.error = "bad status line: " + line;
      return r;
    }
    r.status = std::atoi(line.c_str() + 9);
    r.headers.clear();
    while (std::getline(head, line)) {
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      r.headers[Lower(Trim(line.substr(0, colon)))] = Trim(line.substr(colon + 1));
    }
    start = end + 4;
    if (r.status >= 200) break;  // 1xx: an interim response, the real one follows
  }
  std::string rest = raw.substr(start);
  if (decoded) {
    r.body = rest;
  } else if (Lower(r.Header("transfer-encoding")) == "chunked") {
    if (!Dechunk(rest, &r.body)) r.error = "incomplete chunked body";
  } else if (std::string cl = r.Header("content-length"); !cl.empty()) {
    size_t n = std::stoul(cl);
    if (rest.size() < n) r.error = "body shorter than Content-Length";
    r.body = rest.substr(0, n);
  } else {
    r.body = rest;
  }
  if (!r.body.empty()) {
    r.j = json::parse(r.body, nullptr, false);
    if (r.j.is_discarded()) r.j = nullptr;
  }
  return r;
}

RawConnection::RawConnection(const Endpoint& ep) {
  if (!ep.unix_path.empty()) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, ep.unix_path.c_str(), sizeof addr.sun_path - 1);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      error_ = "connect " + ep.Describe() + ": " + std::strerror(errno);
  } else {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(ep.port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      error_ = "connect " + ep.Describe() + ": " + std::strerror(errno);
  }
}

RawConnection::~RawConnection() { Close(); }

bool RawConnection::Send(std::string_view bytes) {
  if (fd_ < 0) return false;
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = std::string("send: ") + std::strerror(errno);
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void RawConnection::ShutdownWrite() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void RawConnection::Shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void RawConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string RawConnection::ReadAll(std::chrono::milliseconds timeout,
                                   const std::function<void(std::string_view)>& on_data) {
  std::string out;
  if (fd_ < 0) return out;
  auto until = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) {
      error_ = "timed out reading the response";
      break;
    }
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[65536];
    ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      // A reset after the response was sent still leaves us the response.
      if (out.empty()) error_ = std::string("recv: ") + std::strerror(errno);
      break;
    }
    if (got == 0) break;
    out.append(buf, static_cast<size_t>(got));
    if (on_data) on_data(std::string_view(buf, static_cast<size_t>(got)));
  }
  return out;
}

std::string BuildRequest(const std::string& method, const std::string& target, const std::string& body,
                         const std::vector<std::string>& headers) {
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  bool has_type = false;
  for (const auto& h : headers) {
    req += h + "\r\n";
    has_type = has_type || Lower(h).rfind("content-type:", 0) == 0;
  }
  if (!body.empty() && !has_type) req += "Content-Type: application/json\r\n";
  if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n";
  return req + body;
}

HttpResponse Http(const Endpoint& ep, const std::string& method, const std::string& target, const std::string& body,
                  const std::vector<std::string>& headers, std::chrono::milliseconds timeout) {
  RawConnection c(ep);
  HttpResponse r;
  if (!c.ok() || !c.Send(BuildRequest(method, target, body, headers))) {
    r.error = c.error();
    return r;
  }
  std::string raw = c.ReadAll(timeout);
  r = ParseHttpResponse(raw);
  if (!c.error().empty() && r.error.empty() && r.status == 0) r.error = c.error();
  return r;
}

}  // namespace isb::e2e
