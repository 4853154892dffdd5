// SecretBytes: the one owner of a secret value in memory; wipes it when done, and never prints it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace isb::secrets {

// Move-only. No operator<< and no conversion to std::string, so a value cannot slip into a log or a message by
// accident: a caller that needs the bytes asks for view() on purpose.
class SecretBytes {
 public:
  SecretBytes() = default;
  // Takes the bytes and wipes `value`'s buffer (a short string's bytes live inside the string object itself).
  explicit SecretBytes(std::string&& value);
  explicit SecretBytes(std::string_view value);
  SecretBytes(SecretBytes&& other) noexcept;
  SecretBytes& operator=(SecretBytes&& other) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;
  ~SecretBytes();

  // `size` bytes to be written through data() (a decryption's output, filled in place so no copy is left behind);
  // their contents are unspecified until written.
  static SecretBytes Allocate(size_t size);
  char* data() { return data_.get(); }
  // Keeps the first `size` bytes (at most size()), wiping the rest.
  void Truncate(size_t size);

  // A copy, for the rare holder that needs one (a store keeping the value it returns); wiped the same way.
  SecretBytes Clone() const { return SecretBytes(view()); }

  std::string_view view() const { return {data_.get(), size_}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Constant-time in the length compared.
  friend bool operator==(const SecretBytes& a, const SecretBytes& b);

 private:
  void Wipe();

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

}  // namespace isb::secrets
