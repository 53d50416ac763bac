// The CUDA engine: BF16 forward passes on one GPU of any model the registry describes,
// CheckBackend(kCuda) accepts and whose every op the CUDA kernels run (backends/cuda/
// op_support.h; docs/models.md's table lists the families), behind the same Engine interface as
// the CPU engine. The family (src/families) is the same code the CPU runs; it runs here on the
// CUDA backend (src/backends/cuda/cuda_backend.h).
//
// - Weights are uploaded once, converted to bf16 (from fp32/bf16/fp16 safetensors); norm
//   parameters stay fp32.
// - One device arena holds every activation buffer the family declares and the backend's
//   scratch, sized for the largest bucket (max_batch_tokens tokens, max_batch_sequences
//   sequences); one stream runs everything.
// - Batches are padded up to buckets: tokens to a multiple of 64 (of 256 above
//   large_token_threshold), sequences to a power of two. Padding sequences have length zero;
//   padding tokens belong to no sequence, so attention and pooling never read them.
// - A chunk whose sequences all pool their CLS or last token is "pruned": the family runs its
//   last layer after attention on the pooled rows only.
// - When the backend runs attention on cuDNN (its plans are built for a longest-sequence
//   bound), each pass also has a length bucket: the chunk's longest sequence rounded up to a
//   power of two (at least 64, at most the token bucket), and graphs are kept per length
//   bucket too. /info and the log say which library runs attention and why
//   (ModelInfo::engine_facts "attention": CudaBackend::AttentionReport).
// - CUDA graphs per (token bucket, sequence bucket, pruned[, length bucket]): kOff runs every pass
// eagerly;
//   kLazy runs a bucket eagerly the first time (warm-up), captures it the second time and
//   replays it after; kEagerCaptureAll captures every bucket up to eager_capture_max_tokens
//   when the engine is made, with the pruning of the model's default pooling (the other
//   pruning is then captured lazily). The inputs live at fixed device addresses per bucket and
//   are refilled by one host-to-device copy before each pass.
// - Submit() validates the batch (RaggedBatch::Validate against the model's description, and
//   no sequence longer than the largest token bucket), enqueues the copy-in, the forward
//   pass(es) (a batch larger than the biggest bucket is split by sequences) and the copy-out
//   of the output rows (info().output_dim() floats per sequence: the pooled vector of an
//   embedder, the logits of a scorer) into a pooled pinned host buffer, records an event, and
//   returns (a batch split into more than 8 passes makes it wait for the GPU to catch up: the
//   pinned input ring has 8 slots). A completion thread waits on the events in order and
//   completes the LazyResults.
//
// Thread safety: Submit() and info() may be called from any thread (Submit serialises on a
// mutex; GPU work is ordered on the engine's stream, so batches complete in submission order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/engine.h"

namespace orchid::cuda {

enum class CudaGraphs : uint8_t { kOff, kLazy, kEagerCaptureAll };

struct CudaEngineOptions {
  CudaGraphs graphs = CudaGraphs::kLazy;
  int device = 0;
  int max_batch_tokens = 16384;         // largest token bucket; longer sequences are refused
  int max_batch_sequences = 256;        // largest sequence bucket (rounded up to a power of two)
  int large_token_threshold = 2048;     // token buckets: multiples of 64 up to here, 256 above
  int eager_capture_max_tokens = 2048;  // kEagerCaptureAll: buckets captured at start
};

// "off" | "lazy" | "eager-capture-all".
Result<CudaGraphs> ParseCudaGraphs(std::string_view name);
const char* CudaGraphsName(CudaGraphs g);

// True when a CUDA device can be used; otherwise false and *why says what failed (driver
// missing, no device, ...). Never throws or aborts.
bool CudaDeviceAvailable(std::string* why);

// Loads DIR (config.json, model.safetensors, sentence-transformers files) onto the GPU.
// Supported: what the registry (description/registry.h) describes and CheckBackend(kCuda)
// accepts (the pooling modes), whose every op the CUDA kernels run (op_support.h, asked while
// the family is loaded and planned: docs/models.md's table says which families that is);
// anything else is refused here, before any batch, with kUnimplemented naming the model, the
// op and what the kernels lack.
// kUnavailable when no CUDA device can be used.
Result<std::unique_ptr<Engine>> MakeCudaEngine(const std::string& model_dir,
                                               const CudaEngineOptions& options = {});

// Counters of a CUDA engine's forward passes (for benchmarks and tests).
struct CudaEngineStats {
  uint64_t eager_passes = 0;
  uint64_t graph_captures = 0;
  uint64_t graph_replays = 0;
  uint64_t graphs = 0;            // instantiated graphs held
  uint64_t capture_failures = 0;  // buckets whose capture failed (they run eagerly instead)
  // Attention launches (eager passes and graph captures; a replay launches none) on cuDNN and
  // on the own kernel, the calls routed to cuDNN that fell back to the own kernel (a shape
  // cuDNN refused), and cuDNN plans built.
  uint64_t attention_cudnn_calls = 0;
  uint64_t attention_own_calls = 0;
  uint64_t attention_cudnn_fallbacks = 0;
  uint64_t cudnn_plans = 0;
};
// The stats of an engine made by MakeCudaEngine; all zero for any other engine.
CudaEngineStats GetCudaEngineStats(const Engine& engine);

// --- bucketing and tiling (host-only, exposed for tests) ---------------------------------

// The token bucket for `tokens` (> 0): a multiple of 64 up to the threshold, of 256 above.
int TokenBucket(int tokens, int large_token_threshold);
// The sequence bucket for `seqs` (> 0): the next power of two.
int SequenceBucket(int seqs);
// The length bucket of a chunk whose longest sequence has max_len (> 0) tokens, in a token
// bucket: the next power of two >= max(max_len, 64), at most token_bucket (>= max_len).
int LengthBucket(int max_len, int token_bucket);
// Attention query tiles for a bucket: ceil(token_bucket / 64) + seq_bucket.
int AttentionTiles(int token_bucket, int seq_bucket);
// Fills tile_seq / tile_q0 [num_tiles] for sequences cu[0..num_seqs]: one entry per 64-row
// query tile of each non-empty sequence (tile_seq = sequence index, tile_q0 = first row within
// the sequence), the rest tile_seq = -1. Tiles of longer sequences come first (they carry the
// most work under causal attention). kInternal if num_tiles is too small.
Status BuildAttentionTiles(const int32_t* cu, int num_seqs, int num_tiles, int32_t* tile_seq,
                           int32_t* tile_q0);

}  // namespace orchid::cuda
