// Static embedding models: a token-embedding table and a mean over a text's rows, no transformer
// (model2vec's StaticModel, sentence-transformers' StaticEmbedding module). Two layouts:
//
//  - a model2vec directory: config.json with model2vec's fields (normalize, max_length),
//    model.safetensors with the table "embeddings" [vocabulary, dim] and tokenizer.json, all at
//    the top (model2vec also writes a modules.json naming a StaticEmbedding at "."); encoded as
//    model2vec's StaticModel.encode: each text cut to max_length x the vocabulary's median token
//    length characters, tokenized without special tokens, cut to max_length tokens, the unknown
//    token dropped, the rows averaged, L2-normalised when config.json says normalize;
//  - a sentence-transformers directory whose modules.json starts with a StaticEmbedding module
//    in its own folder (its model.safetensors: "embedding.weight", or model2vec's
//    "embeddings"; its tokenizer.json): encoded as SentenceTransformer.encode, tokenized
//    without special tokens (the unknown token kept), cut only by tokenizer.json's own
//    truncation section, averaged (nn.EmbeddingBag's mean), then the Normalize module if any.
//
// Reading this needs no weights: the table's shape comes from the safetensors header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace orchid {

struct StaticEmbeddingConfig {
  std::string dir;         // the folder of the table (model.safetensors) and tokenizer.json
  std::string table;       // the table's tensor name: "embedding.weight" or "embeddings"
  bool model2vec = false;  // model2vec's encode rules (above); else sentence-transformers'
  int32_t vocab_size = 0;  // table rows, equal to tokenizer.json's vocabulary
  int dim = 0;             // table columns: the embedding's width
  // The longest token sequence encode keeps (0: no limit) and where that comes from.
  int max_length = 0;
  std::string max_length_source;
  bool normalize = false;   // model2vec: config.json normalize (sentence-transformers: Normalize)
  int32_t drop_token = -1;  // model2vec: the unknown token's id, left out of the mean; -1: none
  int64_t max_chars = 0;    // model2vec: texts cut to this many characters first; 0: none
};

// DIR's static embedding module, nullopt when DIR is not a static model (no StaticEmbedding in
// modules.json, no model2vec config.json). A malformed one (a table of the wrong rank or dtype,
// rows unequal to the tokenizer's vocabulary, model2vec's vocabulary quantization, a bad
// config field) is an error naming the file and what is wrong.
Result<std::optional<StaticEmbeddingConfig>> ReadStaticEmbedding(const std::string& dir);

}  // namespace orchid
