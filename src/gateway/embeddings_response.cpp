#include "gateway/embeddings_response.h"

#include <cmath>

#include "gateway/base64.h"
#include "gateway/json_writer.h"

namespace orchid {

std::string WriteOpenAiEmbeddingsResponse(const EmbeddingMatrix& m, EncodingFormat format,
                                          std::string_view model, int64_t prompt_tokens) {
  std::string out;
  // ~10 characters per float as text, 4/3 bytes per byte as base64, plus framing.
  out.reserve(size_t(m.rows) * (format == EncodingFormat::kFloat ? size_t(m.dim) * 11 + 64
                                                                 : size_t(m.dim) * 6 + 64) +
              128);
  JsonWriter w(&out);
  w.BeginObject().Key("object").String("list").Key("data").BeginArray();
  for (int i = 0; i < m.rows; ++i) {
    w.BeginObject().Key("object").String("embedding").Key("index").Int(i).Key("embedding");
    if (format == EncodingFormat::kFloat) {
      w.FloatArray(m.row(i), size_t(m.dim));
    } else {
      std::string b64;
      b64.reserve(size_t(m.dim) * 6 + 4);
      b64.push_back('"');
      AppendBase64Floats(&b64, m.row(i), size_t(m.dim));
      b64.push_back('"');
      w.Raw(b64);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("model").String(model);
  w.Key("usage").BeginObject().Key("prompt_tokens").Int(prompt_tokens);
  w.Key("total_tokens").Int(prompt_tokens).EndObject();
  w.EndObject();
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

}  // namespace orchid
