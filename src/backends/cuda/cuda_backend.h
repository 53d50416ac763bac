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
// Memory: weights are uploaded by DeviceMemory (device_memory.h); after the family is loaded,
// Allocate() makes ONE device arena (ActivationArena, activation_arena.h: zeroed, fixed
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
//                  on the GEMM output, or with ORCHID_CUDA_GELU=cublaslt cuBLASLt's fused
//                  bias + GELU epilogue (the tanh approximation: GeluEpilogueMode()); kResidualAdd:
//                  DEFERRED, the GEMM writes the scratch `delta` and the next Norm of that residual
//                  fuses the add (AddLayerNorm on a bf16 residual normalised in place, AddRmsNorm
//                  on an fp32 residual). Any other op touching that residual, a second residual
//                  add, or Finish() first flushes it with an element-wise add. The pending state is
//                  host-side and depends only on the op sequence, so it is the same in every replay
//                  of a graph. An fp32 input is converted into bf16 scratch first. An fp32 output
//                  (the heads: the scorer's logits, the classifier's hidden layer) is written by
//                  the GEMM in fp32 (fp32 bias epilogue; kGelu on the fp32 values), never
//                  rounded to bf16. A padded width goes through scratch (bf16, or fp32 for an
//                  fp32 output) and its first n columns are copied out.
//   Norm           LayerNorm bf16 -> bf16 (AddLayerNorm, x == nullptr when nothing is pending);
//                  RMSNorm fp32 residual -> bf16 (AddRmsNorm, delta == nullptr when nothing is
//                  pending).
//   QkNormRope     QkNormRope (positions from the input block).
//   Attention      cuDNN's fused SDPA (CudnnAttention, cudnn_attention.h) when cuDNN is loaded
//                  and builds a plan for the layer's heads (decided once per head layout, at
//                  Plan() or the first call: AttentionReport() says which and why), on the
//                  ragged QKV rows with the pass's length bucket (Inputs::max_seq_len; its
//                  seq_len / offset index computed from cu_seqlens once per pass by
//                  RaggedAttentionIndex); else, and for any shape cuDNN refuses, the own
//                  RaggedFlashAttention (tiles from the input block). Scale 1/sqrt(head_dim).
//                  Into a kPooled buffer: full attention into scratch, then GatherPooledRows.
//                  ORCHID_CUDNN_ATTENTION=0 keeps every layer on the own kernel.
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
// Every kernel launch of every op goes through Launch(), which does what each launch needs
// once: nothing while planning, an error before Allocate, the profiler's timing events around
// it when this pass is profiled (OpProfiler, op_profiler.h, off by default: per-op GPU times
// of eager passes).
//
// Thread safety: one pass at a time, from one thread (the engine's lock); the stream is the
// caller's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backends/cuda/activation_arena.h"
#include "backends/cuda/cudnn_attention.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/op_profiler.h"
#include "backends/cuda/op_support.h"
#include "backends/cuda/ops.h"
#include "core/status.h"
#include "core/tensor.h"
#include "ops/backend.h"

namespace orchid::cuda {

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
    // The pass's length bucket: no sequence is longer (cuDNN's attention plans are built for
    // it, so it is part of the engine's graph key when length_bucketed()). 0: the token bucket.
    int max_seq_len = 0;
  };
  // How exact GELU (Epilogue::kGelu) is applied after a GEMM: a separate exact-erf pass (the
  // default), or cuBLASLt's fused bias + GELU epilogue (tanh approximation; ORCHID_CUDA_GELU=
  // cublaslt, read once), kept only if the device check shows it pays and fidelity holds.
  enum class GeluEpilogue : uint8_t { kSeparateErf, kCublasLtTanh };
  static GeluEpilogue GeluEpilogueMode();

  // Work is enqueued on `stream` (the caller's; it must outlive the backend's use of it).
  explicit CudaBackend(cudaStream_t stream) : stream_(stream) {}
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  const char* name() const override { return "cuda"; }
  // What the kernels accept: op_support.h's Supports(), asked before every op (so a model the
  // kernels cannot run is refused while it is loaded and planned).
  Status Supports(const ops::OpCall& call) const override { return cuda::Supports(call); }

  // Creates the cuBLASLt handle and workspace on the current device, and cuDNN's handle when
  // cuDNN loads (cudnn_attention.h; without it attention runs on the own kernel). Before any
  // weight.
  Status Init();

  // Whether some attention layer runs on cuDNN, whose plans depend on the pass's length
  // bucket (Inputs::max_seq_len): the engine then keys its graphs by it too. Known after
  // Plan() (or the first pass).
  bool length_bucketed() const;
  // Which library runs the model's attention and why, for the log and /info, e.g. "cudnn:
  // cuDNN 9.19.0 (...), fused SDPA, ragged, 12 heads (12 kv) d=64" or "own kernel (pipelined):
  // cuDNN not loaded: ...". Empty before Plan() or the first pass.
  std::string AttentionReport() const;
  struct AttentionStats {
    uint64_t cudnn_calls = 0;      // attention launches on cuDNN (eager passes and captures)
    uint64_t own_calls = 0;        // on the own kernel
    uint64_t cudnn_fallbacks = 0;  // calls routed to cuDNN that a refused shape sent back
    size_t cudnn_plans = 0;
  };
  AttentionStats attention_stats() const;

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
  void* device(ops::Buffer b) const { return b.valid() ? arena_.buffer(b.id) : nullptr; }
  float* device_f32(ops::Buffer b) const { return static_cast<float*>(device(b)); }
  size_t arena_bytes() const { return arena_.bytes(); }

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
  // A residual add whose GEMM output waits in the delta scratch ([rows, width] bf16).
  struct Pending {
    ops::Buffer residual;
  };
  using Scratch = ActivationArena::Scratch;
  // Which library one head layout's attention runs on (decided once: Route()).
  struct AttentionRoute {
    bool cudnn = false;
    std::string why;  // the report's text
  };
  using RouteKey = std::tuple<int, int, int, bool, int, int>;  // heads, kv, d, causal, pitches
  const AttentionRoute& Route(const ops::AttentionOptions& o, int qkv_pitch, int out_pitch);
  // Attention on cuDNN into dst ([tb, out_pitch]); kUnimplemented when cuDNN refuses this
  // pass's shape (the caller falls back to the own kernel).
  Status CudnnAttentionPass(ops::Buffer qkv, const ops::AttentionOptions& o, int out_pitch,
                            float scale, bf16* dst);

  bool is_bf16(ops::Buffer b) const { return decl(b).precision == ops::Precision::kActivation; }
  // A buffer's rows in the current pass (tb or sb).
  int rows(ops::Buffer b) const;
  bf16* bf(ops::Buffer b) const { return static_cast<bf16*>(device(b)); }
  float* f32(ops::Buffer b) const { return static_cast<float*>(device(b)); }
  bf16* scratch(Scratch s) const { return arena_.scratch(s); }
  // Records that scratch `s` must hold `width` bf16 columns of rows of `domain` (Plan), or
  // checks that it does (a pass). An fp32 column counts as two.
  Status NeedScratch(Scratch s, ops::Rows domain, int width) {
    return arena_.NeedScratch(s, domain, width, tb_, sb_);
  }
  // Flushes the pending residual add if it targets `b`.
  Status Touch(ops::Buffer b);
  // Flushes the pending residual add, whatever it targets (an element-wise add).
  Status Flush();

  // Runs one group of an op's launches: `launch()` returns a Status (CudaStatus of the
  // launcher's error: ORCHID_CUDA_STATUS). Nothing while planning (Plan launches nothing);
  // Internal before Allocate; timed under `label` (a string, or a callable building it only
  // when the pass is profiled) with `flops` and `attn` (OpProfiler::Entry) when it is.
  template <typename Label, typename Fn>
  Status Launch(const Label& label, Fn&& launch, double flops = 0, double attn = 0) {
    if (arena_.planning()) return Status::Ok();
    if (!arena_.allocated()) return Status::Internal("cuda backend: an op before Allocate");
    if (prof_ != nullptr) prof_->Start(stream_);
    ORCHID_RETURN_IF_ERROR(launch());
    if (prof_ != nullptr) {
      if constexpr (std::is_invocable_v<const Label&>) {
        prof_->Stop(stream_, label(), flops, attn);
      } else {
        prof_->Stop(stream_, std::string(label), flops, attn);
      }
    }
    return Status::Ok();
  }

  cudaStream_t stream_;
  LtGemm gemm_;
  DeviceMemory memory_;  // weights and the arena (freed before gemm_ goes)
  std::vector<LinearLayer> linears_;
  std::vector<NormLayer> norms_;
  std::vector<bf16*> tables_;
  ActivationArena arena_;

  // The current pass.
  Inputs in_;
  int tb_ = 0, sb_ = 0;
  bool prune_ = false;
  std::optional<Pending> pending_;
  OpProfiler* prof_ = nullptr;  // the installed profiler for this pass, or null (Begin)

  // cuDNN attention: the handle (null: not loaded, or ORCHID_CUDNN_ATTENTION=0, reason in
  // cudnn_off_), the routes, the ragged index ([max_seqs] seq_len, [max_seqs + 1] offsets of
  // the QKV rows and of the output rows, in the arena's memory) and which pitches it holds in
  // this pass (-1: not computed yet; host-side, the same in every replay of a graph).
  std::unique_ptr<CudnnAttention> cudnn_;
  std::string cudnn_off_;
  std::map<RouteKey, AttentionRoute> routes_;
  int32_t* seq_len_ = nullptr;
  int32_t* qkv_offset_ = nullptr;
  int32_t* out_offset_ = nullptr;
  int index_qkv_pitch_ = -1, index_out_pitch_ = -1;
  AttentionStats attn_stats_;
  std::map<std::string, bool> logged_;  // refusals already logged
};

}  // namespace orchid::cuda
