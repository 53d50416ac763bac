#include "gateway/json_parse.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace orchid {

using simdjson::dom::element;
using simdjson::dom::element_type;

namespace {

// `body` with every integer literal of more than 18 digits given a fraction ("…0" → "…0.0"),
// so that simdjson reads it as a double; strings are copied as they are.
std::string WidenLongIntegers(std::string_view body) {
  std::string out;
  out.reserve(body.size() + 16);
  for (size_t i = 0; i < body.size();) {
    const char c = body[i];
    if (c == '"') {  // a string, escapes included
      const size_t start = i++;
      while (i < body.size() && body[i] != '"') i += body[i] == '\\' ? 2 : 1;
      i = std::min(body.size(), i + 1);
      out.append(body.substr(start, i - start));
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t start = i++;
      while (i < body.size() && body[i] >= '0' && body[i] <= '9') ++i;
      const size_t digits = i - start - (c == '-' ? 1 : 0);
      const bool more = i < body.size() && (body[i] == '.' || body[i] == 'e' || body[i] == 'E');
      out.append(body.substr(start, i - start));
      if (digits > 18 && !more) out.append(".0");
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
}

}  // namespace

simdjson::error_code ParseJson(simdjson::dom::parser& parser, std::string_view body, element* doc) {
  simdjson::error_code ec = parser.parse(body.data(), body.size()).get(*doc);
  if (ec == simdjson::NUMBER_ERROR) {
    const std::string widened = WidenLongIntegers(body);
    if (widened.size() != body.size()) ec = parser.parse(widened).get(*doc);
  }
  return ec;
}

std::optional<ApiError> ParseDocument(std::string_view body, element* doc) {
  // One parser per thread: it keeps its buffers between requests.
  thread_local simdjson::dom::parser parser;
  const simdjson::error_code ec = ParseJson(parser, body, doc);
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

std::optional<int64_t> JsonInteger(element value) {
  switch (value.type()) {
    case element_type::INT64:
      return int64_t(value);
    case element_type::UINT64:
      return std::numeric_limits<int64_t>::max();
    case element_type::DOUBLE: {
      const double d = double(value);
      if (!std::isfinite(d) || d != std::floor(d)) return std::nullopt;
      // 2^63: the first double beyond int64's range.
      if (d >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
      if (d < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return int64_t(d);
    }
    default:
      return std::nullopt;
  }
}

std::optional<ApiError> ParsePositiveInteger(element value, const char* name,
                                             std::optional<int64_t>* out) {
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  const std::optional<int64_t> v = JsonInteger(value);
  if (!v || *v < 1) {
    return ApiError::InvalidRequest(std::string(name) + " must be a positive integer", name);
  }
  *out = *v;
  return std::nullopt;
}

std::optional<ApiError> ParsePriority(element value, int32_t* out) {
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const std::string range = "priority must be an integer from " + std::to_string(kMin) + " to " +
                            std::to_string(kMax) + " (lower is served first; default 0)";
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  const std::optional<int64_t> v = JsonInteger(value);  // not a fraction, a string, a bool
  if (!v || *v < kMin || *v > kMax) return ApiError::InvalidRequest(range, "priority");
  *out = int32_t(*v);
  return std::nullopt;
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
  const std::string_view s =
      value.type() == element_type::STRING ? std::string_view(value) : std::string_view();
  if (s == "right" || s == "Right") {
    *out = TruncationSide::kRight;
  } else if (s == "left" || s == "Left") {
    *out = TruncationSide::kLeft;
  } else {
    return ApiError::InvalidRequest("truncation_direction must be \"left\" or \"right\"",
                                    "truncation_direction");
  }
  return std::nullopt;
}

}  // namespace orchid
