// CudaBackend: the op contract (ops/backend.h) on one GPU, with the kernels of ops.h /
// attention.cu and the cuBLASLt GEMMs of gemm.h. It knows ops and buffers, never a family.
//
// Weights (load time, cudaMemcpy from the host): linear weights as bf16 (a weight whose output
// width n is not a multiple of 8, e.g. a classifier head [num_labels, H], gets zero rows up to
// the next multiple of 8 for cuBLASLt's alignment; its GEMM writes that padded width into
// scratch and only the first n columns are copied out); biases twice, as bf16 and as fp32 (a
// few KB: cuBLASLt's bias has the GEMM output's type, and which type a layer writes is known
// only per op, from its output buffer); norm weights fp32, embedding tables bf16.
// LinearOptions::full_precision is ignored: every product multiplies bf16 operands with fp32
// accumulation; an fp32 (kAccumulator) output gets that fp32 accumulator plus the fp32 bias
// unrounded (below).
//
// Memory: after the family is loaded, Allocate() makes ONE device arena (zeroed, fixed
// addresses) holding every declared buffer sized for the largest bucket (kTokens: max_tokens
// rows; kPooled, kSequences: max_seqs rows; kActivation = bf16, kAccumulator = fp32) and the
// backend's scratch (below). Nothing is allocated afterwards, so every pass can be captured in
// a CUDA graph and replayed.
//
// Per pass: Begin(inputs, tb, sb, prune) names the device input block of the bucket (token ids,
// types, positions, cu_seqlens, attention tiles, pooling modes and normalise flags) and the
// bucket: every op then runs on tb rows (kTokens) or sb rows (kPooled, kSequences), its grid
// computed from those sizes only; batch data is read on the device, never on the host. Finish()
// after the family's Forward flushes any residual add still pending.
//
// Op mapping (the fusions of the hand-written engine this replaces):
//   Embed          position + type + LayerNorm into bf16 -> EmbedLayerNorm; word only into
//                  fp32 -> EmbedGather; other forms kUnimplemented.
//   Linear         LtGemm (bias epilogue when the weight has one); kGelu: exact-erf GELU kernel
//                  on the GEMM output; kResidualAdd: DEFERRED, the GEMM writes the scratch
//                  `delta` and the next Norm of that residual fuses the add (AddLayerNorm on a
//                  bf16 residual normalised in place, AddRmsNorm on an fp32 residual). Any other
//                  op touching that residual, a second residual add, or Finish() first flushes
//                  it with an element-wise add. The pending state is host-side and depends only
//                  on the op sequence, so it is the same in every replay of a graph.
//                  An fp32 input is converted into bf16 scratch first. An fp32 output (the
//                  heads: the scorer's logits, the classifier's hidden layer) is written by
//                  the GEMM in fp32 (fp32 bias epilogue; kGelu on the fp32 values), never
//                  rounded to bf16. A padded width goes through scratch (bf16, or fp32 for an
//                  fp32 output) and its first n columns are copied out.
//   Norm           LayerNorm bf16 -> bf16 (AddLayerNorm, x == nullptr when nothing is pending);
//                  RMSNorm fp32 residual -> bf16 (AddRmsNorm, delta == nullptr when nothing is
//                  pending).
//   QkNormRope     QkNormRope (positions from the input block).
//   Attention      RaggedFlashAttention (tiles from the input block, scale 1/sqrt(head_dim));
//                  into a kPooled buffer: full attention into scratch, then GatherPooledRows.
//   SwiGlu, Activate(kTanh), GatherPooled -> SwiGlu, Tanh, GatherPooledRows.
//   Pool           PoolNormalize over the batch's cu_seqlens (kTokens input) or over an
//                  identity cu_seqlens kept in the arena (kPooled input: each pooled row is its
//                  own one-row sequence); normalise flags from the batch, or all zero.
//
// Scratch: `delta` (pending residual adds), `attention` (the full attention output of a pruned
// last layer), `convert_in` (bf16 copies of fp32 GEMM inputs), `convert_out` (GEMM outputs of a
// padded width, bf16 or fp32; an fp32 value takes two bf16 elements). Their sizes come from
// Plan(): the family's Forward run once unpruned and once pruned with nothing launched,
// recording what each op needs; without Plan(), Allocate sizes them for the worst case over
// the declared buffers and weights.
//
// Profiling (OpProfiler below, off by default): per-op GPU times of eager passes.
//
// Thread safety: one pass at a time, from one thread (the engine's lock); the stream is the
// caller's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/gemm.h"
#include "backends/cuda/op_support.h"
#include "backends/cuda/ops.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ops/backend.h"

namespace orchid::cuda {

// OpProfiler: where a pass's GPU time goes, for bench/gpu/cuda_check.cpp's `bench --profile`
// (the device machine has no nsys/ncu). While one is installed (SetOpProfiler), each pass that
// CudaBackend::Begin() sees outside a stream capture records a pair of timing events around
// each group of launches of each op, under a label naming the op and what matters of its shape:
// "Linear n=3072 k=768 gelu: gemm" and, separately, "...: gelu" (the exact-GELU kernel after
// the GEMM), "...: f32->bf16" (an fp32 input converted first), "...: copy cols" (a padded
// width); "Norm LayerNorm +res" (a norm that fuses the deferred residual add),
// "ResidualAdd (flush)" (one it could not fuse), "Attention h=16 kv=8 d=128 causal", "Embed
// LayerNorm", ... Collect() waits for the recorded events and adds their elapsed times into the
// per-label totals. A pass under a stream capture (CUDA graphs) records nothing and is counted
// in skipped_passes(): a replayed graph runs no backend code, so profile with graphs off.
// Uninstalled (the default) it costs one pointer test per op and records no event; installed,
// the events change no result (they only add timestamps to the stream). An op's time includes
// the host's launch gap when the GPU waits for the host (launch-bound passes: batch-1 latency
// at short lengths); in throughput passes the queue is full and it is the kernels' time.
// Thread safety: all members lock; install or uninstall between passes only.
class OpProfiler {
 public:
  struct Entry {
    std::string label;
    int64_t calls = 0;  // timed launch groups
    double ms = 0;      // summed GPU time (after Collect)
    double flops = 0;   // Linear GEMMs: 2 m n k summed over the calls (m: the bucket's rows)
    // Attention: 4 head_dim num_heads (halved when causal) summed over the calls; times the sum
    // of len^2 over a pass's sequences, divided by passes(), it is the attention FLOPs.
    double attn_flops_per_len2 = 0;
  };

  OpProfiler() = default;
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Waits for every recorded event pair, adds the elapsed times into the totals, and keeps
  // the events for reuse. A failed record or timing since the last Collect is reported here.
  Status Collect();
  // Drops the totals and the pass counters (after waiting for the events recorded so far).
  void Reset();
  // The totals, one entry per label in the order first seen.
  std::vector<Entry> entries() const;
  int64_t passes() const;          // passes recorded
  int64_t skipped_passes() const;  // passes under a stream capture (nothing recorded)

 private:
  friend class CudaBackend;
  struct Record {
    size_t entry;
    cudaEvent_t start, stop;
  };
  void BeginPass(bool capturing);
  // Start() before a group of launches, Stop() after it: one Record.
  void Start(cudaStream_t stream);
  void Stop(cudaStream_t stream, const std::string& label, double flops, double attn);
  cudaEvent_t TakeEvent();  // (mu_ held)
  void WaitRecords();       // (mu_ held) elapsed times into the entries, events back to free_

  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;           // label -> entries_ index
  std::vector<Record> records_;                   // recorded, not yet collected
  std::vector<cudaEvent_t> free_;                 // timing events for reuse
  cudaEvent_t start_ = nullptr, stop_ = nullptr;  // the open group's pair (Start .. Stop)
  int64_t passes_ = 0, skipped_ = 0;
  cudaError_t error_ = cudaSuccess;  // the first failure since the last Collect
};

// Installs `p` for the passes that begin from now on, process-wide (nullptr: profiling off).
// The caller keeps `p` alive until it uninstalls it and the last profiled pass has been
// collected.
void SetOpProfiler(OpProfiler* p);

class CudaBackend final : public ops::Backend {
 public:
  // Device pointers of the current bucket's input block (cuda_engine.cpp has its layout).
  struct Inputs {
    const int32_t* ids = nullptr;        // [tb]
    const int32_t* types = nullptr;      // [tb]
    const int32_t* positions = nullptr;  // [tb]
    const int32_t* cu = nullptr;         // [sb + 1]; padding sequences are empty
    const int32_t* tile_seq = nullptr;   // [num_tiles] (RaggedFlashAttention)
    const int32_t* tile_q0 = nullptr;    // [num_tiles]
    int num_tiles = 0;
    const uint8_t* mode = nullptr;  // [sb] orchid::Pooling values; 0 for padding
    const uint8_t* norm = nullptr;  // [sb] 1 = L2-normalise
  };

  // Work is enqueued on `stream` (the caller's; it must outlive the backend's use of it).
  explicit CudaBackend(cudaStream_t stream) : stream_(stream) {}
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  const char* name() const override { return "cuda"; }
  // What the kernels accept: op_support.h's Supports(), asked before every op (so a model the
  // kernels cannot run is refused while it is loaded and planned).
  Status Supports(const ops::OpCall& call) const override { return cuda::Supports(call); }

  // Creates the cuBLASLt handle and workspace on the current device. Before any weight.
  Status Init();

  // Optional, after the family is loaded and before Allocate: runs `forward` (the family's
  // Forward on this backend) unpruned and pruned without launching anything, to size the
  // scratch exactly and to refuse an op form this backend lacks at load time.
  Status Plan(const std::function<Status()>& forward);

  // The arena for buckets up to max_tokens token rows and max_seqs sequence rows. Once.
  Status Allocate(int max_tokens, int max_seqs);

  // The next pass: inputs of bucket (tb, sb), tb <= max_tokens, sb <= max_seqs; `prune`: every
  // sequence pools its CLS or last token (the family may prune its last layer).
  void Begin(const Inputs& device_inputs, int tb, int sb, bool prune);
  // After the family's Forward: flushes a residual add still pending.
  Status Finish();
  bool prune_last_layer() const override { return prune_; }

  // A buffer's device memory (its rows for the current bucket come first): bf16 for
  // kActivation, fp32 for kAccumulator buffers. Null before Allocate.
  void* device(ops::Buffer b) const {
    return b.valid() && size_t(b.id) < buffers_.size() ? buffers_[size_t(b.id)] : nullptr;
  }
  float* device_f32(ops::Buffer b) const { return static_cast<float*>(device(b)); }
  size_t arena_bytes() const { return arena_bytes_; }

 protected:
  Result<int> DoAddLinear(const Tensor& w, const Tensor* bias, ops::LinearOptions o) override;
  Result<int> DoAddNorm(ops::NormKind kind, const Tensor& weight, const Tensor* bias,
                        float eps) override;
  Result<int> DoAddTable(Tensor t) override;

  Status DoEmbed(const ops::EmbedOp& op, ops::Buffer out) override;
  Status DoLinear(ops::Buffer in, ops::LinearWeight w, ops::Buffer out, ops::Epilogue e) override;
  Status DoNorm(ops::Buffer in, ops::NormWeight w, ops::Buffer out) override;
  Status DoQkNormRope(ops::Buffer qkv, const ops::RopeOptions& o) override;
  Status DoAttention(ops::Buffer qkv, ops::Buffer out, const ops::AttentionOptions& o) override;
  Status DoGlu(ops::Buffer gate_up, ops::Buffer out, ops::Gate gate) override;
  Status DoAdd(ops::Buffer in, ops::Buffer out) override;
  Status DoActivate(ops::Buffer x, ops::Activation a) override;
  Status DoGatherPooled(ops::Buffer tokens, ops::Buffer pooled) override;
  Status DoPool(ops::Buffer hidden, ops::Buffer out, bool normalize) override;
  Status DoNormalize(ops::Buffer x) override;
  Status DoVocabMaxPool(ops::Buffer hidden, ops::LinearWeight w, ops::Buffer out) override;
  // Task adapters (LoRA): refused by Supports() (op_support.h), so never reached.
  Result<int> DoAddLora(const std::vector<ops::LoraPart>& parts, int n, int k,
                        ops::LoraInput input) override;
  Status DoLoraAdd(ops::Buffer in, ops::LoraWeight w, ops::Buffer out) override;

 private:
  struct LinearLayer {
    bf16* w = nullptr;          // [n_pad, k]
    bf16* bias = nullptr;       // [n_pad] or null: for bf16 outputs
    float* bias_f32 = nullptr;  // [n_pad] or null (with bias): for fp32 outputs
    int n = 0, n_pad = 0, k = 0;
  };
  struct NormLayer {
    ops::NormKind kind = ops::NormKind::kLayerNorm;
    float* weight = nullptr;
    float* bias = nullptr;  // LayerNorm only
    float eps = 0;
  };
  // A residual add whose GEMM output waits in delta_ ([rows, width] bf16).
  struct Pending {
    ops::Buffer residual;
  };
  enum Scratch : int { kDelta, kAttention, kConvertIn, kConvertOut, kNumScratch };

  Result<void*> DeviceAlloc(size_t bytes);
  Result<bf16*> UploadBf16(const float* src, size_t n, size_t padded_n);
  Result<float*> UploadF32(const Tensor& t);
  Result<float*> UploadF32(const float* src, size_t n, size_t padded_n);

  bool is_bf16(ops::Buffer b) const { return decl(b).precision == ops::Precision::kActivation; }
  // A buffer's rows in the current pass (tb or sb).
  int rows(ops::Buffer b) const;
  bf16* bf(ops::Buffer b) const { return static_cast<bf16*>(device(b)); }
  float* f32(ops::Buffer b) const { return static_cast<float*>(device(b)); }
  // Records that scratch `s` must hold `width` bf16 columns of rows of `domain` (Plan), or
  // checks that it does (a pass). An fp32 column counts as two.
  Status NeedScratch(Scratch s, ops::Rows domain, int width);
  // Flushes the pending residual add if it targets `b`.
  Status Touch(ops::Buffer b);
  // Flushes the pending residual add, whatever it targets (an element-wise add).
  Status Flush();
  // Profiling: ProfStart() before an op's group of launches, ProfStop(label) after it; no-ops
  // (a pointer test, the label never built) unless this pass is profiled.
  void ProfStart() {
    if (prof_ != nullptr) prof_->Start(stream_);
  }
  template <typename Label>
  void ProfStop(const Label& label, double flops = 0, double attn = 0) {
    if (prof_ != nullptr) prof_->Stop(stream_, label(), flops, attn);
  }

  cudaStream_t stream_;
  LtGemm gemm_;
  std::vector<void*> allocations_;
  std::vector<LinearLayer> linears_;
  std::vector<NormLayer> norms_;
  std::vector<bf16*> tables_;

  // Arena (after Allocate).
  bool allocated_ = false;
  int max_tokens_ = 0, max_seqs_ = 0;
  size_t arena_bytes_ = 0;
  std::vector<void*> buffers_;  // by buffer id
  bf16* scratch_[kNumScratch] = {};
  size_t scratch_elems_[kNumScratch] = {};  // capacity in bf16 elements
  int32_t* identity_cu_ = nullptr;          // [max_seqs + 1]: 0, 1, 2, ...
  uint8_t* zero_flags_ = nullptr;           // [max_seqs]: all 0

  // Plan (before Allocate): the widest need per scratch and row domain.
  bool planning_ = false;
  bool planned_ = false;
  int plan_width_[kNumScratch][3] = {};

  // The current pass.
  Inputs in_;
  int tb_ = 0, sb_ = 0;
  bool prune_ = false;
  std::optional<Pending> pending_;
  OpProfiler* prof_ = nullptr;  // the installed profiler for this pass, or null (Begin)
};

}  // namespace orchid::cuda
