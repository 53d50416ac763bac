#include "gateway/embeddings_request.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <utility>

#include "gateway/json_parse.h"

namespace orchid {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr const char* kInputShape =
    "input must be a string, an array of strings, an array of token ids or an array of arrays "
    "of token ids";

std::string Indexed(std::string_view field, size_t i) {
  return std::string(field) + "[" + std::to_string(i) + "]";
}

std::optional<ApiError> ParseTokenId(element value, const std::string& param, int32_t* out) {
  if (value.type() == element_type::INT64) {
    const int64_t v = int64_t(value);
    if (v >= 0 && v <= std::numeric_limits<int32_t>::max()) {
      *out = int32_t(v);
      return std::nullopt;
    }
    return ApiError::InvalidRequest("token id " + std::to_string(v) + " is out of the vocabulary",
                                    param, "invalid_token_id");
  }
  if (value.type() == element_type::UINT64) {
    return ApiError::InvalidRequest(
        "token id " + std::to_string(uint64_t(value)) + " is out of the vocabulary", param,
        "invalid_token_id");
  }
  return ApiError::InvalidRequest(
      std::string(kInputShape) + "; " + param + " is not an integer token id", param);
}

std::optional<ApiError> ParseTokenArray(simdjson::dom::array array, const std::string& param,
                                        std::vector<int32_t>* out) {
  out->reserve(array.size());
  size_t j = 0;
  for (element v : array) {
    int32_t id = 0;
    if (auto err = ParseTokenId(v, Indexed(param, j), &id)) return err;
    out->push_back(id);
    ++j;
  }
  return std::nullopt;
}

// Texts, when `allow_tokens` also token ids: the shapes of OpenAI's `input`.
std::optional<ApiError> ParseInput(element input, std::string_view name, bool allow_tokens,
                                   EmbeddingsRequest* out) {
  const std::string param(name);
  if (input.type() == element_type::STRING) {
    std::string_view s = input;
    if (s.empty()) return ApiError::InvalidRequest(param + " must not be an empty string", param);
    out->texts.emplace_back(s);
    return std::nullopt;
  }
  if (input.type() != element_type::ARRAY) {
    return ApiError::InvalidRequest(allow_tokens
                                        ? std::string(kInputShape)
                                        : param + " must be a string or an array of strings",
                                    param);
  }
  simdjson::dom::array items = input;
  if (items.size() == 0)
    return ApiError::InvalidRequest(param + " must not be an empty array", param);
  const element_type first = (*items.begin()).type();
  const bool numbers = first == element_type::INT64 || first == element_type::UINT64 ||
                       first == element_type::DOUBLE;
  if (allow_tokens && numbers) {  // one pre-tokenized input
    out->token_ids.emplace_back();
    return ParseTokenArray(items, param, &out->token_ids.back());
  }
  size_t i = 0;
  for (element item : items) {
    const std::string p = Indexed(param, i++);
    if (first == element_type::STRING && item.type() == element_type::STRING) {
      std::string_view s = item;
      if (s.empty()) return ApiError::InvalidRequest(p + " must not be an empty string", p);
      out->texts.emplace_back(s);
    } else if (allow_tokens && first == element_type::ARRAY && item.type() == element_type::ARRAY) {
      simdjson::dom::array ids = item;
      if (ids.size() == 0) return ApiError::InvalidRequest(p + " must not be an empty array", p);
      out->token_ids.emplace_back();
      if (auto err = ParseTokenArray(ids, p, &out->token_ids.back())) return err;
    } else {
      return ApiError::InvalidRequest(allow_tokens
                                          ? std::string(kInputShape) + "; " + p + " does not fit"
                                          : param + " must be a string or an array of strings",
                                      p);
    }
  }
  return std::nullopt;
}

// `dimensions`: an integer (checked against the model later), or null.
std::optional<ApiError> ParseDimensions(element value, std::optional<int64_t>* out) {
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  if (value.type() == element_type::INT64) {
    *out = int64_t(value);
  } else if (value.type() == element_type::UINT64) {
    *out = std::numeric_limits<int64_t>::max();
  } else {
    return ApiError::InvalidRequest("dimensions must be an integer", "dimensions");
  }
  return std::nullopt;
}

std::optional<EncodingFormat> FormatNamed(std::string_view f) {
  if (f == "float") return EncodingFormat::kFloat;
  if (f == "base64") return EncodingFormat::kBase64;
  if (f == "int8") return EncodingFormat::kInt8;
  if (f == "uint8") return EncodingFormat::kUint8;
  if (f == "binary") return EncodingFormat::kBinary;
  if (f == "ubinary") return EncodingFormat::kUbinary;
  return std::nullopt;
}

constexpr const char* kFormats =
    "\"float\", \"base64\", \"int8\", \"uint8\", \"binary\" or \"ubinary\"";


}  // namespace

std::optional<ApiError> ParseOpenAiEmbeddingsRequest(std::string_view body,
                                                     EmbeddingsRequest* out) {
  *out = EmbeddingsRequest{};
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  bool has_input = false;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    const element_type type = value.type();
    if (key == "input") {
      // A repeated key replaces the earlier value (as Python's json does), null included.
      out->texts.clear();
      out->token_ids.clear();
      has_input = type != element_type::NULL_VALUE;
      if (!has_input) continue;
      if (auto err = ParseInput(value, "input", /*allow_tokens=*/true, out)) return err;
    } else if (key == "model") {
      if (type == element_type::NULL_VALUE) continue;
      if (type != element_type::STRING)
        return ApiError::InvalidRequest("model must be a string", "model");
      out->model = std::string(std::string_view(value));
    } else if (key == "encoding_format") {
      if (type == element_type::NULL_VALUE) continue;
      const std::string_view f = type == element_type::STRING ? std::string_view(value) : "";
      const std::optional<EncodingFormat> format = FormatNamed(f);
      if (!format) {
        return ApiError::InvalidRequest(std::string("encoding_format must be ") + kFormats,
                                        "encoding_format");
      }
      out->encoding_format = *format;
    } else if (key == "embedding_types") {
      out->embedding_types.clear();
      if (type == element_type::NULL_VALUE) continue;
      if (type != element_type::ARRAY || simdjson::dom::array(value).size() == 0) {
        return ApiError::InvalidRequest("embedding_types must be a non-empty array of types",
                                        "embedding_types");
      }
      size_t i = 0;
      for (element t : simdjson::dom::array(value)) {
        const std::string p = Indexed("embedding_types", i++);
        const std::optional<EncodingFormat> format =
            t.type() == element_type::STRING ? FormatNamed(std::string_view(t)) : std::nullopt;
        if (!format) {
          return ApiError::InvalidRequest(p + " must be " + kFormats, p);
        }
        if (std::find(out->embedding_types.begin(), out->embedding_types.end(), *format) ==
            out->embedding_types.end()) {
          out->embedding_types.push_back(*format);
        }
      }
    } else if (key == "truncation_direction") {
      if (auto err = ParseTruncationDirection(value, &out->truncation_direction)) return err;
    } else if (key == "dimensions") {
      if (auto err = ParseDimensions(value, &out->dimensions)) return err;
    } else if (key == "truncate") {
      if (auto err = ParseBool(value, "truncate", &out->truncate)) return err;
    } else if (key == "prompt_name") {
      if (auto err = ParseOptionalString(value, "prompt_name", &out->prompt_name)) return err;
    } else if (key == "input_type") {
      if (auto err = ParseOptionalString(value, "input_type", &out->input_type)) return err;
    } else if (key == "priority") {
      if (auto err = ParsePriority(value, &out->scheduling.priority)) return err;
    }
    // "user" and fields we do not know are accepted and ignored.
  }
  if (!has_input) return ApiError::InvalidRequest("input is required", "input");
  return std::nullopt;
}

std::optional<ApiError> ParseTeiEmbedRequest(std::string_view body, EmbeddingsRequest* out) {
  *out = EmbeddingsRequest{};
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  bool has_input = false;
  bool normalize = true;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    if (key == "inputs") {
      out->texts.clear();  // a repeated key replaces the earlier value, null included
      has_input = value.type() != element_type::NULL_VALUE;
      if (!has_input) continue;
      if (auto err = ParseInput(value, "inputs", /*allow_tokens=*/false, out)) return err;
    } else if (key == "normalize") {
      if (auto err = ParseBool(value, "normalize", &normalize)) return err;
    } else if (key == "truncate") {
      if (auto err = ParseBool(value, "truncate", &out->truncate)) return err;
    } else if (key == "truncation_direction") {
      if (auto err = ParseTruncationDirection(value, &out->truncation_direction)) return err;
    } else if (key == "prompt_name") {
      if (auto err = ParseOptionalString(value, "prompt_name", &out->prompt_name)) return err;
    } else if (key == "dimensions") {
      if (auto err = ParseDimensions(value, &out->dimensions)) return err;
    } else if (key == "priority") {
      if (auto err = ParsePriority(value, &out->scheduling.priority)) return err;
    }
  }
  if (!has_input) return ApiError::InvalidRequest("inputs is required", "inputs");
  out->normalize = normalize;
  return std::nullopt;
}

std::optional<ApiError> ParseTeiSimilarityRequest(std::string_view body, EmbeddingsRequest* out) {
  *out = EmbeddingsRequest{};
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  std::optional<std::string> source;
  std::vector<std::string> sentences;
  bool has_sentences = false;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    if (key == "inputs") {
      if (value.type() != element_type::OBJECT) {
        return ApiError::InvalidRequest(
            "inputs must be an object {\"source_sentence\": string, \"sentences\": [string]}",
            "inputs");
      }
      source.reset();
      sentences.clear();
      has_sentences = false;
      for (simdjson::dom::key_value_pair in : simdjson::dom::object(value)) {
        if (in.key == "source_sentence") {
          if (in.value.type() != element_type::STRING || std::string_view(in.value).empty()) {
            return ApiError::InvalidRequest("inputs.source_sentence must be a non-empty string",
                                            "inputs.source_sentence");
          }
          source = std::string(std::string_view(in.value));
        } else if (in.key == "sentences") {
          if (in.value.type() != element_type::ARRAY) {
            return ApiError::InvalidRequest("inputs.sentences must be an array of strings",
                                            "inputs.sentences");
          }
          EmbeddingsRequest parsed;
          if (auto err =
                  ParseInput(in.value, "inputs.sentences", /*allow_tokens=*/false, &parsed)) {
            return err;
          }
          sentences = std::move(parsed.texts);
          has_sentences = true;
        }
      }
    } else if (key == "parameters") {
      if (value.type() == element_type::NULL_VALUE) continue;
      if (value.type() != element_type::OBJECT) {
        return ApiError::InvalidRequest("parameters must be an object", "parameters");
      }
      for (simdjson::dom::key_value_pair p : simdjson::dom::object(value)) {
        if (p.key == "truncate") {
          if (auto err = ParseBool(p.value, "truncate", &out->truncate)) return err;
        } else if (p.key == "truncation_direction") {
          if (auto err = ParseTruncationDirection(p.value, &out->truncation_direction)) return err;
        } else if (p.key == "prompt_name") {
          if (auto err = ParseOptionalString(p.value, "prompt_name", &out->prompt_name)) return err;
        } else if (p.key == "priority") {
          if (auto err = ParsePriority(p.value, &out->scheduling.priority)) return err;
        }
      }
    } else if (key == "priority") {
      if (auto err = ParsePriority(value, &out->scheduling.priority)) return err;
    }
  }
  if (!source) {
    return ApiError::InvalidRequest("inputs.source_sentence is required", "inputs.source_sentence");
  }
  if (!has_sentences) {
    return ApiError::InvalidRequest("inputs.sentences is required", "inputs.sentences");
  }
  out->texts.reserve(sentences.size() + 1);
  out->texts.push_back(std::move(*source));
  for (std::string& t : sentences) out->texts.push_back(std::move(t));
  return std::nullopt;
}

}  // namespace orchid
