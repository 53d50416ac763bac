// JSON request parsing helpers shared by the gateway's request parsers (simdjson DOM): the
// body as an object, and optional typed fields with OpenAI-style errors naming the field.
// Thread safety: free functions; ParseJsonObject uses one parser per thread.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/api_error.h"
#include "tokenizer/tokenizer.h"

namespace orchid {

// Parses `body` into a JSON object; errors for invalid UTF-8, empty bodies, invalid JSON and
// non-objects. The element lives until this thread's next call.
std::optional<ApiError> ParseDocument(std::string_view body, simdjson::dom::element* doc);
// `parser.parse(body)`, also for valid JSON that simdjson's DOM cannot hold as it is: integers
// beyond 64 bits (Python's json writes them; they can only be out of range for any field here)
// are read as doubles.
simdjson::error_code ParseJson(simdjson::dom::parser& parser, std::string_view body,
                               simdjson::dom::element* doc);
// An optional string field: null leaves it unset.
std::optional<ApiError> ParseOptionalString(simdjson::dom::element value, const char* name,
                                            std::optional<std::string>* out);
// A boolean field: null leaves *out as it is.
std::optional<ApiError> ParseBool(simdjson::dom::element value, const char* name, bool* out);
std::optional<ApiError> ParseBool(simdjson::dom::element value, const char* name,
                                  std::optional<bool>* out);
// A JSON number whose value is an integer — 3, or 3.0, as JSON Schema counts integers —
// saturated to int64's range; nullopt for anything else (fractions, strings, ...).
std::optional<int64_t> JsonInteger(simdjson::dom::element value);
// A positive integer field ("top_n", "max_tokens", ...; saturated as JsonInteger); null
// leaves *out unset.
std::optional<ApiError> ParsePositiveInteger(simdjson::dom::element value, const char* name,
                                             std::optional<int64_t>* out);
// vLLM's "priority": an integer in int32's range (lower is served first); null leaves *out.
std::optional<ApiError> ParsePriority(simdjson::dom::element value, int32_t* out);
// "truncation_direction": "left" | "right", or TEI's "Left" | "Right"; null leaves *out.
std::optional<ApiError> ParseTruncationDirection(simdjson::dom::element value, TruncationSide* out);

}  // namespace orchid
