#include "gateway/json_parse.h"

#include <cctype>
#include <cstdint>
#include <limits>
#include <string>

namespace orchid {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::optional<ApiError> ParseDocument(std::string_view body, element* doc) {
  // One parser per thread: it keeps its buffers between requests.
  thread_local simdjson::dom::parser parser;
  const simdjson::error_code ec = parser.parse(body.data(), body.size()).get(*doc);
  if (ec == simdjson::UTF8_ERROR) {
    return ApiError::InvalidRequest("request body is not valid UTF-8", {}, "invalid_utf8");
  }
  if (ec == simdjson::EMPTY) return ApiError::InvalidRequest("request body is empty");
  if (ec) {
    return ApiError::InvalidRequest(
        std::string("request body is not valid JSON: ") + simdjson::error_message(ec), {},
        "invalid_json");
  }
  if (doc->type() != element_type::OBJECT) {
    return ApiError::InvalidRequest("request body must be a JSON object");
  }
  return std::nullopt;
}

// An optional string field: null leaves it unset.
std::optional<ApiError> ParseOptionalString(element value, const char* name,
                                            std::optional<std::string>* out) {
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  if (value.type() != element_type::STRING) {
    return ApiError::InvalidRequest(std::string(name) + " must be a string", name);
  }
  *out = std::string(std::string_view(value));
  return std::nullopt;
}

std::optional<ApiError> ParsePriority(element value, int32_t* out) {
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const std::string range = "priority must be an integer from " + std::to_string(kMin) + " to " +
                            std::to_string(kMax) + " (lower is served first; default 0)";
  switch (value.type()) {
    case element_type::NULL_VALUE:
      return std::nullopt;
    case element_type::INT64: {
      const int64_t v = int64_t(value);
      if (v < kMin || v > kMax) return ApiError::InvalidRequest(range, "priority");
      *out = int32_t(v);
      return std::nullopt;
    }
    default:  // a fraction, a string, a bool, or beyond int64 (UINT64 / BIGINT)
      return ApiError::InvalidRequest(range, "priority");
  }
}

std::optional<ApiError> ParseBool(element value, const char* name, bool* out) {
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  if (value.type() != element_type::BOOL) {
    return ApiError::InvalidRequest(std::string(name) + " must be a boolean", name);
  }
  *out = bool(value);
  return std::nullopt;
}

std::optional<ApiError> ParseBool(element value, const char* name, std::optional<bool>* out) {
  bool b = false;
  if (auto err = ParseBool(value, name, &b)) return err;
  if (value.type() == element_type::BOOL) *out = b;
  return std::nullopt;
}

std::optional<ApiError> ParseTruncationDirection(simdjson::dom::element value,
                                                 TruncationSide* out) {
  using simdjson::dom::element_type;
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  std::string s = value.type() == element_type::STRING ? std::string(std::string_view(value)) : "";
  for (char& c : s) c = char(std::tolower(uint8_t(c)));
  if (s == "right") {
    *out = TruncationSide::kRight;
  } else if (s == "left") {
    *out = TruncationSide::kLeft;
  } else {
    return ApiError::InvalidRequest("truncation_direction must be \"left\" or \"right\"",
                                    "truncation_direction");
  }
  return std::nullopt;
}

}  // namespace orchid
