#include "gateway/score_request.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "gateway/bge_m3.h"
#include "gateway/json_parse.h"
#include "gateway/json_writer.h"

namespace orchid {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string Indexed(std::string_view field, size_t i) {
  std::string s(field);
  s.append("[").append(std::to_string(i)).append("]");
  return s;
}

ApiError TooMany(std::string_view field, size_t n) {
  ApiError e = ApiError::InvalidRequest(
      std::string(field) + " has " + std::to_string(n) + " entries, more than the limit of " +
          std::to_string(kMaxScorePairs) + " per request; split it into smaller requests",
      std::string(field), "too_many_inputs");
  e.http_status = 413;
  return e;
}

std::optional<ApiError> ParseNonEmptyString(element value, const std::string& param,
                                            std::string* out) {
  if (value.type() != element_type::STRING) {
    return ApiError::InvalidRequest(param + " must be a string", param);
  }
  std::string_view s = value;
  if (s.empty()) return ApiError::InvalidRequest(param + " must not be an empty string", param);
  out->assign(s);
  return std::nullopt;
}

// A list of documents: strings, or (when `allow_objects`) objects with a "text" string.
std::optional<ApiError> ParseTexts(element value, std::string_view name, bool allow_objects,
                                   std::vector<std::string>* out) {
  const std::string param(name);
  out->clear();
  if (value.type() != element_type::ARRAY) {
    return ApiError::InvalidRequest(
        param + (allow_objects ? " must be an array of strings or of {\"text\": string} objects"
                               : " must be an array of strings"),
        param);
  }
  simdjson::dom::array items = value;
  if (items.size() == 0) return ApiError::InvalidRequest(param + " must not be empty", param);
  if (items.size() > kMaxScorePairs) return TooMany(name, items.size());
  size_t i = 0;
  for (element item : items) {
    const std::string p = Indexed(name, i++);
    out->emplace_back();
    if (allow_objects && item.type() == element_type::OBJECT) {
      element text;
      if (item["text"].get(text) != simdjson::SUCCESS) {
        return ApiError::InvalidRequest(p + " must have a \"text\" string", p + ".text");
      }
      if (auto err = ParseNonEmptyString(text, p + ".text", &out->back())) return err;
      continue;
    }
    if (auto err = ParseNonEmptyString(item, p, &out->back())) return err;
  }
  return std::nullopt;
}

// BGE-M3's weights_for_different_modes: [dense, sparse, colbert], each in [0, 1e6], the dense and
// sparse weights not both 0 (sparse+dense divides by their sum; for colbert alone: score_mode).
std::optional<ApiError> ParseScoreWeights(element value, std::vector<double>* out) {
  const char* kWhat =
      "score_weights must be an array of three numbers from 0 to 1e6 (the dense, sparse and "
      "colbert weights), the dense and sparse weights not both 0";
  out->clear();
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;  // unset: [1, 1, 1]
  if (value.type() != element_type::ARRAY) return ApiError::InvalidRequest(kWhat, "score_weights");
  simdjson::dom::array items = value;
  for (element item : items) {
    double w = 0;
    if (out->size() == 3 || item.get_double().get(w) != simdjson::SUCCESS || !std::isfinite(w) ||
        w < 0 || w > 1e6) {
      return ApiError::InvalidRequest(kWhat, "score_weights");
    }
    out->push_back(w);
  }
  if (out->size() != 3 || !((*out)[0] + (*out)[1] > 0)) {
    return ApiError::InvalidRequest(kWhat, "score_weights");
  }
  return std::nullopt;
}

// Fields every scoring route shares; true when `key` was one of them (*err set on bad values).
bool ParseCommonField(std::string_view key, element value, ScoreRequest* out,
                      std::optional<ApiError>* err) {
  if (key == "model") {
    *err = ParseOptionalString(value, "model", &out->model);
  } else if (key == "instruction") {
    *err = ParseOptionalString(value, "instruction", &out->instruction);
  } else if (key == "truncate") {
    *err = ParseBool(value, "truncate", &out->truncate);
  } else if (key == "truncation_direction") {
    *err = ParseTruncationDirection(value, &out->truncation_direction);
  } else if (key == "raw_scores") {
    *err = ParseBool(value, "raw_scores", &out->raw_scores);
  } else if (key == "priority") {
    *err = ParsePriority(value, &out->scheduling.priority);
  } else if (key == "score_mode") {
    *err = ParseOptionalString(value, "score_mode", &out->score_mode);
    if (!*err && out->score_mode && !ParseBgeM3ScoreKind(*out->score_mode)) {
      *err = ApiError::InvalidRequest(
          "score_mode must be one of dense, sparse, colbert, sparse+dense, colbert+sparse+dense",
          "score_mode");
    }
  } else if (key == "score_weights") {
    *err = ParseScoreWeights(value, &out->score_weights);
  } else {
    return false;
  }
  return true;
}

// Long-document fields of the rerank routes; true when `key` was one of them.
bool ParseChunkField(std::string_view key, element value, ScoreRequest* out,
                     std::optional<ApiError>* err) {
  if (key == "max_chunks_per_doc") {
    *err = ParsePositiveInteger(value, "max_chunks_per_doc", &out->max_chunks_per_doc);
  } else if (key == "return_chunks") {
    *err = ParseBool(value, "return_chunks", &out->return_chunks);
  } else {
    return false;
  }
  return true;
}

void WriteChunk(const ScoreRequest& request, const std::vector<ChunkHit>& chunks, size_t i,
                JsonWriter* w) {
  if (!request.return_chunks || i >= chunks.size()) return;
  const ChunkHit& c = chunks[i];
  w->Key("chunk").BeginObject().Key("index").Int(c.index).Key("start").Int(c.start);
  w->Key("end").Int(c.end).Key("count").Int(c.count).EndObject();
}

// Indices of `scores` by score, best first (ties keep input order).
std::vector<size_t> Ranked(const std::vector<float>& scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&scores](size_t a, size_t b) { return scores[a] > scores[b]; });
  return order;
}

}  // namespace

namespace {

// What sets the rerank routes' bodies apart; the rest (query, the common and long-document
// fields) they share.
struct RerankDialect {
  const char* documents;    // the documents' field, and how errors name a document
  bool document_objects;    // documents may also be {"text": string} objects
  const char* return_text;  // the field that asks for each document's text in the reply
  bool truncate_default;    // an unset `truncate` cuts long documents (Cohere, Jina)
  bool top_n;               // takes top_n (only the best N results)
  bool cohere_v2;           // takes max_tokens_per_doc and relevant_spans
};

constexpr RerankDialect kTeiRerank{"texts", false, "return_text", false, false, false};
constexpr RerankDialect kRerank{"documents", true, "return_documents", true, true, false};
constexpr RerankDialect kCohereRerank{"documents", false, "return_documents", true, true, true};

// Cohere v2's relevant_spans: null, or {"mode": "enabled" | "disabled", "threshold": number,
// "max_spans": integer}; only "disabled" is served (orchid finds no spans).
std::optional<ApiError> CheckRelevantSpans(element value) {
  if (value.type() == element_type::NULL_VALUE) return std::nullopt;
  element mode;
  if (value.type() != element_type::OBJECT || value["mode"].get(mode) != simdjson::SUCCESS ||
      mode.type() != element_type::STRING ||
      (std::string_view(mode) != "enabled" && std::string_view(mode) != "disabled")) {
    return ApiError::InvalidRequest(
        "relevant_spans must be an object with \"mode\": \"enabled\" or \"disabled\"",
        "relevant_spans");
  }
  element threshold, max_spans;
  if (value["threshold"].get(threshold) == simdjson::SUCCESS && !threshold.is_null() &&
      !threshold.is_number()) {
    return ApiError::InvalidRequest("relevant_spans.threshold must be a number",
                                    "relevant_spans.threshold");
  }
  if (value["max_spans"].get(max_spans) == simdjson::SUCCESS && !max_spans.is_null() &&
      !JsonInteger(max_spans)) {
    return ApiError::InvalidRequest("relevant_spans.max_spans must be an integer",
                                    "relevant_spans.max_spans");
  }
  if (std::string_view(mode) == "enabled") {
    return ApiError::InvalidRequest(
        "relevant_spans are not supported: this server's rerankers score whole documents",
        "relevant_spans", "unsupported_parameter");
  }
  return std::nullopt;
}

// A rerank body in dialect `d`: {query, <documents>, <return_text>, ...}. Unknown fields
// (rank_fields, user, ...) are accepted and ignored.
std::optional<ApiError> ParseRerankBody(std::string_view body, const RerankDialect& d,
                                        ScoreRequest* out) {
  *out = ScoreRequest{};
  out->documents_field = d.documents;
  if (d.truncate_default) out->truncate = true;
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  bool has_query = false, has_documents = false;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    std::optional<ApiError> err;
    if (key == "query") {
      out->queries.assign(1, {});
      if ((err = ParseNonEmptyString(value, "query", &out->queries[0]))) return err;
      has_query = true;
    } else if (key == d.documents) {
      if ((err = ParseTexts(value, d.documents, d.document_objects, &out->documents))) return err;
      has_documents = true;
    } else if (key == d.return_text) {
      if ((err = ParseBool(value, d.return_text, &out->return_text))) return err;
    } else if (d.top_n && key == "top_n") {
      if ((err = ParsePositiveInteger(value, "top_n", &out->top_n))) return err;
    } else if (d.cohere_v2 && key == "max_tokens_per_doc") {  // checked, not applied (header)
      std::optional<int64_t> max_tokens;
      if ((err = ParsePositiveInteger(value, "max_tokens_per_doc", &max_tokens))) return err;
    } else if (d.cohere_v2 && key == "relevant_spans") {
      if ((err = CheckRelevantSpans(value))) return err;
    } else if (ParseChunkField(key, value, out, &err) || ParseCommonField(key, value, out, &err)) {
      if (err) return err;
    }
  }
  if (!has_query) return ApiError::InvalidRequest("query is required", "query");
  if (!has_documents) {
    return ApiError::InvalidRequest(std::string(d.documents) + " is required", d.documents);
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseTeiRerankRequest(std::string_view body, ScoreRequest* out) {
  return ParseRerankBody(body, kTeiRerank, out);
}

std::optional<ApiError> ParseRerankRequest(std::string_view body, ScoreRequest* out) {
  return ParseRerankBody(body, kRerank, out);
}

std::optional<ApiError> ParseCohereRerankRequest(std::string_view body, ScoreRequest* out) {
  return ParseRerankBody(body, kCohereRerank, out);
}

std::optional<ApiError> ParseScoreRequest(std::string_view body, ScoreRequest* out) {
  *out = ScoreRequest{};
  out->documents_field = "text_2";
  out->max_chunks_per_doc = 0;  // a score per pair, cut or refused as vLLM's: never chunked
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  bool has_1 = false, has_2 = false;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    std::optional<ApiError> err;
    if (key == "text_1" || key == "text_2") {
      std::vector<std::string>* texts = key == "text_1" ? &out->queries : &out->documents;
      const std::string name(key);
      if (value.type() == element_type::STRING) {
        texts->assign(1, {});
        if ((err = ParseNonEmptyString(value, name, &(*texts)[0]))) return err;
      } else if ((err = ParseTexts(value, name, false, texts))) {
        if (value.type() != element_type::ARRAY) {
          return ApiError::InvalidRequest(name + " must be a string or an array of strings", name);
        }
        return err;
      }
      (key == "text_1" ? has_1 : has_2) = true;
    } else if (ParseCommonField(key, value, out, &err)) {
      if (err) return err;
    }
  }
  if (!has_1) return ApiError::InvalidRequest("text_1 is required", "text_1");
  if (!has_2) return ApiError::InvalidRequest("text_2 is required", "text_2");
  if (out->queries.size() > 1 && out->queries.size() != out->documents.size()) {
    return ApiError::InvalidRequest(
        "text_1 has " + std::to_string(out->queries.size()) + " texts and text_2 " +
            std::to_string(out->documents.size()) +
            "; send one text_1, or as many as text_2 (they are paired in order)",
        "text_1");
  }
  return std::nullopt;
}

std::string WriteTeiRerankResponse(const ScoreRequest& request, const std::vector<float>& scores,
                                   const std::vector<ChunkHit>& chunks) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  for (size_t i : Ranked(scores)) {
    w.BeginObject().Key("index").Int(int64_t(i)).Key("score").Float(scores[i]);
    if (request.return_text) w.Key("text").String(request.documents[i]);
    WriteChunk(request, chunks, i, &w);
    w.EndObject();
  }
  w.EndArray();
  return out;
}

namespace {

// "rerank-" or "score-" and 16 random hex digits, as vLLM's and Cohere's replies carry an id.
std::string ResponseId(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + "-" + hex;
}

// "results": [{index, relevance_score, document?: {text}, chunk?}], best first, at most top_n
// (Cohere's and Jina's shape).
void WriteRelevanceResults(const ScoreRequest& request, const std::vector<float>& scores,
                           const std::vector<ChunkHit>& chunks, JsonWriter* w) {
  w->Key("results").BeginArray();
  std::vector<size_t> order = Ranked(scores);
  if (request.top_n && size_t(*request.top_n) < order.size()) order.resize(size_t(*request.top_n));
  for (size_t i : order) {
    w->BeginObject().Key("index").Int(int64_t(i)).Key("relevance_score").Float(scores[i]);
    if (request.return_text) {
      w->Key("document").BeginObject().Key("text").String(request.documents[i]).EndObject();
    }
    WriteChunk(request, chunks, i, w);
    w->EndObject();
  }
  w->EndArray();
}

}  // namespace

std::string WriteRerankResponse(const ScoreRequest& request, const std::vector<float>& scores,
                                std::string_view model, int64_t tokens,
                                const std::vector<ChunkHit>& chunks) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("id").String(ResponseId("rerank"));
  w.Key("model").String(model);
  WriteRelevanceResults(request, scores, chunks, &w);
  w.Key("usage").BeginObject().Key("prompt_tokens").Int(tokens);
  w.Key("total_tokens").Int(tokens).EndObject();
  w.EndObject();
  return out;
}

std::string WriteScoreResponse(const std::vector<float>& scores, std::string_view model,
                               int64_t tokens, int64_t created) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("id").String(ResponseId("score"));
  w.Key("object").String("list").Key("created").Int(created);
  w.Key("model").String(model).Key("data").BeginArray();
  for (size_t i = 0; i < scores.size(); ++i) {
    w.BeginObject().Key("index").Int(int64_t(i)).Key("object").String("score");
    w.Key("score").Float(scores[i]).EndObject();
  }
  w.EndArray();
  w.Key("usage").BeginObject().Key("prompt_tokens").Int(tokens);
  w.Key("total_tokens").Int(tokens).EndObject();
  w.EndObject();
  return out;
}

namespace {

// One input of /predict: a non-empty string, or an array of two (a pair).
std::optional<ApiError> ParsePredictInput(element value, const std::string& param,
                                          PredictRequest* out) {
  out->first.emplace_back();
  out->second.emplace_back();
  if (value.type() == element_type::ARRAY) {
    simdjson::dom::array pair = value;
    if (pair.size() != 2) {
      return ApiError::InvalidRequest(param + " must be a string or a pair of two strings", param);
    }
    if (auto err = ParseNonEmptyString(pair.at(0), param + "[0]", &out->first.back())) return err;
    return ParseNonEmptyString(pair.at(1), param + "[1]", &out->second.back());
  }
  return ParseNonEmptyString(value, param, &out->first.back());
}

bool IsTwoStrings(element value) {
  if (value.type() != element_type::ARRAY) return false;
  simdjson::dom::array a = value;
  return a.size() == 2 && a.at(0).type() == element_type::STRING &&
         a.at(1).type() == element_type::STRING;
}

}  // namespace

std::optional<ApiError> ParsePredictRequest(std::string_view body, PredictRequest* out) {
  *out = PredictRequest{};
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  bool has_inputs = false;
  for (simdjson::dom::key_value_pair field : simdjson::dom::object(doc)) {
    const std::string_view key = field.key;
    const element value = field.value;
    std::optional<ApiError> err;
    if (key == "inputs") {
      out->first.clear();
      out->second.clear();
      has_inputs = true;
      if (value.type() == element_type::STRING || IsTwoStrings(value)) {
        out->batch = false;
        if ((err = ParsePredictInput(value, "inputs", out))) return err;
        continue;
      }
      if (value.type() != element_type::ARRAY) {
        return ApiError::InvalidRequest(
            "inputs must be a string, a pair [string, string], or an array of those", "inputs");
      }
      simdjson::dom::array items = value;
      if (items.size() == 0) return ApiError::InvalidRequest("inputs must not be empty", "inputs");
      if (items.size() > kMaxScorePairs) return TooMany("inputs", items.size());
      out->batch = true;
      size_t i = 0;
      for (element item : items) {
        if ((err = ParsePredictInput(item, Indexed("inputs", i++), out))) return err;
      }
    } else if (key == "model") {
      if ((err = ParseOptionalString(value, "model", &out->model))) return err;
    } else if (key == "truncate") {
      if ((err = ParseBool(value, "truncate", &out->truncate))) return err;
    } else if (key == "truncation_direction") {
      if ((err = ParseTruncationDirection(value, &out->truncation_direction))) return err;
    } else if (key == "raw_scores") {
      if ((err = ParseBool(value, "raw_scores", &out->raw_scores))) return err;
    } else if (key == "priority") {
      if ((err = ParsePriority(value, &out->scheduling.priority))) return err;
    }
  }
  if (!has_inputs) return ApiError::InvalidRequest("inputs is required", "inputs");
  return std::nullopt;
}

std::optional<ApiError> ParseHfClassificationRequest(std::string_view body, PredictRequest* out) {
  if (auto err = ParsePredictRequest(body, out)) return err;
  out->batch = true;
  element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  element parameters;
  if (doc["parameters"].get(parameters) != simdjson::SUCCESS || parameters.is_null()) {
    return std::nullopt;
  }
  if (parameters.type() != element_type::OBJECT) {
    return ApiError::InvalidRequest("parameters must be an object", "parameters");
  }
  for (simdjson::dom::key_value_pair p : simdjson::dom::object(parameters)) {
    const element value = p.value;
    if (value.type() == element_type::NULL_VALUE) continue;
    if (p.key == "top_k") {
      if (auto err = ParsePositiveInteger(value, "parameters.top_k", &out->top_k)) return err;
    } else if (p.key == "function_to_apply") {
      const std::string_view f =
          value.type() == element_type::STRING ? std::string_view(value) : std::string_view();
      if (f == "sigmoid") {
        out->function = ScoreFunction::kSigmoid;
      } else if (f == "softmax") {
        out->function = ScoreFunction::kSoftmax;
      } else if (f == "none") {
        out->function = ScoreFunction::kNone;
      } else {
        return ApiError::InvalidRequest(
            "parameters.function_to_apply must be \"sigmoid\", \"softmax\" or \"none\"",
            "parameters.function_to_apply");
      }
    }
  }
  return std::nullopt;
}

std::string WritePredictResponse(bool batch, const std::vector<float>& scores,
                                 const std::vector<std::string>& labels,
                                 std::optional<int64_t> top_k) {
  const size_t n = labels.size();
  const size_t keep = top_k && *top_k >= 0 ? std::min(n, size_t(*top_k)) : n;
  std::string out;
  JsonWriter w(&out);
  if (batch) w.BeginArray();
  std::vector<float> row(n);
  for (size_t i = 0; n > 0 && i < scores.size() / n; ++i) {
    row.assign(scores.begin() + long(i * n), scores.begin() + long((i + 1) * n));
    w.BeginArray();
    std::vector<size_t> order = Ranked(row);
    order.resize(keep);
    for (size_t k : order) {
      w.BeginObject().Key("score").Float(row[k]).Key("label").String(labels[k]).EndObject();
    }
    w.EndArray();
  }
  if (batch) w.EndArray();
  return out;
}

std::string WriteCohereRerankResponse(const ScoreRequest& request, const std::vector<float>& scores,
                                      int64_t tokens, const std::vector<ChunkHit>& chunks) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("id").String(ResponseId("rerank"));
  WriteRelevanceResults(request, scores, chunks, &w);
  // Cohere bills a search unit per query with up to 100 documents.
  const int64_t search_units = (int64_t(scores.size()) + 99) / 100;
  w.Key("meta").BeginObject();
  w.Key("api_version").BeginObject().Key("version").String("2").EndObject();
  w.Key("billed_units").BeginObject().Key("search_units").Int(search_units).EndObject();
  w.Key("tokens").BeginObject().Key("input_tokens").Int(tokens).EndObject();
  w.EndObject().EndObject();
  return out;
}

}  // namespace orchid
