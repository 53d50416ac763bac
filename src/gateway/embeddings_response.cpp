#include "gateway/embeddings_response.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gateway/base64.h"
#include "gateway/json_writer.h"
#include "gateway/quantize.h"

namespace orchid {

namespace {

// One row in `format` as a JSON value.
void WriteRow(JsonWriter& w, const float* row, int dim, EncodingFormat format,
              NativeQuantization native, std::vector<int32_t>* scratch) {
  if (format == EncodingFormat::kFloat) {
    w.FloatArray(row, size_t(dim));
  } else if (format == EncodingFormat::kBase64) {
    std::string b64;
    b64.reserve(size_t(dim) * 6 + 4);
    b64.push_back('"');
    AppendBase64Floats(&b64, row, size_t(dim));
    b64.push_back('"');
    w.Raw(b64);
  } else {
    QuantizeRow(row, dim, format, native, scratch);
    std::string ints;
    ints.reserve(scratch->size() * 5 + 2);
    ints.push_back('[');
    for (size_t i = 0; i < scratch->size(); ++i) {
      if (i > 0) ints.push_back(',');
      ints.append(std::to_string((*scratch)[i]));
    }
    ints.push_back(']');
    w.Raw(ints);
  }
}

// A reply id as Cohere's carry one: "embed-" and 16 random hex digits.
std::string ResponseId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(rng()));
  return std::string("embed-") + hex;
}

}  // namespace

std::string WriteOpenAiEmbeddingsResponse(const EmbeddingMatrix& m, const EmbeddingOutput& output,
                                          std::string_view model, int64_t prompt_tokens) {
  std::string out;
  const size_t kinds = std::max<size_t>(1, output.types.size());
  // ~10 characters per float as text, 4/3 bytes per byte as base64, plus framing.
  out.reserve(kinds * size_t(m.rows) *
                  (output.format == EncodingFormat::kFloat ? size_t(m.dim) * 11 + 64
                                                           : size_t(m.dim) * 6 + 64) +
              128);
  std::vector<int32_t> scratch;
  JsonWriter w(&out);
  w.BeginObject().Key("object").String("list");
  if (output.types.empty()) {
    w.Key("data").BeginArray();
    for (int i = 0; i < m.rows; ++i) {
      w.BeginObject().Key("object").String("embedding").Key("index").Int(i).Key("embedding");
      WriteRow(w, m.row(i), m.dim, output.format, output.native, &scratch);
      w.EndObject();
    }
    w.EndArray();
  } else {
    w.Key("response_type").String("embeddings_by_type").Key("embeddings").BeginObject();
    for (EncodingFormat type : output.types) {
      w.Key(EncodingFormatName(type)).BeginArray();
      for (int i = 0; i < m.rows; ++i) WriteRow(w, m.row(i), m.dim, type, output.native, &scratch);
      w.EndArray();
    }
    w.EndObject();
  }
  w.Key("model").String(model);
  w.Key("usage").BeginObject().Key("prompt_tokens").Int(prompt_tokens);
  w.Key("total_tokens").Int(prompt_tokens).EndObject();
  w.EndObject();
  return out;
}

std::string WriteCohereEmbedResponse(const EmbeddingMatrix& m, const EmbeddingOutput& output,
                                     const std::vector<std::string>& texts,
                                     std::string_view api_version, int64_t input_tokens) {
  std::string out;
  const size_t kinds = std::max<size_t>(1, output.types.size());
  out.reserve(kinds * size_t(m.rows) * (size_t(m.dim) * 11 + 64) + 256);
  std::vector<int32_t> scratch;
  JsonWriter w(&out);
  w.BeginObject().Key("id").String(ResponseId());
  if (output.types.empty()) {
    w.Key("response_type").String("embeddings_floats").Key("embeddings").BeginArray();
    for (int i = 0; i < m.rows; ++i) w.FloatArray(m.row(i), size_t(m.dim));
    w.EndArray();
  } else {
    w.Key("response_type").String("embeddings_by_type").Key("embeddings").BeginObject();
    for (EncodingFormat type : output.types) {
      w.Key(EncodingFormatName(type)).BeginArray();
      for (int i = 0; i < m.rows; ++i) WriteRow(w, m.row(i), m.dim, type, output.native, &scratch);
      w.EndArray();
    }
    w.EndObject();
  }
  w.Key("texts").BeginArray();
  for (const std::string& t : texts) w.String(t);
  w.EndArray();
  w.Key("meta").BeginObject();
  w.Key("api_version").BeginObject().Key("version").String(api_version).EndObject();
  w.Key("billed_units").BeginObject().Key("input_tokens").Int(input_tokens).EndObject();
  w.EndObject().EndObject();
  return out;
}

std::string WriteTeiEmbedResponse(const EmbeddingMatrix& m) {
  std::string out;
  out.reserve(size_t(m.rows) * (size_t(m.dim) * 11 + 2) + 2);
  JsonWriter w(&out);
  w.BeginArray();
  for (int i = 0; i < m.rows; ++i) w.FloatArray(m.row(i), size_t(m.dim));
  w.EndArray();
  return out;
}

std::string WriteTeiSparseResponse(const EmbeddingMatrix& m) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  for (int i = 0; i < m.rows; ++i) {
    w.BeginArray();
    const float* row = m.row(i);
    for (int j = 0; j < m.dim; ++j) {
      if (row[j] == 0.0f) continue;
      w.BeginObject().Key("index").Int(j).Key("value").Float(row[j]).EndObject();
    }
    w.EndArray();
  }
  w.EndArray();
  return out;
}

void WriteTokenRows(const EmbeddingMatrix& m, int32_t count, int* row, JsonWriter* w) {
  w->BeginArray();
  for (int t = 0; t < count && *row < m.rows; ++t, ++*row)
    w->FloatArray(m.row(*row), size_t(m.dim));
  w->EndArray();
}

}  // namespace orchid
