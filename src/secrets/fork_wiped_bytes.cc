// ForkWipedBytes: anonymous pages with MADV_WIPEONFORK and MADV_DONTDUMP.
#include "secrets/fork_wiped_bytes.h"

#include <openssl/crypto.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <utility>

namespace isb::secrets {

ForkWipedBytes::~ForkWipedBytes() { Release(); }

ForkWipedBytes::ForkWipedBytes(ForkWipedBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

ForkWipedBytes& ForkWipedBytes::operator=(ForkWipedBytes&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

Result<ForkWipedBytes> ForkWipedBytes::TakeEnv(const char* name) {
  ForkWipedBytes out;
  char* value = std::getenv(name);
  if (value == nullptr) return out;
  const size_t size = std::strlen(value);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t mapped = (size + page) / page * page;
  void* pages = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return Error::Sys(std::string(name) + ": mmap");
  out.data_ = static_cast<char*>(pages);
  out.mapped_ = mapped;
  if (::madvise(pages, mapped, MADV_WIPEONFORK) != 0) return Error::Sys(std::string(name) + ": madvise WIPEONFORK");
  (void)::madvise(pages, mapped, MADV_DONTDUMP);
  std::memcpy(out.data_, value, size);
  out.size_ = size;
  // Where the environment held it (the initial stack, or a setenv copy): every process forked from this one, and
  // /proc/PID/environ, would show it. Every entry of the name, not only the first getenv finds: an initial
  // environment may hold it twice, and unsetenv drops the entries but leaves their bytes where they lay.
  const size_t name_size = std::strlen(name);
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, name, name_size) != 0 || (*entry)[name_size] != '=') continue;
    char* bytes = *entry + name_size + 1;
    const size_t length = std::strlen(bytes);
    OPENSSL_cleanse(bytes, length);
    std::memset(bytes, 'x', length);
  }
  ::unsetenv(name);
  return out;
}

std::string ForkWipedBytes::Take() {
  std::string out(data_ == nullptr ? "" : std::string(data_, size_));
  Release();
  return out;
}

void ForkWipedBytes::Release() {
  if (data_ == nullptr) return;
  OPENSSL_cleanse(data_, mapped_);
  ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
}

}  // namespace isb::secrets
