// Arbitrary bytes as the JSON body of POST /v1/embeddings, /embed, /pooling, /embed_multi and
// /similarity, of
// Cohere's /v1/embed and /v2/embed, of the rerank routes (/rerank, /v1/rerank, /v2/rerank,
// /v1/score) and of /predict (and the Hugging Face text classification of POST /): the parsers must
// return an ApiError or a request that satisfies its documented shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/bge_m3.h"
#include "gateway/embeddings_request.h"
#include "gateway/score_request.h"

namespace {

void Check(const orchid::EmbeddingsRequest& r) {
  // Texts and images, or token ids alone; at least one input; each image at its own index.
  if (!r.texts.empty() && !r.token_ids.empty()) std::abort();
  if (!r.token_ids.empty() && (!r.images.empty() || r.image_modality)) std::abort();
  if (r.num_inputs() == 0) std::abort();
  std::vector<bool> taken(r.num_inputs(), false);
  for (const auto& image : r.images) {
    if (image.index >= r.num_inputs() || taken[image.index] || image.source.empty()) std::abort();
    taken[image.index] = true;
  }
}

// A query per document or one for all; 1..kMaxScorePairs non-empty documents.
void Check(const orchid::ScoreRequest& r) {
  if (r.documents.empty() || r.documents.size() > orchid::kMaxScorePairs) std::abort();
  if (r.queries.size() != 1 && r.queries.size() != r.documents.size()) std::abort();
  for (const std::string& d : r.documents) {
    if (d.empty()) std::abort();
  }
  for (size_t i = 0; i < r.num_pairs(); ++i) {
    if (r.query(i).empty()) std::abort();
  }
  if (r.top_n && *r.top_n < 1) std::abort();
  // BGE-M3's score_mode is one of compute_score's, its weights three numbers in [0, 1e6], the
  // dense and sparse ones not both 0.
  if (r.score_mode && !orchid::ParseBgeM3ScoreKind(*r.score_mode)) std::abort();
  if (!r.score_weights.empty()) {
    if (r.score_weights.size() != 3) std::abort();
    for (double w : r.score_weights) {
      if (!(w >= 0 && w <= 1e6)) std::abort();
    }
    if (!(r.score_weights[0] + r.score_weights[1] > 0)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  {
    orchid::EmbeddingsRequest r;
    if (!orchid::ParseOpenAiEmbeddingsRequest(body, &r).has_value()) Check(r);
  }
  {
    orchid::EmbeddingsRequest r;
    if (!orchid::ParseTeiEmbedRequest(body, &r).has_value()) Check(r);
  }
  {
    orchid::EmbeddingsRequest r;  // vLLM's /pooling: per-token, float only
    if (!orchid::ParsePoolingRequest(body, &r).has_value()) {
      Check(r);
      if (!r.per_token || r.encoding_format != orchid::EncodingFormat::kFloat) std::abort();
    }
  }
  {
    orchid::EmbeddingsRequest r;  // orchid's /embed_multi: per-token, float only, some output
    orchid::BgeM3Outputs outputs;
    if (!orchid::ParseEmbedMultiRequest(body, &r, &outputs).has_value()) {
      Check(r);
      if (!r.per_token || r.encoding_format != orchid::EncodingFormat::kFloat || r.dimensions) {
        std::abort();
      }
      if (!outputs.dense && !outputs.sparse && !outputs.colbert) std::abort();
    }
  }
  {
    orchid::EmbeddingsRequest r;  // the source sentence and at least one sentence, none empty
    if (!orchid::ParseTeiSimilarityRequest(body, &r).has_value()) {
      Check(r);
      if (r.texts.size() < 2) std::abort();
      for (const std::string& t : r.texts) {
        if (t.empty()) std::abort();
      }
    }
  }
  for (auto version : {orchid::CohereApiVersion::kV1, orchid::CohereApiVersion::kV2}) {
    orchid::EmbeddingsRequest r;  // non-empty texts (no token ids); v2 always has a type
    if (!orchid::ParseCohereEmbedRequest(body, version, &r).has_value()) {
      Check(r);
      if (!r.token_ids.empty()) std::abort();
      for (const std::string& t : r.texts) {
        if (t.empty()) std::abort();
      }
      if (version == orchid::CohereApiVersion::kV2 && r.embedding_types.empty()) std::abort();
      if ((r.max_tokens && *r.max_tokens < 1) || (r.dimensions && *r.dimensions < 1)) {
        std::abort();
      }
    }
  }
  for (auto parse : {orchid::ParsePredictRequest, orchid::ParseHfClassificationRequest}) {
    orchid::PredictRequest r;  // 1..kMaxScorePairs inputs, each a non-empty text or pair
    if (!parse(body, &r).has_value()) {
      if (r.size() == 0 || r.size() > orchid::kMaxScorePairs) std::abort();
      if (r.second.size() != r.first.size()) std::abort();
      if (!r.batch && r.size() != 1) std::abort();
      for (const std::string& t : r.first) {
        if (t.empty()) std::abort();
      }
      if (r.top_k && *r.top_k < 1) std::abort();
    }
  }
  for (auto parse : {orchid::ParseTeiRerankRequest, orchid::ParseRerankRequest,
                     orchid::ParseCohereRerankRequest, orchid::ParseScoreRequest}) {
    orchid::ScoreRequest r;
    if (!parse(body, &r).has_value()) Check(r);
  }
  return 0;
}
