// The op contract: what a model family (src/families/) is written against and what every
// backend (src/backends/cpu, src/backends/cuda, the tests' recording backend) implements.
// A family declares its weights and activation buffers once at load time and then, per batch,
// calls the ops below in order; it never sees the batch's data (ids, lengths, pooling modes):
// those live in the backend (host memory on the CPU, a device input block on CUDA). That is
// what lets a CUDA graph wrap a family's whole forward pass: the op sequence and every buffer
// extent depend only on the bucket (token rows, sequence rows, whether the last layer is
// pruned), never on a host read of the batch.
//
// Buffers: each has a row domain and a width. Every op works on all rows of its buffers'
// domain: the CPU uses the batch's exact counts, CUDA the bucket's (padding rows belong to no
// sequence and are never read by attention or pooling).
// Precision: kActivation is the backend's compute type (fp32 on the CPU, bf16 on CUDA);
// kAccumulator is fp32 everywhere (a pre-norm decoder's residual stream, pooled vectors,
// logits).
//
// Shapes are checked here, once for all backends (the public ops validate and then call the
// backend's Do* implementation); a mismatch is kInternal naming the op and the buffers, a
// family bug, never a user error.
//
// Thread safety: a backend runs one forward pass at a time, from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "ops/rope.h"

namespace orchid::ops {

enum class Rows : uint8_t {
  kTokens,     // one row per token of the batch
  kPooled,     // one row per token that pooling reads (a pruned last layer; see prune_last_layer)
  kSequences,  // one row per sequence (pooled vectors, logits)
};
const char* RowsName(Rows r);

enum class Precision : uint8_t { kActivation, kAccumulator };

struct Buffer {
  int id = -1;
  bool valid() const { return id >= 0; }
};
struct BufferDecl {
  std::string name;
  Rows rows = Rows::kTokens;
  int width = 0;
  Precision precision = Precision::kActivation;
};

// y = x W^T (+ b), W an nn.Linear weight [n, k].
struct LinearWeight {
  int id = -1;
  int n = 0, k = 0;
};
enum class NormKind : uint8_t { kLayerNorm, kRmsNorm };
struct NormWeight {
  int id = -1;  // < 0: none (optional norms)
  int width = 0;
  NormKind kind = NormKind::kLayerNorm;  // as added (AddNorm)
  float eps = 0.0f;
  bool valid() const { return id >= 0; }
};
struct Table {
  int id = -1;  // < 0: none (optional tables)
  int rows = 0, width = 0;
  bool valid() const { return id >= 0; }
};

// Low-rank (LoRA) deltas of one linear layer or one embedding table, one set per task adapter
// of the model (jina-embeddings-v3's retrieval.query, retrieval.passage, ...). Each part adds
// scale * B A to rows [row_offset, row_offset + B's rows) of the layer's [n, k] weight for the
// sequences whose adapter it is: a fused QKV layer has a part per projection. A is [r, k], B is
// [rows, r] (PEFT's lora_A / lora_B weights; for a table, PEFT's lora_embedding_A [r, vocab]
// and lora_embedding_B [width, r], k = the table's rows).
struct LoraPart {
  int adapter = 0;  // 1-based: RaggedBatch::adapters' numbering
  int row_offset = 0;
  float scale = 1.0f;
  const Tensor* a = nullptr;  // [r, k]
  const Tensor* b = nullptr;  // [rows, r]
};
// What a LoRA delta's input is: a layer's input rows, or an embedding table's rows picked by
// the batch's token ids or token type ids.
enum class LoraInput : uint8_t { kRows, kTokenIds, kTypeIds };
struct LoraWeight {
  int id = -1;  // < 0: none (a layer no adapter touches)
  int n = 0, k = 0;
  LoraInput input = LoraInput::kRows;
  bool table() const { return input != LoraInput::kRows; }
  bool valid() const { return id >= 0; }
};

struct LinearOptions {
  // Classifier heads: kept at full precision where the backend would otherwise reduce it (the
  // CPU's bfloat16 and int8 weights). CUDA runs every product in bf16.
  bool full_precision = false;
  // The FFN's output projection, whose input (after the activation) has the few large channels
  // that per-token int8 quantization spoils: a backend quantizing activations treats it with
  // more care (the CPU's int8 mode sizes its fp32 outlier channels for it: cpu_backend.h).
  bool outlier_input = false;
};

enum class Epilogue : uint8_t {
  kNone,         // out = in W^T + b
  kGelu,         // out = gelu(in W^T + b), exact GELU: x/2 (1 + erf(x / sqrt 2))
  kResidualAdd,  // out += in W^T + b (out is a residual stream; backends may fuse the add
                 // into the GEMM or into the norm that follows)
};
enum class Activation : uint8_t {
  kTanh,
  kRelu,
  kGelu /* exact */,
  kLog1pRelu /* log(1 + max(x, 0)) */,
  kQuickGelu /* x sigmoid(1.702 x): CLIP's quick_gelu */,
  kGeluTanh /* GELU's tanh approximation: gelu_pytorch_tanh / gelu_new (SigLIP) */,
};
// The gate of a gated MLP: silu (SwiGLU: Llama, Qwen), GELU's tanh approximation (GeGLU:
// Gemma's gelu_pytorch_tanh) or exact GELU (GeGLU: ModernBERT).
enum class Gate : uint8_t { kSilu, kGeluTanh, kGelu };

// out[t] = norm(word[id] + position[pos + position_offset] + type[type_id]): the batch's token
// ids, positions and token types. position, type and norm are optional.
struct EmbedOp {
  Table word;
  Table position;
  int position_offset = 0;
  Table type;
  NormWeight norm;
};

struct AttentionOptions {
  int num_heads = 0;     // query heads
  int num_kv_heads = 0;  // key/value heads; divides num_heads
  int head_dim = 0;
  bool causal = false;  // token i attends to tokens 0..i of its sequence
  // MPNet: a learned bias added to every scaled score of head h, by the bucket of the relative
  // position j - i (key j, query i; RelativePositionBucket): relative_bias[bucket][h]. Shared by
  // all layers. Invalid: none.
  Table relative_bias;  // [rows >= relative_num_buckets, num_heads]
  // The buckets positions are sorted into. transformers' MPNet always uses 32 (its
  // relative_position_bucket default), whatever relative_attention_num_buckets sizes the table to.
  int relative_num_buckets = 32;
  int relative_max_distance = 128;
  // DeBERTa-v2 disentangled attention: the relative-position keys and queries of this layer
  // (its Wk / Wq applied to the shared relative embeddings, times the score scale), each
  // [2 span, num_heads * head_dim] or invalid. Query i and key j of head h add
  //   pos_key[r]_h . q_i (content to position) + pos_query[r]_h . k_j (position to content),
  //   r = DebertaRelativeIndex(i - j, span, position_buckets, max_relative_positions).
  Table pos_key, pos_query;
  int position_buckets = 0;        // > 0: log-bucketed distances (DeBERTa-v3); else exact
  int max_relative_positions = 0;  // the log buckets' range
  float scale = 0.0f;  // the scores' scale; 0: 1 / sqrt(head_dim) (Gemma: query_pre_attn_scalar)
  // > 0: a sliding window (Gemma's local layers). Query i sees keys j with |i - j| < window
  // (bidirectional) or 0 <= i - j < window (causal).
  int window = 0;
};

// T5 / MPNet's bidirectional relative-position bucket of `relative` = key position - query
// position: half the buckets for each direction, the first half of those exact distances, the
// rest logarithmic up to max_distance (computed in fp32 as transformers does, so that the
// boundaries fall where the reference puts them).
int RelativePositionBucket(int relative, int num_buckets, int max_distance);

// DeBERTa-v2's relative position index of query i and key j (relative = i - j): transformers'
// make_log_bucket_position (when position_buckets > 0, in fp32 as it computes it) shifted by
// span and clamped to [0, 2 span).
int DebertaRelativeIndex(int relative, int span, int position_buckets, int max_relative_positions);

// Per-head RMSNorm of q and k (when the weights are given) then rotary embedding (neox layout,
// angle = position * inv_freq[i], inv_freq = RopeInverseFrequencies of theta and scaling; cos
// and sin times its attention scaling) on the fused [Q | K | V] rows of qkv; V untouched.
struct RopeOptions {
  int num_heads = 0, num_kv_heads = 0, head_dim = 0;
  double theta = 10000.0;
  // Every inverse frequency 1 / theta^(2i/d) is divided by this (NTK-scaled GTE); 1 otherwise.
  double inv_freq_divisor = 1.0;
  // transformers' scaled rotary types (linear, dynamic, llama3, yarn); kDynamic's frequencies
  // depend on each sequence's length.
  RopeScaling scaling;
  NormWeight q_norm, k_norm;  // RMSNorm over head_dim; both or neither
};

// The op contract's calls, as OpCall names them (the load-time weight additions too).
enum class OpKind : uint8_t {
  kAddLinear,
  kAddNorm,
  kEmbed,
  kLinear,
  kNorm,
  kQkNormRope,
  kAttention,
  kGlu,
  kAdd,
  kActivate,
  kGatherPooled,
  kPool,
  kVocabMaxPool,
  kNormalize,
  kAddLora,
  kLoraAdd,
  kPixels,
};
const char* OpKindName(OpKind k);

// One call of the op contract with everything that decides whether a backend can run it: the
// op, its buffers' declarations (in argument order), its options and the load-time facts of the
// weights it names (a linear layer's shape, a norm's kind and epsilon). Built by Backend for
// every call and handed to Supports() before the backend's Do*: a description only, pointing
// at the caller's arguments (valid during the call).
struct OpCall {
  OpKind kind = OpKind::kLinear;
  const BufferDecl* buffers[2] = {nullptr, nullptr};  // in argument order; unused: null
  LinearWeight linear;                                // kAddLinear, kLinear, kVocabMaxPool
  NormWeight norm;                                    // kAddNorm, kNorm
  Epilogue epilogue = Epilogue::kNone;                // kLinear
  Gate gate = Gate::kSilu;                            // kGlu
  Activation activation = Activation::kTanh;          // kActivate
  bool normalize = false;                             // kPool
  const EmbedOp* embed = nullptr;                     // kEmbed
  const AttentionOptions* attention = nullptr;        // kAttention
  const RopeOptions* rope = nullptr;                  // kQkNormRope
  LoraWeight lora;                                    // kAddLora, kLoraAdd
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // Whether this backend runs `call`: Ok, or kUnimplemented saying what it lacks. A pure
  // function of the call (no device, no batch), asked before every op and weight addition, so
  // that a model the backend cannot serve is refused while it is loaded and planned, before
  // any batch; tests ask it of a recording of a forward pass (backends/cuda/op_support.h).
  // Default: everything.
  virtual Status Supports(const OpCall& call) const {
    (void)call;
    return Status::Ok();
  }

  // --- load time ------------------------------------------------------------------------
  Result<LinearWeight> AddLinear(const Tensor& w, const Tensor* bias, LinearOptions o = {});
  Result<NormWeight> AddNorm(NormKind kind, const Tensor& weight, const Tensor* bias, float eps);
  Result<Table> AddTable(Tensor t);  // taken over (large: a vocabulary)
  // The task adapters' deltas of one [n, k] layer (or of a table with k rows and n columns,
  // `input` saying which ids pick them): copied. No parts: an invalid LoraWeight (nothing to add).
  Result<LoraWeight> AddLora(const std::vector<LoraPart>& parts, int n, int k,
                             LoraInput input = LoraInput::kRows);
  Buffer AddBuffer(std::string name, Rows rows, int width,
                   Precision precision = Precision::kActivation);
  const BufferDecl& decl(Buffer b) const { return decls_[size_t(b.id)]; }
  const std::vector<BufferDecl>& decls() const { return decls_; }

  // --- per batch ----------------------------------------------------------------------------
  // True when the current batch's pooling reads fewer rows than all its tokens (CLS or
  // last-token pooling): a family may then run its last layer after attention on kPooled
  // buffers only (Attention into a kPooled buffer, GatherPooled for the residual). Decided by
  // the runner before the forward pass (on CUDA it is part of the graph's key).
  virtual bool prune_last_layer() const = 0;
  // True when the current batch holds images (RaggedBatch::pixels), not text: a dual encoder
  // (CLIP, SigLIP) then runs its vision tower. Decided per batch like prune_last_layer(); a
  // batch is never both. Backends without pixel input: false.
  virtual bool image_batch() const { return false; }

  // --- ops -----------------------------------------------------------------------------------
  Status Embed(const EmbedOp& op, Buffer out);
  Status Linear(Buffer in, LinearWeight w, Buffer out, Epilogue e = Epilogue::kNone);
  // out = norm(in); in == out allowed.
  Status Norm(Buffer in, NormWeight w, Buffer out);
  Status QkNormRope(Buffer qkv, const RopeOptions& o);
  // out = attention over each sequence's rows of qkv ([Q | K | V] rows, heads contiguous);
  // out in kTokens: every row; out in kPooled: only the query rows pooling reads.
  Status Attention(Buffer qkv, Buffer out, const AttentionOptions& o);
  // out[:, i] = gate(gate_up[:, i]) * gate_up[:, I + i], I = out width.
  Status Glu(Buffer gate_up, Buffer out, Gate gate = Gate::kSilu);
  // out += in (same rows and width): a residual add that no Linear epilogue can do (Gemma's
  // norm after each sublayer, before the add).
  Status Add(Buffer in, Buffer out);
  Status Activate(Buffer x, Activation a);
  // pooled = the rows of tokens that pooling reads (kTokens -> kPooled).
  Status GatherPooled(Buffer tokens, Buffer pooled);
  // out (kSequences) = each sequence's pooled row of hidden (kTokens or kPooled) by the batch's
  // pooling modes, L2-normalised where the batch asks when `normalize`.
  Status Pool(Buffer hidden, Buffer out, bool normalize);
  // out (kSequences, w.n wide) = for each sequence, the largest value over its rows of
  // hidden (kTokens) W^T + b, per output column: a masked-LM head's logits max-pooled without
  // a [tokens, vocabulary] buffer (SPLADE; log1p(relu) is monotonic, so it is applied after).
  Status VocabMaxPool(Buffer hidden, LinearWeight w, Buffer out);
  // x (kSequences) L2-normalised where the batch asks: after sentence-transformers Dense
  // modules, which come between pooling and normalisation.
  Status Normalize(Buffer x);
  // out[t] += the delta of w for the adapter of row t's sequence (none: nothing): in[t] A^T B^T
  // times the scale, B's rows landing at the part's row offset. A table's delta (w.table()) takes
  // the row of token t's id (or token type id) instead of in[t] (in invalid). in and out: [tokens
  // or pooled]; out is a layer's output before its activation, or the residual stream it adds into.
  Status LoraAdd(Buffer in, LoraWeight w, Buffer out);
  // out (kTokens, RaggedBatch::pixel_width wide) = the batch's pixel rows: each image token's
  // flattened patch (channel, row, column order: a strided convolution's weight [H, C, p, p]
  // read as an [H, C p p] linear layer), zeros for a class token. Only on an image_batch().
  Status Pixels(Buffer out);

 protected:
  virtual Result<int> DoAddLinear(const Tensor& w, const Tensor* bias, LinearOptions o) = 0;
  virtual Result<int> DoAddNorm(NormKind kind, const Tensor& weight, const Tensor* bias,
                                float eps) = 0;
  virtual Result<int> DoAddTable(Tensor t) = 0;
  virtual void DoAddBuffer(const BufferDecl& d) { (void)d; }

  virtual Status DoEmbed(const EmbedOp& op, Buffer out) = 0;
  virtual Status DoLinear(Buffer in, LinearWeight w, Buffer out, Epilogue e) = 0;
  virtual Status DoNorm(Buffer in, NormWeight w, Buffer out) = 0;
  virtual Status DoQkNormRope(Buffer qkv, const RopeOptions& o) = 0;
  virtual Status DoAttention(Buffer qkv, Buffer out, const AttentionOptions& o) = 0;
  virtual Status DoGlu(Buffer gate_up, Buffer out, Gate gate) = 0;
  virtual Status DoAdd(Buffer in, Buffer out) = 0;
  virtual Status DoActivate(Buffer x, Activation a) = 0;
  virtual Status DoGatherPooled(Buffer tokens, Buffer pooled) = 0;
  virtual Status DoPool(Buffer hidden, Buffer out, bool normalize) = 0;
  virtual Status DoNormalize(Buffer x) = 0;
  virtual Status DoVocabMaxPool(Buffer hidden, LinearWeight w, Buffer out) = 0;
  virtual Result<int> DoAddLora(const std::vector<LoraPart>& parts, int n, int k,
                                LoraInput input) = 0;
  virtual Status DoLoraAdd(Buffer in, LoraWeight w, Buffer out) = 0;
  // Backends without pixel input refuse it (their Supports should say so first).
  virtual Status DoPixels(Buffer out) {
    (void)out;
    return Status::Unimplemented(std::string(name()) + " backend: no pixel input (images)");
  }

 private:
  Status Check(bool ok, const char* op, const std::string& what) const;
  OpCall Call(OpKind kind, Buffer a, Buffer b = Buffer{}) const;
  std::vector<BufferDecl> decls_;
};

}  // namespace orchid::ops
