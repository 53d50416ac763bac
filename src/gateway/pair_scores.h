// The scores of (query, document) pairs computed from their texts' embeddings, as the reference
// libraries compute them: the scoring math of the rerank, score and similarity routes, apart
// from routing. A reply holds the queries' rows first, then the documents' (one per pair); with
// one query, it pairs with every document.
//
// The per-token scores throw std::runtime_error when the reply's rows do not add up (a bug,
// answered 500 by the route's exception wrapper).
// Thread safety: free functions.
#pragma once

#include <cstddef>
#include <vector>

#include "description/sentence_transformers.h"
#include "gateway/bge_m3.h"
#include "gateway/embedding_service.h"

namespace orchid {

// TEI's /similarity: row 0's similarity with each later row, by the model's similarity function
// (sentence-transformers' model.similarity, in double).
std::vector<float> SimilaritiesToFirst(SimilarityFunction fn, const EmbeddingMatrix& rows);

// vLLM's /v1/score on an embedding model: each pair's similarity of its two texts' rows.
std::vector<float> PairSimilarities(SimilarityFunction fn, const EmbeddingMatrix& rows,
                                    size_t num_queries, size_t num_pairs);

// A late-interaction (ColBERT) model's pairs from a per-token reply: MaxSim of the query's
// vectors against its document's (pylate.scores.colbert_scores).
std::vector<float> MaxSimScores(const EmbeddingReply& reply, size_t num_queries, size_t num_pairs);

// A BGE-M3 model's pairs from a per-token reply (its dense rows, lexical weights and ColBERT
// vectors): FlagEmbedding's compute_score result that `mode` names, with its weights.
std::vector<float> BgeM3Scores(const BgeM3ScoreMode& mode, const EmbeddingReply& reply,
                               size_t num_queries, size_t num_pairs);

}  // namespace orchid
