// The input rules of a static embedding model (model2vec, sentence-transformers'
// StaticEmbedding: description/static_embedding.h) around the tokenizer.json pipeline: texts are
// encoded without the post-processor's special tokens, model2vec first cuts each text to a
// number of characters, and drops its unknown token after truncation. The gateway, `embed` and
// /tokenize then see the ids the model averages.
//
// Thread safety: as the wrapped tokenizer (Encode is const and may run on many threads).
#pragma once

#include <cstdint>
#include <memory>

#include "tokenizer/tokenizer.h"

namespace orchid {

struct StaticInputRules {
  int64_t max_chars = 0;    // texts cut to this many characters (code points) first; 0: none
  int32_t drop_token = -1;  // this id is left out after truncation; -1: none
};

// `inner` with the rules: Encode never adds special tokens (whatever the options say),
// num_special_tokens() is 0, pairs are refused; decoding and the vocabulary are inner's.
std::unique_ptr<Tokenizer> WithStaticInputRules(std::unique_ptr<Tokenizer> inner,
                                                StaticInputRules rules);

}  // namespace orchid
