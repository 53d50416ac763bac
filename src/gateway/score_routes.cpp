#include "gateway/score_routes.h"

#include <memory>
#include <optional>
#include <utility>

#include "gateway/bge_m3.h"
#include "gateway/pair_scores.h"

namespace orchid {
namespace {

// What the reply writers need of the request: its options, and the documents when echoed.
std::shared_ptr<const ScoreRequest> Shown(const ScoreRequest& request) {
  auto shown = std::make_shared<ScoreRequest>();
  shown->top_n = request.top_n;
  shown->return_text = request.return_text;
  shown->return_chunks = request.return_chunks;
  if (request.return_text) shown->documents = request.documents;
  return shown;
}

// score_mode / score_weights name BGE-M3's scores; another model refuses them.
std::optional<ApiError> NotBgeM3Score(const EmbeddingService& service,
                                      const ScoreRequest& request) {
  if (service.bge_m3() || (!request.score_mode && request.score_weights.empty())) {
    return std::nullopt;
  }
  return ApiError::InvalidRequest(
      "score_mode and score_weights choose among a BGE-M3 model's scores; the model `" +
          service.model_name() + "` is not one",
      request.score_mode ? "score_mode" : "score_weights", "not_a_bge_m3_model");
}

// Scores of a reply's pairs: `num_queries` query texts, then one document per pair.
using PairScorer =
    std::function<std::vector<float>(const EmbeddingReply&, size_t num_queries, size_t num_pairs)>;

// The request's queries, then its documents, as one embeddings request (per-token: the queries
// encoded as queries where the model tells them apart), scored by `score`.
void EmbedPairs(EmbeddingService& service, ScoreRequest request, bool per_token, PairScorer score,
                ScoreBodyWriter write, const RouteCall& call) {
  std::shared_ptr<const ScoreRequest> shown = Shown(request);
  EmbeddingsRequest embed;
  embed.per_token = per_token;
  embed.truncate = request.truncate;
  embed.truncation_direction = request.truncation_direction;
  embed.texts = std::move(request.queries);
  const size_t num_queries = embed.texts.size(), n = request.num_pairs();
  if (per_token) embed.late_queries = num_queries;
  for (std::string& d : request.documents) embed.texts.push_back(std::move(d));
  embed.scheduling = std::move(request.scheduling);  // (the pairs' own limit is checked)
  service.Embed(std::move(embed),
                Responding(call, [shown, score, write, name = service.model_name(), num_queries,
                                  n](EmbeddingReply result) {
                  const std::vector<float> scores = score(result, num_queries, n);
                  return write({*shown, scores, name, result.prompt_tokens, {}});
                }));
}

// The per-token models cut documents their own way: they refuse max_chunks_per_doc.
std::optional<ApiError> NoChunks(const EmbeddingService& service, const ScoreRequest& request) {
  if (request.max_chunks_per_doc.value_or(0) <= 0) return std::nullopt;
  return ApiError::InvalidRequest(
      service.bge_m3()
          ? "max_chunks_per_doc does not apply to a BGE-M3 model: it scores each (query, "
            "document) pair from their embeddings, as FlagEmbedding's compute_score"
          : "max_chunks_per_doc does not apply to a late-interaction (ColBERT) model: its "
            "documents are cut to the model's document_length, as PyLate encodes them",
      "max_chunks_per_doc");
}

// A BGE-M3 model: FlagEmbedding's compute_score result that the request's score_mode names
// (dense by default) with its score_weights (bge_m3.h).
void BgeM3Pairs(EmbeddingService& service, ScoreRequest request, ScoreBodyWriter write,
                const RouteCall& call) {
  BgeM3ScoreMode mode;
  if (request.score_mode) mode.kind = ParseBgeM3ScoreKind(*request.score_mode).value_or(mode.kind);
  if (request.score_weights.size() == 3) {
    mode.dense_weight = request.score_weights[0];
    mode.sparse_weight = request.score_weights[1];
    mode.colbert_weight = request.score_weights[2];
  }
  auto score = [mode](const EmbeddingReply& reply, size_t num_queries, size_t n) {
    return BgeM3Scores(mode, reply, num_queries, n);
  };
  EmbedPairs(service, std::move(request), /*per_token=*/true, score, std::move(write), call);
}

// vLLM's /v1/score for an embedding model: each pair's similarity, by the model's similarity
// function, between the two texts' embeddings (each text embedded once).
void SimilarityPairs(EmbeddingService& service, ScoreRequest request, ScoreBodyWriter write,
                     const RouteCall& call) {
  auto score = [fn = service.prompts().similarity](const EmbeddingReply& reply, size_t num_queries,
                                                   size_t n) {
    return PairSimilarities(fn, reply.embeddings, num_queries, n);
  };
  EmbedPairs(service, std::move(request), /*per_token=*/false, score, std::move(write), call);
}

}  // namespace

void ScorePairs(const ServedModels& served, RouteCall call, ScoreRequest request,
                ScoreBodyWriter write, EmbedderScores embedders) {
  call.DropBody();
  call.Schedule(&request.scheduling);
  ApiError not_found;
  const RoutedModel* model = served.Select(request.model, &not_found);
  if (model == nullptr) return call.Fail(not_found);
  EmbeddingService& embed = *model->embed;
  if (auto e = NotBgeM3Score(embed, request)) return call.Fail(*e);
  if (embed.bge_m3() || embed.late_interaction()) {
    if (auto e = NoChunks(embed, request)) return call.Fail(*e);
    if (embed.bge_m3()) return BgeM3Pairs(embed, std::move(request), std::move(write), call);
    // A late-interaction (ColBERT) model: MaxSim of each query's vectors (encoded as a query)
    // against its document's (encoded as a document).
    return EmbedPairs(embed, std::move(request), /*per_token=*/true, MaxSimScores, std::move(write),
                      call);
  }
  if (embedders == EmbedderScores::kSimilarity && !embed.is_scorer() &&
      !embed.model_info().sparse) {
    return SimilarityPairs(embed, std::move(request), std::move(write), call);
  }
  if (model->score == nullptr || !model->score->is_scorer()) {
    return call.Fail(ApiError::InvalidRequest(
        "The model `" + embed.model_name() +
            "` is an embedding model; rerank and score requests need a reranker "
            "(cross-encoder) model. Use /v1/embeddings for it.",
        "model", "model_not_a_reranker"));
  }
  std::shared_ptr<const ScoreRequest> shown = Shown(request);
  model->score->Score(std::move(request),
                      Responding(call, [shown, write = std::move(write),
                                        name = model->score->model_name()](ScoreReply result) {
                        return write({*shown, result.scores, name, result.tokens, result.chunks});
                      }));
}

}  // namespace orchid
