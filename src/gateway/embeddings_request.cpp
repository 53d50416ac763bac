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
  const std::optional<int64_t> v = JsonInteger(value);
  if (!v) {
    return ApiError::InvalidRequest(
        std::string(kInputShape) + "; " + param + " is not an integer token id", param);
  }
  if (*v >= 0 && *v <= std::numeric_limits<int32_t>::max()) {
    *out = int32_t(*v);
    return std::nullopt;
  }
  return ApiError::InvalidRequest(
      "token id " + simdjson::to_string(value) + " is out of the vocabulary", param,
      "invalid_token_id");
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
  const bool strings = first == element_type::STRING || first == element_type::OBJECT;
  for (element item : items) {
    const size_t index = i;
    const std::string p = Indexed(param, i++);
    if (strings && item.type() == element_type::STRING) {
      std::string_view s = item;
      if (s.empty()) return ApiError::InvalidRequest(p + " must not be an empty string", p);
      out->texts.emplace_back(s);
    } else if (strings && item.type() == element_type::OBJECT) {
      // Jina's items: {"text": string} or {"image": data URI | URL | base64}.
      element text, image;
      const bool has_text = item["text"].get(text) == simdjson::SUCCESS;
      const bool has_image = item["image"].get(image) == simdjson::SUCCESS;
      if (has_text == has_image) {
        return ApiError::InvalidRequest(p + " must be {\"text\": string} or {\"image\": string}",
                                        p);
      }
      const element v = has_text ? text : image;
      if (v.type() != element_type::STRING || std::string_view(v).empty()) {
        return ApiError::InvalidRequest(
            p + (has_text ? ".text" : ".image") + " must be a non-empty string", p);
      }
      if (has_text) {
        out->texts.emplace_back(std::string_view(v));
      } else {
        out->images.push_back({index, std::string(std::string_view(v)), true});
      }
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
  *out = JsonInteger(value);
  if (!*out) return ApiError::InvalidRequest("dimensions must be an integer", "dimensions");
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

// Cohere's `embedding_types`: a non-empty list of format names (repeats count once); null
// leaves *out empty.
std::optional<ApiError> ParseEmbeddingTypes(element value, std::vector<EncodingFormat>* out) {
  out->clear();
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  if (value.type() != element_type::ARRAY || simdjson::dom::array(value).size() == 0) {
    return ApiError::InvalidRequest("embedding_types must be a non-empty array of types",
                                    "embedding_types");
  }
  size_t i = 0;
  for (element t : simdjson::dom::array(value)) {
    const std::string p = Indexed("embedding_types", i++);
    const std::optional<EncodingFormat> format =
        t.type() == element_type::STRING ? FormatNamed(std::string_view(t)) : std::nullopt;
    if (!format) return ApiError::InvalidRequest(p + " must be " + kFormats, p);
    if (std::find(out->begin(), out->end(), *format) == out->end()) out->push_back(*format);
  }
  return std::nullopt;
}

// Cohere's `texts`: a non-empty array of non-empty strings.
std::optional<ApiError> ParseCohereTexts(element value, std::vector<std::string>* out) {
  out->clear();
  if (value.type() != element_type::ARRAY) {
    return ApiError::InvalidRequest("texts must be an array of strings", "texts");
  }
  EmbeddingsRequest parsed;
  if (auto err = ParseInput(value, "texts", /*allow_tokens=*/false, &parsed)) return err;
  *out = std::move(parsed.texts);
  return std::nullopt;
}

// Cohere v2's `inputs`: [{"content": [{"type": "text", "text": string}, ...]}, ...]; each
// input's text parts, joined by newlines, are one text; an input of one image_url part
// ({"type": "image_url", "image_url": {"url": string} | string}) is an image.
std::optional<ApiError> ParseCohereInputs(element value, std::vector<std::string>* out,
                                          std::vector<EmbeddingsRequest::Image>* images) {
  out->clear();
  images->clear();
  if (value.type() != element_type::ARRAY || simdjson::dom::array(value).size() == 0) {
    return ApiError::InvalidRequest("inputs must be a non-empty array of {\"content\": [...]}",
                                    "inputs");
  }
  size_t i = 0;
  for (element input : simdjson::dom::array(value)) {
    const std::string p = Indexed("inputs", i++);
    element content;
    if (input.type() != element_type::OBJECT ||
        input["content"].get(content) != simdjson::SUCCESS ||
        content.type() != element_type::ARRAY || simdjson::dom::array(content).size() == 0) {
      return ApiError::InvalidRequest(p + " must be an object with a non-empty \"content\" array",
                                      p + ".content");
    }
    std::string text;
    size_t j = 0;
    const size_t parts = simdjson::dom::array(content).size();
    for (element part : simdjson::dom::array(content)) {
      const std::string pp = Indexed(p + ".content", j++);
      element type, part_text;
      if (part.type() != element_type::OBJECT || part["type"].get(type) != simdjson::SUCCESS ||
          type.type() != element_type::STRING) {
        return ApiError::InvalidRequest(pp + " must be an object with a \"type\"", pp);
      }
      if (std::string_view(type) == "image_url") {
        if (parts != 1) {
          return ApiError::InvalidRequest(
              p + " mixes an image with other parts; an input is text parts or one image (a "
                  "dual encoder embeds each on its own)",
              p + ".content", "unsupported_input");
        }
        element url, inner;
        bool ok = part["image_url"].get(url) == simdjson::SUCCESS;
        if (ok && url.type() == element_type::OBJECT) {
          ok = url["url"].get(inner) == simdjson::SUCCESS;
          if (ok) url = inner;
        }
        if (!ok || url.type() != element_type::STRING || std::string_view(url).empty()) {
          return ApiError::InvalidRequest(
              pp + ".image_url must be a URL string or {\"url\": string}", pp + ".image_url");
        }
        images->push_back({i - 1, std::string(std::string_view(url)), false});
        continue;
      }
      if (std::string_view(type) != "text") {
        return ApiError::InvalidRequest(pp + " is of type `" + std::string(std::string_view(type)) +
                                            "`; parts are \"text\" or \"image_url\"",
                                        pp + ".type", "unsupported_input");
      }
      if (part["text"].get(part_text) != simdjson::SUCCESS ||
          part_text.type() != element_type::STRING || std::string_view(part_text).empty()) {
        return ApiError::InvalidRequest(pp + ".text must be a non-empty string", pp + ".text");
      }
      if (!text.empty()) text.push_back('\n');
      text.append(std::string_view(part_text));
    }
    if (!images->empty() && images->back().index == i - 1) continue;
    out->push_back(std::move(text));
  }
  return std::nullopt;
}

// vLLM's chat-style embeddings input: `messages` [{"role", "content": string | [parts]}]; the
// user content's text parts (joined by newlines) are one text, or its one image_url part one
// image.
std::optional<ApiError> ParseMessages(element value, EmbeddingsRequest* out) {
  if (value.type() != element_type::ARRAY || simdjson::dom::array(value).size() == 0) {
    return ApiError::InvalidRequest("messages must be a non-empty array", "messages");
  }
  std::string text;
  std::optional<std::string> image;
  size_t i = 0;
  for (element m : simdjson::dom::array(value)) {
    const std::string p = Indexed("messages", i++);
    element content;
    if (m.type() != element_type::OBJECT || m["content"].get(content) != simdjson::SUCCESS) {
      return ApiError::InvalidRequest(p + " must be an object with \"content\"", p);
    }
    if (content.type() == element_type::STRING) {
      if (!text.empty()) text.push_back('\n');
      text.append(std::string_view(content));
      continue;
    }
    if (content.type() != element_type::ARRAY) {
      return ApiError::InvalidRequest(p + ".content must be a string or an array of parts",
                                      p + ".content");
    }
    size_t j = 0;
    for (element part : simdjson::dom::array(content)) {
      const std::string pp = Indexed(p + ".content", j++);
      element type;
      if (part.type() != element_type::OBJECT || part["type"].get(type) != simdjson::SUCCESS ||
          type.type() != element_type::STRING) {
        return ApiError::InvalidRequest(pp + " must be an object with a \"type\"", pp);
      }
      const std::string_view t = type;
      element v;
      if (t == "text") {
        if (part["text"].get(v) != simdjson::SUCCESS || v.type() != element_type::STRING) {
          return ApiError::InvalidRequest(pp + ".text must be a string", pp + ".text");
        }
        if (!text.empty()) text.push_back('\n');
        text.append(std::string_view(v));
      } else if (t == "image_url") {
        element url;
        bool ok = part["image_url"].get(url) == simdjson::SUCCESS;
        if (ok && url.type() == element_type::OBJECT) {
          ok = url["url"].get(v) == simdjson::SUCCESS;
          if (ok) url = v;
        }
        if (!ok || url.type() != element_type::STRING || image) {
          return ApiError::InvalidRequest(
              image ? p + " has more than one image; one input is one image"
                    : pp + ".image_url must be {\"url\": string}",
              pp + ".image_url");
        }
        image = std::string(std::string_view(url));
      } else {
        return ApiError::InvalidRequest(
            pp + " is of type `" + std::string(t) + "`; parts are \"text\" or \"image_url\"",
            pp + ".type", "unsupported_input");
      }
    }
  }
  if (image && !text.empty()) {
    return ApiError::InvalidRequest(
        "messages hold both text and an image; a dual encoder embeds one or the other", "messages",
        "unsupported_input");
  }
  if (image) {
    out->images.push_back({0, std::move(*image), false});
  } else if (text.empty()) {
    return ApiError::InvalidRequest("messages hold no text and no image", "messages");
  } else {
    out->texts.push_back(std::move(text));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseOpenAiEmbeddingsRequest(std::string_view body,
                                                     EmbeddingsRequest* out) {
  *out = EmbeddingsRequest{};
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  bool has_input = false;
  bool has_messages = false;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    const element_type type = value.type();
    if (key == "input") {
      // A repeated key replaces the earlier value (as Python's json does), null included.
      out->texts.clear();
      out->token_ids.clear();
      out->images.clear();
      has_input = type != element_type::NULL_VALUE;
      if (!has_input) continue;
      if (auto err = ParseInput(value, "input", /*allow_tokens=*/true, out)) return err;
    } else if (key == "messages") {
      if (type == element_type::NULL_VALUE) continue;
      if (has_messages) return ApiError::InvalidRequest("messages is given twice", "messages");
      has_messages = true;
      EmbeddingsRequest parsed;
      if (auto err = ParseMessages(value, &parsed)) return err;
      out->texts = std::move(parsed.texts);
      out->images = std::move(parsed.images);
    } else if (key == "modality") {
      std::optional<std::string> modality;
      if (auto err = ParseOptionalString(value, "modality", &modality)) return err;
      if (modality && *modality != "text" && *modality != "image") {
        return ApiError::InvalidRequest("modality must be \"text\" or \"image\"", "modality");
      }
      out->image_modality = modality == "image";
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
      if (auto err = ParseEmbeddingTypes(value, &out->embedding_types)) return err;
    } else if (key == "truncation_direction") {
      if (auto err = ParseTruncationDirection(value, &out->truncation_direction)) return err;
    } else if (key == "dimensions") {
      if (auto err = ParseDimensions(value, &out->dimensions)) return err;
    } else if (key == "truncate") {
      if (auto err = ParseBool(value, "truncate", &out->truncate)) return err;
    } else if (key == "normalize") {
      if (auto err = ParseBool(value, "normalize", &out->normalize)) return err;
    } else if (key == "prompt_name") {
      if (auto err = ParseOptionalString(value, "prompt_name", &out->prompt_name)) return err;
    } else if (key == "input_type") {
      if (auto err = ParseOptionalString(value, "input_type", &out->input_type)) return err;
      if (out->input_type && *out->input_type != "query" && *out->input_type != "document") {
        return ApiError::InvalidRequest("input_type must be \"query\" or \"document\"",
                                        "input_type");
      }
    } else if (key == "task") {
      if (auto err = ParseOptionalString(value, "task", &out->task)) return err;
    } else if (key == "priority") {
      if (auto err = ParsePriority(value, &out->scheduling.priority)) return err;
    } else if (key == "user") {  // OpenAI's end-user id: checked, not used
      std::optional<std::string> user;
      if (auto err = ParseOptionalString(value, "user", &user)) return err;
    }
    // Fields we do not know are accepted and ignored.
  }
  if (has_input && has_messages) {
    return ApiError::InvalidRequest("send input or messages, not both", "messages");
  }
  if (!has_input && !has_messages) return ApiError::InvalidRequest("input is required", "input");
  if (out->image_modality && out->pretokenized()) {
    return ApiError::InvalidRequest("modality image takes images, not token ids", "modality");
  }
  return std::nullopt;
}

std::optional<ApiError> ParsePoolingRequest(std::string_view body, EmbeddingsRequest* out) {
  if (auto err = ParseOpenAiEmbeddingsRequest(body, out)) return err;
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  std::optional<std::string> task;
  element value;
  if (!simdjson::dom::object(doc)["task"].get(value)) {
    if (auto err = ParseOptionalString(value, "task", &task)) return err;
  }
  out->task.reset();  // /pooling's task is vLLM's pooling task, not a task adapter
  if (task && *task != "token_embed") {
    return ApiError::InvalidRequest("task `" + *task +
                                        "` is not served by /pooling here; it serves "
                                        "\"token_embed\" (per-token vectors). Use "
                                        "/v1/embeddings for pooled embeddings and /v1/score or "
                                        "/v1/rerank for scores",
                                    "task", "unsupported_task");
  }
  if (out->encoding_format != EncodingFormat::kFloat || !out->embedding_types.empty()) {
    return ApiError::InvalidRequest("/pooling returns float vectors only", "encoding_format");
  }
  out->per_token = true;
  out->dimensions.reset();
  return std::nullopt;
}

std::optional<ApiError> ParseCohereEmbedRequest(std::string_view body, CohereApiVersion version,
                                                EmbeddingsRequest* out) {
  *out = EmbeddingsRequest{};
  out->truncate = true;  // Cohere's default, END
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  bool has_texts = false, has_inputs = false, has_images = false;
  std::vector<std::string> inputs;
  std::vector<EmbeddingsRequest::Image> input_images;
  bool image_type = false;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    const element_type type = value.type();
    if (key == "texts") {
      has_texts = type != element_type::NULL_VALUE;
      if (!has_texts) continue;
      if (auto err = ParseCohereTexts(value, &out->texts)) return err;
    } else if (key == "inputs") {
      has_inputs = type != element_type::NULL_VALUE;
      if (!has_inputs) continue;
      if (auto err = ParseCohereInputs(value, &inputs, &input_images)) return err;
    } else if (key == "images") {
      out->images.clear();
      has_images = false;
      if (type == element_type::NULL_VALUE ||
          (type == element_type::ARRAY && simdjson::dom::array(value).size() == 0)) {
        continue;
      }
      if (type != element_type::ARRAY) {
        return ApiError::InvalidRequest("images must be an array of data URIs", "images");
      }
      size_t i = 0;
      for (element image : simdjson::dom::array(value)) {
        const std::string p = Indexed("images", i);
        if (image.type() != element_type::STRING || std::string_view(image).empty()) {
          return ApiError::InvalidRequest(p + " must be a data URI string", p);
        }
        out->images.push_back({i++, std::string(std::string_view(image)), false});
      }
      has_images = true;
    } else if (key == "model") {
      if (auto err = ParseOptionalString(value, "model", &out->model)) return err;
    } else if (key == "input_type") {
      std::optional<std::string> input_type;
      if (auto err = ParseOptionalString(value, "input_type", &input_type)) return err;
      if (!input_type) continue;
      if (*input_type == "search_query") {
        out->input_type = "query";
      } else if (*input_type == "search_document") {
        out->input_type = "document";
      } else if (*input_type == "classification" || *input_type == "clustering") {
        out->input_type = std::move(*input_type);
      } else if (*input_type == "image") {
        image_type = true;
      } else {
        return ApiError::InvalidRequest(
            "input_type must be \"search_query\", \"search_document\", \"classification\", "
            "\"clustering\" or \"image\"",
            "input_type");
      }
    } else if (key == "embedding_types") {
      if (auto err = ParseEmbeddingTypes(value, &out->embedding_types)) return err;
    } else if (key == "truncate") {
      if (type == element_type::NULL_VALUE) continue;
      const std::string_view t = type == element_type::STRING ? std::string_view(value) : "";
      if (t == "NONE") {
        out->truncate = false;
      } else if (t == "START" || t == "END") {
        out->truncate = true;
        out->truncation_direction = t == "START" ? TruncationSide::kLeft : TruncationSide::kRight;
      } else {
        return ApiError::InvalidRequest("truncate must be \"NONE\", \"START\" or \"END\"",
                                        "truncate");
      }
    } else if (key == "max_tokens") {
      if (auto err = ParsePositiveInteger(value, "max_tokens", &out->max_tokens)) return err;
    } else if (key == "output_dimension") {
      if (auto err = ParsePositiveInteger(value, "output_dimension", &out->dimensions)) return err;
    } else if (key == "priority") {
      if (auto err = ParsePriority(value, &out->scheduling.priority)) return err;
    }
  }
  if (int(has_texts) + int(has_inputs) + int(has_images) != 1) {
    return ApiError::InvalidRequest(has_texts || has_inputs || has_images
                                        ? "send one of texts, images or inputs"
                                        : "texts is required (or images, or v2's inputs)",
                                    "texts");
  }
  if (has_images && !image_type) {
    return ApiError::InvalidRequest("images need input_type \"image\"", "input_type");
  }
  if (image_type && has_texts) {
    return ApiError::InvalidRequest("input_type \"image\" takes images, not texts", "input_type");
  }
  if (has_inputs) {
    out->texts = std::move(inputs);
    out->images = std::move(input_images);
  }
  if (version == CohereApiVersion::kV2 && out->embedding_types.empty()) {
    out->embedding_types.push_back(EncodingFormat::kFloat);
  }
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
    } else if (key == "task") {
      if (auto err = ParseOptionalString(value, "task", &out->task)) return err;
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
    } else if (key == "model") {  // orchid's: which served model (TEI serves one)
      if (auto err = ParseOptionalString(value, "model", &out->model)) return err;
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
