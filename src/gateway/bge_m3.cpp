#include "gateway/bge_m3.h"

#include <algorithm>
#include <cmath>

#include "gateway/json_parse.h"
#include "gateway/json_writer.h"
#include "gateway/late_interaction.h"

namespace orchid {

std::vector<int32_t> BgeM3UnusedTokens(const Tokenizer& tokenizer) {
  // cls_token, eos_token, pad_token, unk_token as XLM-R's and BERT's tokenizers name them (a
  // BERT tokenizer has no eos_token: its [SEP] stays).
  static constexpr const char* kNames[][2] = {
      {"<s>", "[CLS]"}, {"</s>", nullptr}, {"<pad>", "[PAD]"}, {"<unk>", "[UNK]"}};
  std::vector<int32_t> ids;
  for (const auto& names : kNames) {
    for (const char* name : names) {
      if (name == nullptr) continue;
      if (std::optional<int32_t> id = tokenizer.TokenToId(name)) {
        ids.push_back(*id);
        break;
      }
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void SplitBgeM3Rows(const int32_t* ids, const float* rows, int n, int dim,
                    const std::vector<int32_t>& unused, LexicalWeights* lexical,
                    std::vector<float>* colbert) {
  const size_t width = size_t(dim) + 1;
  lexical->clear();
  for (int t = 0; t < n; ++t) {
    const float w = std::max(rows[size_t(t) * width + size_t(dim)], 0.0f);
    if (w > 0 && !std::binary_search(unused.begin(), unused.end(), ids[t])) {
      lexical->emplace_back(ids[t], w);
    }
  }
  // The largest weight of each id.
  std::sort(lexical->begin(), lexical->end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  lexical->erase(std::unique(lexical->begin(), lexical->end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 lexical->end());
  if (n < 2) return;
  const size_t first = colbert->size();
  for (int t = 1; t < n; ++t) {
    const float* row = rows + size_t(t) * width;
    colbert->insert(colbert->end(), row, row + dim);
  }
  NormalizeRows(colbert->data() + first, n - 1, dim);
}

double LexicalScore(const LexicalWeights& a, const LexicalWeights& b) {
  double total = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].first < b[j].first) {
      ++i;
    } else if (b[j].first < a[i].first) {
      ++j;
    } else {
      total += double(a[i++].second) * double(b[j++].second);
    }
  }
  return total;
}

double BgeM3ColbertScore(const float* q, int nq, const float* d, int nd, int dim) {
  if (nq == 0) return 0;
  return MaxSim(q, nq, d, nd, dim) / double(nq);
}

std::optional<BgeM3ScoreMode::Kind> ParseBgeM3ScoreKind(const std::string& name) {
  using Kind = BgeM3ScoreMode::Kind;
  if (name == "dense") return Kind::kDense;
  if (name == "sparse") return Kind::kSparse;
  if (name == "colbert") return Kind::kColbert;
  if (name == "sparse+dense") return Kind::kSparseDense;
  if (name == "colbert+sparse+dense") return Kind::kColbertSparseDense;
  return std::nullopt;
}

double BgeM3Score(const BgeM3ScoreMode& mode, double dense, double sparse, double colbert) {
  using Kind = BgeM3ScoreMode::Kind;
  switch (mode.kind) {
    case Kind::kDense:
      return dense;
    case Kind::kSparse:
      return sparse;
    case Kind::kColbert:
      return colbert;
    case Kind::kSparseDense:
      return (sparse * mode.sparse_weight + dense * mode.dense_weight) /
             (mode.sparse_weight + mode.dense_weight);
    case Kind::kColbertSparseDense:
      return (colbert * mode.colbert_weight + sparse * mode.sparse_weight +
              dense * mode.dense_weight) /
             (mode.dense_weight + mode.sparse_weight + mode.colbert_weight);
  }
  return dense;
}

std::string WriteTeiLexicalResponse(const std::vector<LexicalWeights>& lexical) {
  std::string out;
  JsonWriter w(&out);
  w.BeginArray();
  for (const LexicalWeights& text : lexical) {
    w.BeginArray();
    for (const auto& [id, weight] : text) {
      w.BeginObject().Key("index").Int(id).Key("value").Float(weight).EndObject();
    }
    w.EndArray();
  }
  w.EndArray();
  return out;
}

std::optional<ApiError> ParseEmbedMultiRequest(std::string_view body, EmbeddingsRequest* request,
                                               BgeM3Outputs* outputs) {
  if (auto err = ParseOpenAiEmbeddingsRequest(body, request)) return err;
  simdjson::dom::element doc;
  if (auto err = ParseDocument(body, &doc)) return err;
  *outputs = BgeM3Outputs{};
  for (auto [key, flag] : {std::pair{"return_dense", &outputs->dense},
                           {"return_sparse", &outputs->sparse},
                           {"return_colbert_vecs", &outputs->colbert}}) {
    simdjson::dom::element value;
    if (simdjson::dom::object(doc)[key].get(value) == simdjson::SUCCESS) {
      if (auto err = ParseBool(value, key, flag)) return err;
    }
  }
  if (!outputs->dense && !outputs->sparse && !outputs->colbert) {
    return ApiError::InvalidRequest(
        "return_dense, return_sparse and return_colbert_vecs are all false: nothing to return",
        "return_dense");
  }
  if (request->encoding_format != EncodingFormat::kFloat || !request->embedding_types.empty()) {
    return ApiError::InvalidRequest("/embed_multi returns float vectors only", "encoding_format");
  }
  if (request->dimensions) {
    return ApiError::InvalidRequest("/embed_multi returns whole vectors: no dimensions",
                                    "dimensions");
  }
  request->per_token = true;
  return std::nullopt;
}

std::string WriteEmbedMultiResponse(const BgeM3Outputs& outputs, std::string_view model,
                                    const EmbeddingMatrix& dense,
                                    const std::vector<LexicalWeights>& lexical,
                                    const EmbeddingMatrix& colbert,
                                    const std::vector<int32_t>& token_counts, int64_t tokens) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("object").String("list").Key("model").String(model);
  w.Key("data").BeginArray();
  int row = 0;
  for (size_t i = 0; i < token_counts.size(); ++i) {
    w.BeginObject().Key("index").Int(int64_t(i)).Key("object").String("embedding_multi");
    if (outputs.dense) {
      w.Key("dense_vecs").FloatArray(dense.row(int(i)), size_t(dense.dim));
    }
    if (outputs.sparse) {
      w.Key("lexical_weights").BeginObject();
      for (const auto& [id, weight] : lexical[i]) w.Key(std::to_string(id)).Float(weight);
      w.EndObject();
    }
    if (outputs.colbert) w.Key("colbert_vecs").BeginArray();
    for (int t = 0; t < token_counts[i]; ++t, ++row) {
      if (outputs.colbert) w.FloatArray(colbert.row(row), size_t(colbert.dim));
    }
    if (outputs.colbert) w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("usage").BeginObject().Key("prompt_tokens").Int(tokens).Key("total_tokens").Int(tokens);
  w.EndObject().EndObject();
  return out;
}

}  // namespace orchid
