// SecretBytes: copies in, wipes out.
#include "secrets/secret_bytes.h"

#include <openssl/crypto.h>

#include <cstring>
#include <utility>

namespace isb::secrets {

SecretBytes::SecretBytes(std::string_view value) : data_(new char[value.size() + 1]), size_(value.size()) {
  if (!value.empty()) std::memcpy(data_.get(), value.data(), value.size());
  data_[size_] = '\0';
}

SecretBytes::SecretBytes(std::string&& value) : SecretBytes(std::string_view(value)) {
  OPENSSL_cleanse(value.data(), value.size());
  value.clear();
}

SecretBytes SecretBytes::Allocate(size_t size) {
  SecretBytes out;
  out.data_.reset(new char[size + 1]);  // not value-initialized: the caller writes every byte it keeps
  out.size_ = size;
  out.data_[size] = '\0';
  return out;
}

void SecretBytes::Truncate(size_t size) {
  if (size >= size_) return;
  OPENSSL_cleanse(data_.get() + size, size_ - size);
  size_ = size;
}

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
  if (this != &other) {
    Wipe();
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SecretBytes::~SecretBytes() { Wipe(); }

void SecretBytes::Wipe() {
  if (data_) OPENSSL_cleanse(data_.get(), size_);
  data_.reset();
  size_ = 0;
}

bool operator==(const SecretBytes& a, const SecretBytes& b) {
  return a.size_ == b.size_ && CRYPTO_memcmp(a.data_.get(), b.data_.get(), a.size_) == 0;
}

}  // namespace isb::secrets
