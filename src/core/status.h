// Status and Result<T>: orchid's one error type. Functions that can fail across a module
// boundary return these instead of throwing; messages name the thing that is wrong (a file,
// a field, an index) so they can go straight into a log line or an API error body.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace orchid {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // caller gave bad input (maps to HTTP 400)
  kNotFound,           // named thing does not exist (404)
  kOutOfRange,         // input exceeds a limit, e.g. too many tokens (400 / 413)
  kResourceExhausted,  // queue or memory full; retry later (429)
  kUnavailable,        // service shutting down or unreachable (503)
  kCorrupt,            // a file is malformed (model / tokenizer / config)
  kIoError,            // the OS refused (open, mmap, read)
  kInternal,           // a bug: an invariant did not hold
  kDeadlineExceeded,   // the caller's deadline passed before the work was done (504)
  kCancelled,          // the caller went away (499)
  kFailedPrecondition, // the system is not in the state the request needs (e.g. wrong model)
  kUnimplemented,      // a valid request this build does not support (501)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CODE: message", for logs.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T> holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace orchid

// Propagates a non-OK Status from an expression returning Status.
#define ORCHID_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::orchid::Status _st = (expr);          \
    if (!_st.ok()) return _st;              \
  } while (0)

#define ORCHID_CONCAT_INNER(a, b) a##b
#define ORCHID_CONCAT(a, b) ORCHID_CONCAT_INNER(a, b)
// ORCHID_ASSIGN_OR_RETURN(auto x, MakeX()); — unwraps a Result or returns its Status.
#define ORCHID_ASSIGN_OR_RETURN(lhs, rexpr) \
  ORCHID_ASSIGN_OR_RETURN_IMPL(ORCHID_CONCAT(_res_, __LINE__), lhs, rexpr)
#define ORCHID_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                 \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
