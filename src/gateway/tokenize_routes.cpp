#include "gateway/tokenize_routes.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gateway/api_error.h"
#include "gateway/json_parse.h"
#include "gateway/json_writer.h"
#include "gateway/route_handlers.h"

namespace orchid {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

HttpResponse Error(int status, std::string message) {
  ApiError e;
  e.http_status = status;
  e.message = std::move(message);
  HttpResponse r;
  r.status = status;
  r.body = TeiErrorBody(e);
  return r;
}

HttpResponse Validation(std::string message) { return Error(422, std::move(message)); }

HttpResponse BatchTooLarge(size_t n, size_t max) {
  return Error(413, "batch size " + std::to_string(n) + " > maximum allowed batch size " +
                        std::to_string(max));
}

// Parses `body` into *doc (an object), or returns the error response.
bool ParseObject(std::string_view body, element* doc, HttpResponse* error) {
  thread_local simdjson::dom::parser parser;  // keeps its buffers between requests
  const simdjson::error_code ec = ParseJson(parser, body, doc);
  if (ec == simdjson::UTF8_ERROR) {
    *error = Validation("request body is not valid UTF-8");
  } else if (ec) {
    *error = Validation(std::string("request body is not valid JSON: ") +
                        simdjson::error_message(ec));
  } else if (doc->type() != element_type::OBJECT) {
    *error = Validation("request body must be a JSON object");
  } else {
    return true;
  }
  return false;
}

// An optional boolean field (absent or null → default).
bool ReadFlag(simdjson::dom::object o, const char* key, bool default_value, bool* out,
              HttpResponse* error) {
  *out = default_value;
  element v;
  if (o[key].get(v) != simdjson::SUCCESS || v.is_null()) return true;
  if (v.type() != element_type::BOOL) {
    *error = Validation(std::string("`") + key + "` must be a boolean");
    return false;
  }
  *out = bool(v);
  return true;
}

// chars[b]: the character (Unicode scalar value) index of byte offset b, for every b that
// starts a character and for the end; token offsets always fall on such boundaries.
void CharIndex(std::string_view text, std::vector<uint32_t>* chars) {
  chars->resize(text.size() + 1);
  uint32_t n = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    (*chars)[i] = n;
    if (i + 1 == text.size() || (static_cast<unsigned char>(text[i + 1]) & 0xC0) != 0x80) ++n;
  }
  (*chars)[text.size()] = n;
}

// Writes the tokens of one input, or returns false with *error set.
bool WriteTokens(const Tokenizer& tok, std::string_view text, bool add_special_tokens,
                 JsonWriter* w, HttpResponse* error) {
  thread_local Encoding enc;
  thread_local std::vector<uint32_t> chars;
  EncodeOptions options;
  options.add_special_tokens = add_special_tokens;
  if (Status st = tok.Encode(text, options, &enc); !st.ok()) {
    *error = Validation(st.message());
    return false;
  }
  CharIndex(text, &chars);
  const bool has_mask = enc.special_tokens_mask.size() == enc.ids.size();
  w->BeginArray();
  for (size_t i = 0; i < enc.ids.size(); ++i) {
    const int32_t id = enc.ids[i];
    const bool special = has_mask && enc.special_tokens_mask[i] != 0;
    w->BeginObject().Key("id").Int(id);
    if (special) {
      const std::optional<std::string_view> token = tok.IdToToken(id);
      w->Key("text").String(token ? *token : std::string_view());
      w->Key("special").Bool(true).Key("start").Null().Key("stop").Null();
    } else {
      uint32_t b = i < enc.offsets.size() ? enc.offsets[i].first : 0;
      uint32_t e = i < enc.offsets.size() ? enc.offsets[i].second : 0;
      e = std::min<uint32_t>(e, static_cast<uint32_t>(text.size()));
      b = std::min(b, e);
      w->Key("text").String(text.substr(b, e - b));
      w->Key("special").Bool(false);
      w->Key("start").Int(chars[b]).Key("stop").Int(chars[e]);
    }
    w->EndObject();
  }
  w->EndArray();
  return true;
}

// One id sequence of /decode's "ids".
bool ReadIds(element value, const std::string& where, std::vector<int32_t>* out,
             HttpResponse* error) {
  simdjson::dom::array items;
  if (value.get(items) != simdjson::SUCCESS) {
    *error = Validation("`" + where + "` must be an array of token ids");
    return false;
  }
  out->clear();
  out->reserve(items.size());
  size_t j = 0;
  for (element v : items) {
    const int64_t id = JsonInteger(v).value_or(-1);
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      *error = Validation("`" + where + "[" + std::to_string(j) +
                          "]` must be a token id (an integer from 0 to 2147483647)");
      return false;
    }
    out->push_back(static_cast<int32_t>(id));
    ++j;
  }
  return true;
}

}  // namespace

HttpResponse HandleTokenize(const Tokenizer& tok, std::string_view body,
                            size_t max_client_batch_size) {
  HttpResponse error;
  element doc;
  if (!ParseObject(body, &doc, &error)) return error;
  simdjson::dom::object o = doc.get_object().value_unsafe();
  bool add_special_tokens = true;
  if (!ReadFlag(o, "add_special_tokens", true, &add_special_tokens, &error)) return error;
  element prompt_name;  // accepted, not applied: orchid serves no prompts
  if (o["prompt_name"].get(prompt_name) == simdjson::SUCCESS && !prompt_name.is_null() &&
      prompt_name.type() != element_type::STRING) {
    return Validation("`prompt_name` must be a string");
  }
  element inputs;
  if (o["inputs"].get(inputs) != simdjson::SUCCESS) return Validation("missing field `inputs`");

  HttpResponse r;
  JsonWriter w(&r.body);
  w.BeginArray();
  if (inputs.type() == element_type::STRING) {
    if (!WriteTokens(tok, std::string_view(inputs), add_special_tokens, &w, &error)) return error;
  } else if (inputs.type() == element_type::ARRAY) {
    simdjson::dom::array items = inputs;
    if (items.size() == 0) return Validation("`inputs` cannot be empty");
    if (max_client_batch_size > 0 && items.size() > max_client_batch_size) {
      return BatchTooLarge(items.size(), max_client_batch_size);
    }
    size_t i = 0;
    for (element item : items) {
      if (item.type() != element_type::STRING) {
        return Validation("`inputs[" + std::to_string(i) + "]` must be a string");
      }
      if (!WriteTokens(tok, std::string_view(item), add_special_tokens, &w, &error)) {
        return error;
      }
      ++i;
    }
  } else {
    return Validation("`inputs` must be a string or an array of strings");
  }
  w.EndArray();
  return r;
}

HttpResponse HandleDecode(const Tokenizer& tok, std::string_view body,
                          size_t max_client_batch_size) {
  HttpResponse error;
  element doc;
  if (!ParseObject(body, &doc, &error)) return error;
  simdjson::dom::object o = doc.get_object().value_unsafe();
  bool skip_special_tokens = true;
  if (!ReadFlag(o, "skip_special_tokens", true, &skip_special_tokens, &error)) return error;
  element ids;
  if (o["ids"].get(ids) != simdjson::SUCCESS) return Validation("missing field `ids`");
  simdjson::dom::array outer;
  if (ids.get(outer) != simdjson::SUCCESS) {
    return Validation("`ids` must be an array of token ids or an array of arrays of token ids");
  }
  // [] and [int, …] are one sequence (TEI tries the single form first); [[…], …] a batch.
  const bool batch = outer.size() > 0 && (*outer.begin()).type() == element_type::ARRAY;
  if (batch && max_client_batch_size > 0 && outer.size() > max_client_batch_size) {
    return BatchTooLarge(outer.size(), max_client_batch_size);
  }
  HttpResponse r;
  JsonWriter w(&r.body);
  std::vector<int32_t> sequence;
  std::string text;
  auto decode = [&](element value, const std::string& where) {
    if (!ReadIds(value, where, &sequence, &error)) return false;
    if (Status st = tok.Decode(sequence, skip_special_tokens, &text); !st.ok()) {
      error = Validation(st.message());
      return false;
    }
    w.String(text);
    return true;
  };
  w.BeginArray();
  if (!batch) {
    if (!decode(ids, "ids")) return error;
  } else {
    size_t i = 0;
    for (element item : outer) {
      if (!decode(item, "ids[" + std::to_string(i++) + "]")) return error;
    }
  }
  w.EndArray();
  return r;
}

void TeiTokenize(const ServedModels& served, RouteCall call) {
  call.reply(HandleTokenize(served.default_model().tokenizer(), call.request.body,
                            ServedModels::kMaxClientBatchSize));
}

void TeiDecode(const ServedModels& served, RouteCall call) {
  call.reply(HandleDecode(served.default_model().tokenizer(), call.request.body,
                          ServedModels::kMaxClientBatchSize));
}

}  // namespace orchid
