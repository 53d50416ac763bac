// The rerank and score routes' common path — TEI's /rerank, vLLM's /v1/rerank and /v1/score,
// Cohere's /v2/rerank — after each API's own parser: the model the request names scores its
// pairs as that kind of model does, and the route's writer puts the scores in its API's shape.
//
//   a cross-encoder          its logits, through the ScoreService (chunked documents included)
//   a late-interaction model MaxSim of each pair's token vectors (pair_scores.h)
//   a BGE-M3 model           FlagEmbedding's compute_score: `score_mode`, `score_weights`
//   an embedding model       where the route allows it (vLLM's /v1/score): the similarity of
//                            each pair's two texts, by the model's similarity function
//
// Errors go out in the route's API's shape (RouteCall::error).
// Thread safety: as the handlers (route_call.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gateway/route_call.h"
#include "gateway/score_request.h"

namespace orchid {

// What a scoring route's reply is written from.
struct ScoredPairs {
  const ScoreRequest& shown;            // the request's options, and its documents when echoed
  const std::vector<float>& scores;     // one per pair, in request order
  const std::string& model;             // the served name
  int64_t tokens;                       // tokens fed to the model
  const std::vector<ChunkHit>& chunks;  // a cross-encoder's chunked documents; else empty
};
using ScoreBodyWriter = std::function<std::string(const ScoredPairs&)>;

// Whether an embedding model answers the route with its texts' similarity, or is refused.
enum class EmbedderScores : uint8_t { kRefused, kSimilarity };

// Scores the parsed `request` for `call` and replies the body `write` makes (or the error).
void ScorePairs(const ServedModels& served, RouteCall call, ScoreRequest request,
                ScoreBodyWriter write, EmbedderScores embedders = EmbedderScores::kRefused);

}  // namespace orchid
