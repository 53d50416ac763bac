// CudnnAttention: the CUDA backend's attention op on cuDNN's fused scaled-dot-product attention
// (flash attention on Hopper's tensor cores), through the header-only cudnn-frontend graph API.
// Only the backend's attention op uses it (cuda_backend.cpp); families never see it.
//
// The library is loaded at run time, never linked: the frontend is compiled with
// NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING and resolves every cuDNN call through the dlopen
// handle set here, so a binary built with cuDNN's headers starts and serves on a machine
// without libcudnn (attention then runs on the own kernel, attention.cu). Which file is
// loaded, first that opens:
//   1. $ORCHID_CUDNN_LIBRARY (a path to libcudnn.so.9; "off" or "0": cuDNN is not used);
//   2. the libcudnn.so.9 CMake found at configure time (ORCHID_CUDNN_ROOT, the CUDA toolkit:
//      on the GPU machine, the one in PyTorch's nvidia/cudnn wheel);
//   3. "libcudnn.so.9" through the loader's search path (LD_LIBRARY_PATH, ldconfig).
// cuDNN 9.x is required (the headers compiled against are 9.x; the backend API is stable
// within a major version). Built without the frontend's headers (ORCHID_HAVE_CUDNN unset at
// configure time), Cudnn() reports why and nothing here is ever used.
//
// Layout (THD, nothing padded): the op contract's fused QKV rows, [T, (hq + 2 hkv) d] bf16, are
// given to cuDNN as three ragged tensors Q [b, hq, s, d], K and V [b, hkv, s, d] with the row
// pitch as the sequence stride and per-sequence element offsets (cu_seqlens * pitch), and the
// output [T, hq d] likewise; a padding mask with per-sequence lengths (the same for queries
// and keys) bounds each sequence. b is the engine's sequence bucket (its padding sequences
// have length zero), s the pass's length bucket (no sequence is longer). Causal attention is
// cuDNN's top-left diagonal band with right bound 0, per sequence. Grouped-query heads are
// cuDNN's (hq a multiple of hkv).
//
// Plans: one per CudnnAttentionShape (b, s, heads, head_dim, causal, scale, pitches), built
// lazily on first use (heuristics mode A, then the fallback list) with its own workspace,
// cached for the life of the object. Building is refused while the stream is being captured
// (cudaStreamIsCapturing): the engine runs each bucket eagerly before capturing it, so the
// plan exists by then and its execution is captured into the bucket's CUDA graph like any
// kernel. A shape whose plan cannot be built is remembered with the frontend's reason, and
// the caller falls back to the own kernel for it.
//
// Thread safety: Cudnn() is thread-safe (loads once). A CudnnAttention is used by one thread
// at a time (the backend's, under the engine's lock); its handle runs on the stream given at
// creation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "backends/cuda/ops.h"
#include "core/status.h"

namespace orchid::cuda {

// What cuDNN is in this process: loaded or not, and why (for the log and /info).
struct CudnnLibraryInfo {
  bool compiled = false;         // built with the cudnn-frontend headers
  bool loaded = false;           // libcudnn opened and its version accepted
  std::string path;              // the file opened (or tried last)
  std::string hint;              // the libcudnn CMake found at configure time (empty: none)
  int64_t version = 0;           // cudnnGetVersion(), e.g. 91900 for 9.19.0
  std::string frontend;          // the cudnn-frontend version compiled in, e.g. "1.32.0"
  std::string error;             // why not loaded (empty when loaded)
  std::string Describe() const;  // e.g. "cuDNN 9.19.0 (/usr/.../libcudnn.so.9), frontend 1.32.0"
};
// Loads cuDNN on the first call (see above); later calls return the same answer.
const CudnnLibraryInfo& Cudnn();

struct CudnnAttentionShape {
  int batch = 0;        // sequences (the sequence bucket; padding sequences have length 0)
  int max_seq_len = 0;  // the length bucket: no sequence of the pass is longer
  int num_q = 0, num_kv = 0, head_dim = 0;
  bool causal = false;
  float scale = 0.f;
  int64_t qkv_pitch = 0;  // elements from one token's QKV row to the next
  int64_t out_pitch = 0;  // elements from one token's output row to the next
  auto Key() const {
    return std::make_tuple(batch, max_seq_len, num_q, num_kv, head_dim, causal, scale, qkv_pitch,
                           out_pitch);
  }
  std::string Describe() const;
};

class CudnnAttention {
 public:
  // A cuDNN handle on `stream` (the backend's). kUnavailable (with Cudnn().error) when cuDNN
  // cannot be used; kInternal if the handle cannot be made.
  static Result<std::unique_ptr<CudnnAttention>> Create(cudaStream_t stream);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Builds (or finds) the plan for `shape`: Ok, or kUnimplemented with the frontend's reason
  // (an unsupported head dimension, version or layout), remembered for the shape. Refused
  // (kFailedPrecondition) while `stream` is being captured and the plan is not built yet.
  Status Prepare(const CudnnAttentionShape& shape);

  // Enqueues attention for `shape` (Prepare()d, or prepared here when not capturing):
  //   qkv [T, qkv_pitch] bf16 rows [Q | K | V]; out [T, out_pitch] bf16 (only the rows of the
  //   sequences are written); seq_len [batch] int32; qkv_offset and out_offset [batch + 1]
  //   int32 element offsets of each sequence's first row (cu_seqlens times the pitch:
  //   RaggedAttentionIndex, ops.h). Every pointer is a device pointer at a fixed address per
  //   bucket, so a captured graph replays with new contents.
  Status Run(const CudnnAttentionShape& shape, const bf16* qkv, const int32_t* seq_len,
             const int32_t* qkv_offset, const int32_t* out_offset, bf16* out);

  size_t plans() const;     // built plans
  size_t refusals() const;  // shapes cuDNN refused

 private:
  struct Plan;
  explicit CudnnAttention(cudaStream_t stream) : stream_(stream) {}
  Status Build(const CudnnAttentionShape& shape, std::unique_ptr<Plan>* plan);

  cudaStream_t stream_;
  void* handle_ = nullptr;                                                        // cudnnHandle_t
  std::map<decltype(CudnnAttentionShape{}.Key()), std::shared_ptr<Plan>> plans_;  // (Plan: .cpp)
  std::map<decltype(CudnnAttentionShape{}.Key()), Status> refused_;
};

}  // namespace orchid::cuda
