// Errors as values: Result<T> holds a T or an Error that says what failed and how to fix it.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace isb {

// Error codes that surfaces map to their own terms (HTTP status, MCP isError, CLI exit code).
enum class Code {
  kInternal,
  kInvalidArgument,
  kNotFound,
  kConflict,
  kTimeout,
  kUnauthenticated,
  kForbidden,
  kTooLarge,
  kUnavailable,
  kTooManyRequests
};

// The code's stable name ("not_found"), as the REST and MCP surfaces and the audit log show it.
inline std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return "invalid_argument";
    case Code::kNotFound:
      return "not_found";
    case Code::kConflict:
      return "conflict";
    case Code::kTimeout:
      return "timeout";
    case Code::kUnauthenticated:
      return "unauthenticated";
    case Code::kForbidden:
      return "forbidden";
    case Code::kTooLarge:
      return "too_large";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kTooManyRequests:
      return "rate_limited";
    case Code::kInternal:
      break;
  }
  return "internal";
}

struct Error {
  std::string message;  // what failed, and where useful, how to fix it
  int err = 0;          // errno when the cause was a system call, else 0
  Code code = Code::kInternal;

  // "context: strerror(err)" for the system-call case.
  static Error Sys(std::string context, int e = errno) {
    return Error{std::move(context) + ": " + std::strerror(e), e};
  }
  static Error Msg(std::string message) { return Error{std::move(message), 0}; }
  static Error Of(Code code, std::string message) { return Error{std::move(message), 0, code}; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), failed_(true) {}  // NOLINT
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool failed_ = false;
};

using Status = Result<void>;

}  // namespace isb

#define ISB_CONCAT_INNER(a, b) a##b
#define ISB_CONCAT(a, b) ISB_CONCAT_INNER(a, b)

// Returns the error of a failed Status or Result from the enclosing function.
#define ISB_TRY(expr)                              \
  do {                                             \
    auto&& isb_try_r = (expr);                     \
    if (!isb_try_r.ok()) return isb_try_r.error(); \
  } while (0)

// Declares `lhs` from a Result's value, or returns its error.
#define ISB_ASSIGN_OR_RETURN(lhs, expr)                                                \
  auto ISB_CONCAT(isb_r_, __LINE__) = (expr);                                          \
  if (!ISB_CONCAT(isb_r_, __LINE__).ok()) return ISB_CONCAT(isb_r_, __LINE__).error(); \
  lhs = std::move(ISB_CONCAT(isb_r_, __LINE__)).value()
