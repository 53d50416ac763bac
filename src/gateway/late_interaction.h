// Late interaction (PyLate / ColBERT models): how a text becomes the token ids a ColBERT model
// runs on, which of its token vectors are kept, and MaxSim, exactly as PyLate's
// ColBERT.tokenize / encode and pylate.scores.colbert_scores compute them.
//
//  - a text is tokenized with the model's special tokens and cut to its length less one (the
//    query or document length: PyLate truncates, never refuses); the query or document prefix
//    token is then inserted after the first token;
//  - queries (with do_query_expansion) are padded with the mask token to query_length before
//    the prefix goes in; unless attend_to_expansion_tokens, no token attends to that padding
//    (RaggedBatch::attend_lens), and every query vector is kept, the padding's included;
//  - documents keep the vectors of the tokens outside the skiplist (punctuation);
//  - the kept vectors are L2-normalised (torch's F.normalize, eps 1e-12);
//  - MaxSim(q, d) = sum over q's vectors of the largest dot product with one of d's.
//
// Thread safety: const after construction; Encode may be called from many threads.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "description/model_info.h"
#include "tokenizer/tokenizer.h"

namespace orchid {

class LateInteractionEncoder {
 public:
  // Resolves the config's prefixes, mask token and skiplist words against the tokenizer (as
  // transformers' convert_tokens_to_ids: a word not in the vocabulary names the unknown token).
  // Errors name what is missing (a prefix token, the mask token a query expansion needs).
  static Result<LateInteractionEncoder> Make(const LateInteraction& config,
                                             const Tokenizer& tokenizer);

  struct Encoded {
    std::vector<int32_t> ids;
    int attend_len = 0;         // > 0: only these first tokens are attended to
    std::vector<uint8_t> keep;  // per token: 1 if its vector is part of the output
  };
  Status Encode(std::string_view text, bool is_query, Encoded* out) const;

  int query_length() const { return config_.query_length; }
  int document_length() const { return config_.document_length; }

 private:
  LateInteraction config_;
  const Tokenizer* tokenizer_ = nullptr;
  int32_t query_prefix_ = -1, document_prefix_ = -1, mask_ = -1;
  std::unordered_set<int32_t> skiplist_;
};

// L2-normalises each of `rows` rows of `dim` floats in place (x / max(|x|, 1e-12)).
void NormalizeRows(float* data, int rows, int dim);

// sum_i max_j q_i . d_j over q's `nq` and d's `nd` rows of `dim` floats (dot products in float,
// the sum in double).
double MaxSim(const float* q, int nq, const float* d, int nd, int dim);

}  // namespace orchid
