#include "gateway/pair_scores.h"

#include <stdexcept>

#include "gateway/late_interaction.h"

namespace orchid {
namespace {

// The query row of pair i: the one query, or the i-th.
size_t QueryOf(size_t i, size_t num_queries) { return num_queries == 1 ? 0 : i; }

}  // namespace

std::vector<float> SimilaritiesToFirst(SimilarityFunction fn, const EmbeddingMatrix& rows) {
  std::vector<float> out;
  for (int i = 1; i < rows.rows; ++i) {
    out.push_back(float(Similarity(fn, rows.row(0), rows.row(i), rows.dim)));
  }
  return out;
}

std::vector<float> PairSimilarities(SimilarityFunction fn, const EmbeddingMatrix& rows,
                                    size_t num_queries, size_t num_pairs) {
  std::vector<float> scores(num_pairs);
  for (size_t i = 0; i < num_pairs; ++i) {
    const int q = int(QueryOf(i, num_queries));
    scores[i] = float(Similarity(fn, rows.row(q), rows.row(int(num_queries + i)), rows.dim));
  }
  return scores;
}

std::vector<float> MaxSimScores(const EmbeddingReply& reply, size_t num_queries, size_t num_pairs) {
  const EmbeddingMatrix& m = reply.embeddings;
  std::vector<size_t> first(reply.token_counts.size() + 1, 0);
  for (size_t i = 0; i < reply.token_counts.size(); ++i) {
    first[i + 1] = first[i] + size_t(reply.token_counts[i]);
  }
  if (first.size() != num_queries + num_pairs + 1 || first.back() != size_t(m.rows)) {
    throw std::runtime_error("late-interaction rows mismatch");
  }
  std::vector<float> scores(num_pairs);
  for (size_t i = 0; i < num_pairs; ++i) {
    const size_t q = QueryOf(i, num_queries), d = num_queries + i;
    scores[i] = float(MaxSim(m.row(int(first[q])), reply.token_counts[q], m.row(int(first[d])),
                             reply.token_counts[d], m.dim));
  }
  return scores;
}

std::vector<float> BgeM3Scores(const BgeM3ScoreMode& mode, const EmbeddingReply& reply,
                               size_t num_queries, size_t num_pairs) {
  const EmbeddingMatrix& colbert = reply.embeddings;
  const size_t texts = num_queries + num_pairs;
  std::vector<size_t> first(texts + 1, 0);
  for (size_t i = 0; i < reply.token_counts.size() && i < texts; ++i) {
    first[i + 1] = first[i] + size_t(reply.token_counts[i]);
  }
  if (reply.token_counts.size() != texts || first.back() != size_t(colbert.rows) ||
      size_t(reply.dense.rows) != texts || reply.lexical.size() != texts) {
    throw std::runtime_error("BGE-M3 rows mismatch");
  }
  std::vector<float> scores(num_pairs);
  for (size_t i = 0; i < num_pairs; ++i) {
    const size_t q = QueryOf(i, num_queries), d = num_queries + i;
    double dense = 0;
    for (int k = 0; k < reply.dense.dim; ++k) {
      dense += double(reply.dense.row(int(q))[k]) * double(reply.dense.row(int(d))[k]);
    }
    const double sparse = LexicalScore(reply.lexical[q], reply.lexical[d]);
    const double late =
        BgeM3ColbertScore(colbert.row(int(first[q])), reply.token_counts[q],
                          colbert.row(int(first[d])), reply.token_counts[d], colbert.dim);
    scores[i] = float(BgeM3Score(mode, dense, sparse, late));
  }
  return scores;
}

}  // namespace orchid
