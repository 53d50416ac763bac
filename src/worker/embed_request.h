// EmbedRequest: what is asked of the worker (token-id sequences, pooling, normalisation,
// Matryoshka width, task adapter, scheduling), and the checks a request passes before it is
// queued. The checks are here, not in the model: one engine batch carries many requests, and
// one bad id would fail every request that shares it.
//
// Two callers: the TokenBudgetScheduler (ValidateEmbedRequest: everything, against the engine's
// model and the queue's limits) and the gateway's ReplicaPool (CheckRequestShape: what needs
// no model, before a request is split into chunks; each worker checks the rest).
//
// Thread safety: plain values and free functions.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "description/model_info.h"
#include "engine/lazy_result.h"
#include "worker/scheduling.h"

namespace orchid {

struct EmbedRequest {
  std::vector<std::vector<int32_t>> sequences;  // each non-empty, at most max_batch_tokens long
  // Token type (segment) ids: empty = all zero for every sequence; else one entry per sequence,
  // each empty (all zero) or exactly as long as its sequence (cross-encoder pairs).
  std::vector<std::vector<int32_t>> token_type_ids;
  // Images (a dual encoder's vision tower, ModelInfo::image): empty for text; else one entry per
  // sequence, the image's pixel rows (its tokens x image.patch_dim() values, zeros for a class
  // token), the sequence holding the image's token ids (1 for a class token, 0 for a patch). A
  // request is all images or all text; images are pooled at their first token, whatever
  // `pooling` says.
  std::vector<std::vector<float>> pixels;
  bool images() const { return !pixels.empty(); }
  Pooling pooling = Pooling::kMean;  // kNone: every token's last hidden state (see below)
  // Leading tokens of every sequence that pooling leaves out (the prompt, under
  // sentence-transformers' include_prompt: false); 0 = none.
  int pool_skip = 0;
  // [sequences] or empty: tokens of each sequence that are attended to (RaggedBatch::attend_lens;
  // 0: all).
  std::vector<int32_t> attend_lens;
  // The task adapter every sequence runs with (RaggedBatch::adapters): 1-based into
  // ModelInfo::tasks, 0 = none. A batch mixes requests of different adapters.
  int adapter = 0;
  bool normalize = false;
  // Matryoshka: keep the first `dimensions` values of each row (0 = the whole row), then
  // L2-normalise them when `normalize` is set (OpenAI's normalised embeddings); without it the
  // truncated row is returned as is (sentence-transformers' truncate_dim). At most the model's
  // output width (ModelInfo::output_dim()).
  int dimensions = 0;
  // Priority, class, fair-share flow, deadline and cancellation (see scheduling.h).
  Scheduling scheduling;
};

// Receives one row per sequence of the request, in request order, or the error that ended it.
// With Pooling::kNone (per-token output): one row per token instead, hidden_size wide, the
// sequences' tokens one after the other in request order.
using EmbedCallback = std::function<void(Result<Embeddings>)>;

// InvalidArgument unless the request has sequences and its token_type_ids and attend_lens are
// empty or hold one entry per sequence. Needs no model.
Status CheckRequestShape(const EmbedRequest& request);

// What a queue admits (TokenBudgetSchedulerOptions).
struct RequestLimits {
  int max_batch_tokens = 0;       // the longest sequence
  int64_t max_queued_tokens = 0;  // the most tokens one request may hold
};

// Every check a request passes before it is queued for `model`, and its token count
// (*tokens, set when the request is valid):
//   InvalidArgument  CheckRequestShape; an empty sequence; a task adapter, token type id,
//                    attended length or `dimensions` out of range for the model; a sequence's
//                    token_type_ids of another length than the sequence
//   OutOfRange       a sequence longer than max_batch_tokens, or the request alone holds more
//                    than max_queued_tokens
Status ValidateEmbedRequest(const EmbedRequest& request, const ModelInfo& model,
                            const RequestLimits& limits, int64_t* tokens);

}  // namespace orchid
