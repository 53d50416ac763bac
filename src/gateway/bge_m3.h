// BGE-M3's three outputs, from the rows of one pass (ModelInfo::bge_m3), exactly as
// FlagEmbedding's BGEM3FlagModel (M3Embedder.encode and compute_score) computes them:
//
//  - dense: the pooled row (CLS, L2-normalised), as the engine gives it;
//  - lexical weights: per token relu(sparse_linear(h)), the largest weight of each token id
//    kept, ids of the tokenizer's cls, eos, pad and unk tokens dropped, and weights of 0
//    dropped (M3Embedder's _process_token_weights);
//  - ColBERT vectors: colbert_linear(h) of every token but the first (the final </s> kept),
//    each L2-normalised (F.normalize, eps 1e-12);
//  - scores of a (query, passage) pair: dense = q . p; sparse = sum over shared ids of
//    w_q * w_p; colbert = sum over q's vectors of the largest dot product with one of p's,
//    divided by the number of q's vectors (M3's colbert_score, not PyLate's plain sum);
//    "sparse+dense" = (w_s s + w_d d) / (w_s + w_d) and "colbert+sparse+dense" =
//    (w_d d + w_s s + w_c c) / (w_d + w_s + w_c), with compute_score's
//    weights_for_different_modes [w_d, w_s, w_c] (default [1, 1, 1]).
//
// Thread safety: free functions and plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/api_error.h"
#include "gateway/embeddings_request.h"
#include "gateway/embeddings_response.h"
#include "tokenizer/tokenizer.h"

namespace orchid {

// One text's lexical weights: (token id, weight), ids ascending, weights > 0.
using LexicalWeights = std::vector<std::pair<int32_t, float>>;

// The token ids FlagEmbedding leaves out of lexical weights: the tokenizer's cls, eos, pad and
// unk tokens (<s>, </s>, <pad>, <unk> for XLM-R; [CLS], [SEP], [PAD], [UNK] for BERT).
std::vector<int32_t> BgeM3UnusedTokens(const Tokenizer& tokenizer);

// One text's per-token rows ([colbert (dim) | sparse logit], dim + 1 wide; n rows for its n
// token ids) into its lexical weights and its n - 1 ColBERT vectors (appended to *colbert,
// normalised). `unused` is sorted.
void SplitBgeM3Rows(const int32_t* ids, const float* rows, int n, int dim,
                    const std::vector<int32_t>& unused, LexicalWeights* lexical,
                    std::vector<float>* colbert);

// sum over the ids in both of w_a * w_b (both sorted by id).
double LexicalScore(const LexicalWeights& a, const LexicalWeights& b);

// M3's colbert_score: the MaxSim sum over q's `nq` vectors divided by nq (0 when nq is 0).
double BgeM3ColbertScore(const float* q, int nq, const float* d, int nd, int dim);

// Which compute_score result a scoring request returns, and its weights.
struct BgeM3ScoreMode {
  enum class Kind : uint8_t { kDense, kSparse, kColbert, kSparseDense, kColbertSparseDense };
  Kind kind = Kind::kDense;
  double dense_weight = 1, sparse_weight = 1, colbert_weight = 1;
};
// The mode named `name` ("dense", "sparse", "colbert", "sparse+dense",
// "colbert+sparse+dense"), or nullopt.
std::optional<BgeM3ScoreMode::Kind> ParseBgeM3ScoreKind(const std::string& name);
// The combined score from the three.
double BgeM3Score(const BgeM3ScoreMode& mode, double dense, double sparse, double colbert);

// TEI's /embed_sparse reply: per input, [{"index": token id, "value": weight}, ...].
std::string WriteTeiLexicalResponse(const std::vector<LexicalWeights>& lexical);

// orchid's POST /embed_multi: a BGE-M3 model's outputs from one pass, as FlagEmbedding's
// encode(return_dense, return_sparse, return_colbert_vecs) returns them. The body is
// /v1/embeddings' (input, model, truncate, ...: ParseOpenAiEmbeddingsRequest; float rows only,
// no dimensions) with "return_dense", "return_sparse" and "return_colbert_vecs" (booleans,
// default true; not all false). Returns the error to send, or nullopt with *request (per_token
// set) and *outputs filled.
struct BgeM3Outputs {
  bool dense = true, sparse = true, colbert = true;
};
std::optional<ApiError> ParseEmbedMultiRequest(std::string_view body, EmbeddingsRequest* request,
                                               BgeM3Outputs* outputs);
// {"object": "list", "model", "data": [{"index", "object": "embedding_multi", "dense_vecs":
// [...], "lexical_weights": {"token id": weight, ...}, "colbert_vecs": [[...], ...]}], "usage"}
// with the asked-for keys; `colbert` holds each input's token_counts[i] rows.
std::string WriteEmbedMultiResponse(const BgeM3Outputs& outputs, std::string_view model,
                                    const EmbeddingMatrix& dense,
                                    const std::vector<LexicalWeights>& lexical,
                                    const EmbeddingMatrix& colbert,
                                    const std::vector<int32_t>& token_counts, int64_t tokens);

}  // namespace orchid
