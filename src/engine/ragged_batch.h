// RaggedBatch: what the engine runs. Sequences are packed back to back, never padded:
// sequence i owns tokens [cu_seqlens[i], cu_seqlens[i+1]) of the flat arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "description/model_info.h"

namespace orchid {

struct RaggedBatch {
  std::vector<int32_t> token_ids;       // [total_tokens]
  std::vector<int32_t> token_type_ids;  // [total_tokens] or empty (all zero)
  std::vector<int32_t> positions;       // [total_tokens]; position of each token in its sequence
  std::vector<int32_t> cu_seqlens;      // [num_sequences + 1], cu_seqlens[0] == 0
  std::vector<Pooling> pooling;         // [num_sequences]
  std::vector<uint8_t> normalize;       // [num_sequences]; 1 = L2-normalise the pooled vector
  // [num_sequences] or empty (all 0): leading tokens pooling leaves out (the prompt's tokens
  // under sentence-transformers' include_prompt: false; backends/cpu/pooling.h).
  std::vector<int32_t> pool_skips;
  // [num_sequences] or empty (all 0): > 0, only the sequence's first attend_lens[s] tokens are
  // attended to (keys); the tokens after them still attend to those, but nothing attends to
  // them (a ColBERT query's [MASK] expansion with attend_to_expansion_tokens false, as an
  // attention mask of zeros gives them in transformers). Bidirectional attention only.
  std::vector<int32_t> attend_lens;
  // [num_sequences] or empty (all 0): the task adapter each sequence runs with, 1-based into
  // ModelInfo::tasks (jina-embeddings-v3's LoRA adapters); 0 = the base model alone.
  std::vector<int32_t> adapters;
  // An image batch (a dual encoder's vision tower; ModelInfo::image): every token's pixel row,
  // [num_tokens * pixel_width] fp32 (the patch's values, zeros for a class token). Empty: a
  // text batch. A batch is all images or all text; an image sequence is pooled at its first
  // token (the class token, or any token for SigLIP's attention-pooling head).
  std::vector<float> pixels;
  int pixel_width = 0;
  bool image_batch() const { return pixel_width > 0; }

  int num_sequences() const { return cu_seqlens.empty() ? 0 : int(cu_seqlens.size()) - 1; }
  int num_tokens() const { return int(token_ids.size()); }
  int seq_len(int i) const { return cu_seqlens[i + 1] - cu_seqlens[i]; }

  // Appends one sequence with positions 0..n-1 (BERT-style; models that offset positions,
  // like XLM-R, do so themselves).
  void Add(const int32_t* ids, int n, Pooling pool, bool norm, const int32_t* type_ids = nullptr,
           int pool_skip = 0, int attend_len = 0, int adapter = 0);
  // Appends one image: its n token ids (ModelInfo::ImageInput: 1 for a class token, 0 for a
  // patch), positions 0..n-1, and n pixel rows of `width` values (all of a batch's images
  // alike); pooled at its first token.
  void AddImage(const int32_t* ids, int n, const float* pixel_rows, int width, bool norm);
  void Clear();

  // Checks internal consistency: sizes agree, cu_seqlens monotone and ends at num_tokens,
  // no empty sequence, ids in [0, vocab_size). Engines call this before running.
  Status Validate(int32_t vocab_size) const;
  // Validate(info.vocab_size), then what the model accepts: positions in
  // [0, info.max_position_embeddings), token types in [0, info.type_vocab_size). Every engine
  // checks a batch with this before running it (and Pooling::kNone against what it serves);
  // adapters in [0, tasks]. An image batch: a model with a vision tower, every sequence one
  // image of info.image.tokens() tokens with class-token ids and positions as ImageInput says,
  // pixel rows of info.image.patch_dim() finite values.
  Status Validate(const ModelInfo& info) const;
};

}  // namespace orchid
