// One netlink request under construction, for rtnetlink and nfnetlink alike: a header, a fixed struct, then
// attributes (nested where the kernel nests them), appended aligned, nests closed by back-patching their length.
#pragma once

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace isb::net {

class NetlinkMessage {
 public:
  // `flags` beside NLM_F_REQUEST, which every request has. Acknowledgement is asked for with NLM_F_ACK.
  NetlinkMessage(uint16_t type, uint16_t flags) {
    buf_.resize(NLMSG_HDRLEN);
    auto* h = header();
    h->nlmsg_type = type;
    h->nlmsg_flags = static_cast<uint16_t>(flags | NLM_F_REQUEST);
  }
  template <typename T>
  T* Fixed() {
    size_t at = buf_.size();
    buf_.resize(at + NLMSG_ALIGN(sizeof(T)));
    return reinterpret_cast<T*>(buf_.data() + at);
  }
  void Attr(uint16_t type, const void* data, size_t len) {
    size_t at = buf_.size();
    buf_.resize(at + RTA_ALIGN(RTA_LENGTH(len)));
    auto* rta = reinterpret_cast<rtattr*>(buf_.data() + at);
    rta->rta_type = type;
    rta->rta_len = static_cast<uint16_t>(RTA_LENGTH(len));
    if (len > 0) std::memcpy(RTA_DATA(rta), data, len);
  }
  void Str(uint16_t type, const std::string& s) { Attr(type, s.c_str(), s.size() + 1); }
  template <typename T>
  void Scalar(uint16_t type, T v) {
    Attr(type, &v, sizeof v);
  }
  size_t BeginNest(uint16_t type) {
    size_t at = buf_.size();
    Attr(type, nullptr, 0);
    return at;
  }
  void EndNest(size_t at) {
    if (buf_.size() - at > 0xFFFF) overflowed_ = true;  // an attribute's length cannot say it
    reinterpret_cast<rtattr*>(buf_.data() + at)->rta_len = static_cast<uint16_t>(buf_.size() - at);
  }
  // A nest grew past the 64 KiB its length can say: the message must not be sent.
  bool overflowed() const { return overflowed_; }
  nlmsghdr* Finish(uint32_t seq) {
    auto* h = header();
    h->nlmsg_len = static_cast<uint32_t>(buf_.size());
    h->nlmsg_seq = seq;
    return h;
  }
  size_t size() const { return buf_.size(); }
  const char* data() const { return buf_.data(); }

 private:
  nlmsghdr* header() { return reinterpret_cast<nlmsghdr*>(buf_.data()); }
  // A pointer from Fixed() is only good until the next append: callers fill the struct right away.
  std::vector<char> buf_;
  bool overflowed_ = false;
};

}  // namespace isb::net
