// CpuBackend: the op contract (ops/backend.h) on the CPU kernels of this folder.
//
// Weights: linear layers packed once for the chosen WeightType (linear.h; heads asked for at
// full precision stay fp32 under kBfloat16), norms and tables as fp32 tensors. Activations are
// fp32 buffers that grow to the largest batch seen and are reused. Ops run at once on the
// calling thread and the pool (SetThreadPool). The fusions: a residual add is the GEMM's
// accumulate epilogue, exact GELU the GEMM's GELU epilogue; a pruned last layer computes only
// the pooled query rows in attention (PooledRows, pooling.h).
//
// Per batch: Begin(batch) sizes the buffers for its tokens, pooled rows and sequences and
// decides whether the last layer is pruned (pooling reads fewer rows than all the tokens).
// Thread safety: one batch at a time, from one thread.
//
// kInt8 loads in two steps. Until FinishInt8(), every layer keeps its fp32 weights and runs in
// fp32 (a model so loaded computes the fp32 reference), and each layer that will be int8
// records the largest magnitude of every input channel over the batches it runs (the
// calibration). FinishInt8() then quantizes every linear layer but the heads (int8_linear.h):
// SmoothQuant factors c = amax_x^alpha / amax_w^(1 - alpha) per input channel, and the
// channels whose smoothed inputs still reach furthest (1% of them; 0.5% for the FFN output
// projection, LinearOptions::outlier_input) multiplied in fp32 beside the int8 product.
#pragma once

#include <vector>

#include "backends/cpu/linear.h"
#include "backends/cpu/lora.h"
#include "backends/cpu/thread_pool.h"
#include "core/tensor.h"
#include "engine/ragged_batch.h"
#include "ops/backend.h"

namespace orchid {

class CpuBackend final : public ops::Backend {
 public:
  explicit CpuBackend(WeightType linear_weights)
      : linear_weights_(linear_weights), calibrating_(linear_weights == WeightType::kInt8) {}
  const char* name() const override { return "cpu"; }

  void SetThreadPool(ThreadPool* pool) { pool_ = pool; }
  // The batch the next ops run on; it must stay alive and unchanged until the pass is over.
  // allow_prune = false computes every row of the last layer (per-token output).
  void Begin(const RaggedBatch& batch, bool allow_prune = true);
  bool prune_last_layer() const override { return prune_; }
  bool image_batch() const override { return batch_ != nullptr && batch_->image_batch(); }
  // A buffer's rows for the current batch.
  const float* data(ops::Buffer b) const { return buffers_[size_t(b.id)].data(); }

  // kInt8: the batches run from now on (still in fp32) no longer count towards the calibration
  // (the fidelity gate's float32 reference: its texts must not tune the quantization).
  void StopRecording() { recording_ = false; }
  // kInt8: quantizes the layers (above), with smoothing factors
  // c[k] = amax_x[k]^alpha / amax_w[k]^(1 - alpha) from the calibration (1 for a channel that
  // stayed zero; without calibration batches none, and no outlier channels either). After it
  // the model runs in int8. column_slices: Int8Weight::Quantize's (the engine's thread count).
  void FinishInt8(float alpha = 0.5f, int column_slices = 1);
  // Bytes the layers hold for the int8 calibration (the input ranges; the fp32 weights are
  // only the packed ones the calibration runs on): 0 after FinishInt8.
  size_t CalibrationBytes() const;
  // kInt8 before FinishInt8: every int8 layer's recorded input ranges (amax_x above), in the
  // order the layers were added, to keep between runs (runtime/int8_cache.h)...
  std::vector<std::vector<float>> Int8InputRanges() const;
  // ...and to put back instead of recording them: one vector per int8 layer, as wide as its
  // input, every value finite and >= 0; otherwise an error and nothing changes.
  Status SetInt8InputRanges(const std::vector<std::vector<float>>& ranges);

 protected:
  Result<int> DoAddLinear(const Tensor& w, const Tensor* bias, ops::LinearOptions o) override;
  Result<int> DoAddNorm(ops::NormKind kind, const Tensor& weight, const Tensor* bias,
                        float eps) override;
  Result<int> DoAddTable(Tensor t) override;
  void DoAddBuffer(const ops::BufferDecl& d) override;

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
  Result<int> DoAddLora(const std::vector<ops::LoraPart>& parts, int n, int k,
                        ops::LoraInput input) override;
  Status DoLoraAdd(ops::Buffer in, ops::LoraWeight w, ops::Buffer out) override;
  Status DoPixels(ops::Buffer out) override;

 private:
  struct LinearLayer {
    PackedWeight weight;
    Tensor bias;  // empty: none
    bool has_bias = false;
    // kInt8 while calibrating: the type the layer becomes, whether its input is the FFN's
    // activation (LinearOptions::outlier_input), and the largest |x| seen per input channel
    // (int8 layers only).
    WeightType final_type = WeightType::kFloat32;
    bool outlier_input = false;
    std::vector<float> input_amax;
  };
  struct NormLayer {
    ops::NormKind kind = ops::NormKind::kLayerNorm;
    Tensor weight, bias;
    float eps = 0;
  };

  int rows(ops::Buffer b) const;
  float* mut(ops::Buffer b) { return buffers_[size_t(b.id)].data(); }

  WeightType linear_weights_;
  bool calibrating_ = false;  // kInt8 until FinishInt8
  bool recording_ = true;     // calibrating_: DoLinear records input ranges
  ThreadPool* pool_ = nullptr;
  std::vector<LinearLayer> linears_;
  std::vector<NormLayer> norms_;
  std::vector<Tensor> tables_;
  std::vector<LoraDelta> loras_;
  std::vector<Buffer<float>> buffers_;

  // The current batch.
  const RaggedBatch* batch_ = nullptr;
  bool prune_ = false;
  std::vector<int32_t> query_rows_;   // [2 S]: each sequence's pooled query rows (PooledRows)
  std::vector<int32_t> pooled_rows_;  // the token index of each pooled row
  std::vector<int32_t> pooled_cu_;    // [S + 1]: each sequence's pooled rows
  std::vector<int32_t> shifted_positions_;
  // With task adapters in the batch: the sequence of each token and of each pooled row.
  std::vector<int32_t> seq_of_token_, seq_of_pooled_;
  std::vector<int32_t> zero_types_;  // a batch without token types: all type 0
  Buffer<float> scores_, full_context_, relative_bias_, vocab_scratch_;
  std::vector<int32_t> relative_index_;  // DeBERTa: the table row of each distance, per batch
  std::vector<float> rope_inv_freq_;     // QkNormRope's frequencies, per call (or sequence)
};

}  // namespace orchid
