// CudaEngine (cuda_engine.h): model loading, the device arena, buckets, graphs, Submit and the
// completion thread. The kernels are in ops.cu / attention.cu, the GEMMs in gemm.cpp.
//
// Per-bucket input block (device, at a fixed address per (token bucket tb, sequence bucket sb)
// so a captured graph reads new inputs after each refill; the host fills one slot of a ring of
// pinned blocks with the same layout and sends it with one cudaMemcpyAsync):
//   int32 ids[tb] | types[tb] | positions[tb] | cu[sb + 1] | tile_seq[nt] | tile_q0[nt]
//   uint8 mode[sb] | norm[sb]                                   (nt = AttentionTiles(tb, sb))
// Padding tokens have id 0, type 0, position 0 (valid table rows); cu[s] for the padding
// sequences s > S repeats the real token count, so they are empty.
//
// Forward pass (bf16 activations in the arena, all shapes [tb, *]):
//   BERT:  x = LN(word + pos + type); per layer: qkv = x Wqkv^T + b; ctx = attn(qkv);
//          x = LN(ctx Wo^T + bo + x); h = gelu(x Wi^T + bi); x = LN(h Wd^T + bd + x)
//   Qwen3: res = embed (fp32 residual stream); xn = rms(res) w_in;
//          per layer: qkv = xn Wqkv^T; q,k = rope(rms_head(q,k)); ctx = attn(qkv);
//          res += ctx Wo^T; xn = rms(res) w_post; res += (silu(xn Wg^T) * xn Wu^T) Wd^T;
//          xn = rms(res) w_next (the next layer's input norm, or the final norm)
//   then out[sb, H] = normalize?(pool(x or xn)) in fp32, copied to the pinned result buffer.
//
// Locks: submit_mu_ (Submit/CaptureAll: staging ring, arena, stream order, graphs_, LtGemm),
// pool_mu_ (pinned result buffers and events, shared with the completion thread), pending_mu_
// (the completion queue). Never two at once except pool_mu_ inside submit_mu_.
#include "engine/cuda/cuda_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "engine/cuda/bf16_host.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/ops.h"
#include "models/bert_config.h"
#include "models/json_file.h"
#include "models/qwen3_config.h"
#include "models/safetensors.h"
#include "models/sentence_transformers.h"
#include "models/weight_reader.h"

namespace orchid::cuda {

Result<CudaGraphs> ParseCudaGraphs(std::string_view name) {
  if (name == "off") return CudaGraphs::kOff;
  if (name == "lazy") return CudaGraphs::kLazy;
  if (name == "eager-capture-all") return CudaGraphs::kEagerCaptureAll;
  return Status::InvalidArgument("--cuda-graphs must be off, lazy or eager-capture-all, not \"" +
                                 std::string(name) + "\"");
}

const char* CudaGraphsName(CudaGraphs g) {
  switch (g) {
    case CudaGraphs::kOff: return "off";
    case CudaGraphs::kLazy: return "lazy";
    case CudaGraphs::kEagerCaptureAll: return "eager-capture-all";
  }
  return "?";
}

bool CudaDeviceAvailable(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why != nullptr) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  if (n == 0) {
    if (why != nullptr) *why = "cudaGetDeviceCount found no device";
    return false;
  }
  return true;
}

int TokenBucket(int tokens, int large_token_threshold) {
  const int step = tokens > large_token_threshold ? 256 : 64;
  return (tokens + step - 1) / step * step;
}

int SequenceBucket(int seqs) {
  int b = 1;
  while (b < seqs) b *= 2;
  return b;
}

int AttentionTiles(int token_bucket, int seq_bucket) {
  return (token_bucket + kAttentionTileRows - 1) / kAttentionTileRows + seq_bucket;
}

Status BuildAttentionTiles(const int32_t* cu, int num_seqs, int num_tiles, int32_t* tile_seq,
                           int32_t* tile_q0) {
  std::vector<int> order(static_cast<size_t>(num_seqs));
  for (int s = 0; s < num_seqs; ++s) order[size_t(s)] = s;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return cu[a + 1] - cu[a] > cu[b + 1] - cu[b];
  });
  int n = 0;
  for (int s : order) {
    const int len = cu[s + 1] - cu[s];
    for (int q0 = 0; q0 < len; q0 += kAttentionTileRows) {
      if (n >= num_tiles) return Status::Internal("attention tile map overflow");
      tile_seq[n] = s;
      tile_q0[n] = q0;
      ++n;
    }
  }
  for (; n < num_tiles; ++n) {
    tile_seq[n] = -1;
    tile_q0[n] = 0;
  }
  return Status::Ok();
}

namespace {

enum class Family { kBert, kQwen3 };

struct BertLayer {
  bf16 *qkv_w, *qkv_b, *o_w, *o_b, *i_w, *i_b, *d_w, *d_b;
  float *ln1_g, *ln1_b, *ln2_g, *ln2_b;
};

struct QwenLayer {
  float* in_norm;
  bf16* qkv_w;
  float *q_norm, *k_norm;
  bf16* o_w;
  float* post_norm;
  bf16* gu_w;
  bf16* down_w;
};

// Device pointers of one bucket's input block.
struct Inputs {
  int32_t *ids, *types, *pos, *cu, *tile_seq, *tile_q0;
  uint8_t *mode, *norm;
  size_t bytes;  // size of the block
};

size_t InputBytes(int tb, int sb) {
  const int nt = AttentionTiles(tb, sb);
  return sizeof(int32_t) * (3 * size_t(tb) + size_t(sb) + 1 + 2 * size_t(nt)) + 2 * size_t(sb);
}

Inputs InputsAt(void* base, int tb, int sb) {
  Inputs in{};
  const int nt = AttentionTiles(tb, sb);
  auto* p = static_cast<int32_t*>(base);
  in.ids = p;
  in.types = in.ids + tb;
  in.pos = in.types + tb;
  in.cu = in.pos + tb;
  in.tile_seq = in.cu + sb + 1;
  in.tile_q0 = in.tile_seq + nt;
  in.mode = reinterpret_cast<uint8_t*>(in.tile_q0 + nt);
  in.norm = in.mode + sb;
  in.bytes = InputBytes(tb, sb);
  return in;
}

constexpr size_t kAlign = 256;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

class CudaEngine final : public Engine {
 public:
  static Result<std::unique_ptr<CudaEngine>> Create(const std::string& dir,
                                                    const CudaEngineOptions& options);
  ~CudaEngine() override;
  const ModelInfo& info() const override { return info_; }
  LazyResult Submit(RaggedBatch batch) override;
  CudaEngineStats stats() const {
    return {eager_.load(), captures_.load(), replays_.load(), graph_count_.load(),
            capture_failures_.load()};
  }

 private:
  struct Graph {
    int seen = 0;
    bool capture_failed = false;  // run this bucket eagerly from now on
    cudaGraphExec_t exec = nullptr;
  };
  struct Pending {
    cudaEvent_t done = nullptr;
    float* host = nullptr;
    size_t capacity = 0;  // floats
    int rows = 0, dim = 0;
    LazyResult::Promise promise;
  };

  explicit CudaEngine(const CudaEngineOptions& o) : opt_(o) {}
  Status Init(const std::string& dir);
  Status LoadBert(const std::string& dir, const std::string& config_path, bool xlmr,
                  const SentenceTransformersConfig& st, const SafetensorsFile& file);
  Status LoadQwen3(const std::string& config_path, const SentenceTransformersConfig& st,
                   const SafetensorsFile& file);
  Status AllocateArena();
  Result<bf16*> UploadBf16(const Tensor& t);
  Result<float*> UploadF32(const Tensor& t);
  Result<void*> DeviceAlloc(size_t bytes);

  Status CheckBatch(const RaggedBatch& b) const;
  Status Enqueue(const RaggedBatch& b, float* host_out);
  Status RunChunk(const RaggedBatch& b, int s0, int s1, float* host_out);
  Status RunForward(int tb, int sb);   // eager / capture / replay per the graph policy
  Status Forward(int tb, int sb);      // enqueues the kernels (capturable)
  Status ForwardBert(const Inputs& in, int tb, int sb);
  Status ForwardQwen3(const Inputs& in, int tb, int sb);
  Status Capture(int tb, int sb, cudaGraphExec_t* exec);
  Status CaptureAll();

  float* AcquireHost(size_t floats, size_t* capacity);
  void ReleaseHost(float* p, size_t capacity);
  cudaEvent_t AcquireEvent();
  void CompletionLoop();

  CudaEngineOptions opt_;
  ModelInfo info_;
  Family family_ = Family::kBert;
  // Model shape.
  int H_ = 0, I_ = 0, layers_ = 0, num_q_ = 0, num_kv_ = 0, head_dim_ = 0;
  float eps_ = 1e-12f;
  float rope_theta_ = 1e6f;
  bool causal_ = false;
  int pos_offset_ = 0, max_positions_ = 0, type_vocab_ = 1;
  int max_tokens_ = 0, max_seqs_ = 0;  // largest buckets

  // Weights.
  bf16 *word_ = nullptr, *pos_emb_ = nullptr, *type_emb_ = nullptr;
  float *emb_ln_g_ = nullptr, *emb_ln_b_ = nullptr, *final_norm_ = nullptr;
  std::vector<BertLayer> bert_;
  std::vector<QwenLayer> qwen_;
  std::vector<void*> allocations_;

  // Arena.
  void* input_dev_ = nullptr;
  bf16 *x_ = nullptr, *qkv_ = nullptr, *ctx_ = nullptr, *tmp_ = nullptr, *ffn_ = nullptr,
       *act_ = nullptr;
  float* res_ = nullptr;
  float* out_dev_ = nullptr;

  // Host staging: a ring of pinned input blocks, each free again once its copy event fires.
  // Submit() blocks only when a batch is split into more chunks than the ring holds (then it
  // waits for the copy of the chunk kStagingSlots back, i.e. for the GPU to catch up).
  static constexpr int kStagingSlots = 8;
  void* staging_[kStagingSlots] = {};
  cudaEvent_t staging_done_[kStagingSlots] = {};
  int next_staging_ = 0;

  cudaStream_t stream_ = nullptr;
  LtGemm gemm_;
  std::map<std::pair<int, int>, Graph> graphs_;
  std::atomic<uint64_t> eager_{0}, captures_{0}, replays_{0}, graph_count_{0},
      capture_failures_{0};

  std::mutex submit_mu_;  // Submit: staging, arena, stream order, graphs_

  std::mutex pool_mu_;  // pinned result buffers and events, shared with the completion thread
  std::vector<std::pair<float*, size_t>> free_host_;
  std::vector<cudaEvent_t> free_events_;

  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::deque<Pending> pending_;
  bool stop_ = false;
  std::thread completion_;
};

Result<void*> CudaEngine::DeviceAlloc(size_t bytes) {
  void* p = nullptr;
  ORCHID_CUDA_TRY(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  allocations_.push_back(p);
  return p;
}

Result<bf16*> CudaEngine::UploadBf16(const Tensor& t) {
  std::vector<uint16_t> h(t.numel());
  const float* src = t.data();
  for (size_t i = 0; i < h.size(); ++i) h[i] = FloatToBf16Bits(src[i]);
  ORCHID_ASSIGN_OR_RETURN(void* p, DeviceAlloc(h.size() * sizeof(uint16_t)));
  ORCHID_CUDA_TRY(cudaMemcpy(p, h.data(), h.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  return static_cast<bf16*>(p);
}

Result<float*> CudaEngine::UploadF32(const Tensor& t) {
  ORCHID_ASSIGN_OR_RETURN(void* p, DeviceAlloc(t.numel() * sizeof(float)));
  ORCHID_CUDA_TRY(cudaMemcpy(p, t.data(), t.numel() * sizeof(float), cudaMemcpyHostToDevice));
  return static_cast<float*>(p);
}

Result<std::unique_ptr<CudaEngine>> CudaEngine::Create(const std::string& dir,
                                                       const CudaEngineOptions& options) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) return Status::Unavailable("no CUDA device: " + why);
  if (options.max_batch_tokens < 64 || options.max_batch_sequences < 1 ||
      options.large_token_threshold < 64) {
    return Status::InvalidArgument("CUDA engine options: max_batch_tokens >= 64, "
                                   "max_batch_sequences >= 1, large_token_threshold >= 64");
  }
  std::unique_ptr<CudaEngine> e(new CudaEngine(options));
  ORCHID_RETURN_IF_ERROR(e->Init(dir));
  return e;
}

Status CudaEngine::Init(const std::string& dir) {
  ORCHID_CUDA_TRY(cudaSetDevice(opt_.device));
  ORCHID_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ORCHID_CUDA_TRY(PrepareAttentionKernels());
  ORCHID_RETURN_IF_ERROR(gemm_.Init());

  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound("model directory " + dir + " does not exist");
  }
  const std::string config_path = dir + "/config.json";
  ORCHID_ASSIGN_OR_RETURN(JsonFile config, JsonFile::Read(config_path));
  std::string arch;
  simdjson::dom::array archs;
  if (!config.root()["architectures"].get_array().get(archs) && archs.size() > 0) {
    std::string_view a;
    if (!archs.at(0).get_string().get(a)) arch = std::string(a);
  }
  ORCHID_ASSIGN_OR_RETURN(std::string model_type, config.String("model_type", ""));
  if (arch.empty()) arch = model_type;
  ORCHID_ASSIGN_OR_RETURN(SentenceTransformersConfig st, ReadSentenceTransformersConfig(dir));
  const std::string weights_path = dir + "/model.safetensors";
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                          SafetensorsFile::Open(weights_path));
  info_.architecture = arch;
  info_.default_pooling = st.pooling;
  info_.default_normalize = st.normalize;

  const bool bert = arch == "BertModel" || arch == "BertForMaskedLM" ||
                    arch == "BertForPreTraining" || model_type == "bert";
  const bool xlmr = arch == "XLMRobertaModel" || arch == "RobertaModel" ||
                    arch == "XLMRobertaForMaskedLM" || arch == "RobertaForMaskedLM" ||
                    model_type == "xlm-roberta" || model_type == "roberta";
  const bool qwen = arch == "Qwen3Model" || arch == "Qwen3ForCausalLM" || model_type == "qwen3";
  if (arch.find("ForSequenceClassification") != std::string::npos) {
    return Status::Unimplemented("the CUDA engine does not run scoring heads yet (" + arch + ")");
  }
  if (qwen) {
    family_ = Family::kQwen3;
    ORCHID_RETURN_IF_ERROR(LoadQwen3(config_path, st, *file));
  } else if (bert || xlmr) {
    family_ = Family::kBert;
    ORCHID_RETURN_IF_ERROR(LoadBert(dir, config_path, xlmr, st, *file));
  } else {
    return Status::InvalidArgument(config_path + ": architecture \"" + arch +
                                   "\" is not supported by the CUDA engine (BERT, XLM-RoBERTa, "
                                   "Qwen3)");
  }
  if (!AttentionHeadDimSupported(head_dim_)) {
    return Status::Unimplemented("the CUDA attention kernel has no head_dim " +
                                 std::to_string(head_dim_) + " (32, 64, 80, 96, 128)");
  }
  ORCHID_RETURN_IF_ERROR(AllocateArena());
  // The weights went up with cudaMemcpy from pageable memory on the legacy default stream,
  // which may return before the DMA has landed and which does not order work on stream_ (a
  // non-blocking stream); the arena was cleared on stream_. Wait for every stream of the device
  // before the first forward pass (CaptureAll below, or the first Submit).
  ORCHID_CUDA_TRY(cudaDeviceSynchronize());
  completion_ = std::thread([this] { CompletionLoop(); });
  if (opt_.graphs == CudaGraphs::kEagerCaptureAll) ORCHID_RETURN_IF_ERROR(CaptureAll());
  return Status::Ok();
}

Status CudaEngine::LoadBert(const std::string& dir, const std::string& config_path, bool xlmr,
                            const SentenceTransformersConfig& st, const SafetensorsFile& file) {
  ORCHID_ASSIGN_OR_RETURN(BertConfig c, ReadBertConfig(config_path));
  if (xlmr) c.position_offset = c.pad_token_id + 1;
  if (c.position_offset >= c.max_position_embeddings) {
    return Status::Corrupt(config_path + ": max_position_embeddings leaves no position");
  }
  const std::string anchor = "embeddings.word_embeddings.weight";
  const std::optional<std::string> prefix = FindWeightPrefix(file, anchor);
  if (!prefix) return Status::Corrupt(file.path() + ": no \"" + anchor + "\"; not a BERT model?");
  const WeightReader r(file, *prefix);
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  H_ = c.hidden_size;
  I_ = c.intermediate_size;
  layers_ = c.num_hidden_layers;
  num_q_ = num_kv_ = c.num_attention_heads;
  head_dim_ = c.head_dim();
  eps_ = c.layer_norm_eps;
  pos_offset_ = c.position_offset;
  max_positions_ = c.max_position_embeddings - c.position_offset;
  type_vocab_ = c.type_vocab_size;
  info_.type_vocab_size = c.type_vocab_size;
  causal_ = false;

  Tensor t, g, b;
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(anchor, {c.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(word_, UploadBf16(t));
  ORCHID_ASSIGN_OR_RETURN(t, r.Read("embeddings.position_embeddings.weight",
                                    {c.max_position_embeddings, H}));
  ORCHID_ASSIGN_OR_RETURN(pos_emb_, UploadBf16(t));
  ORCHID_ASSIGN_OR_RETURN(t, r.Read("embeddings.token_type_embeddings.weight",
                                    {c.type_vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(type_emb_, UploadBf16(t));
  ORCHID_RETURN_IF_ERROR(r.ReadNorm("embeddings.LayerNorm", H, &g, &b));
  ORCHID_ASSIGN_OR_RETURN(emb_ln_g_, UploadF32(g));
  ORCHID_ASSIGN_OR_RETURN(emb_ln_b_, UploadF32(b));

  bert_.resize(size_t(layers_));
  for (int i = 0; i < layers_; ++i) {
    BertLayer& l = bert_[size_t(i)];
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    Tensor q, k, v, qb, kb, vb;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(p + "attention.self.query.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(p + "attention.self.key.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(p + "attention.self.value.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(qb, r.Read(p + "attention.self.query.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(kb, r.Read(p + "attention.self.key.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(vb, r.Read(p + "attention.self.value.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.qkv_w, UploadBf16(Concat0({&q, &k, &v})));
    ORCHID_ASSIGN_OR_RETURN(l.qkv_b, UploadBf16(Concat0({&qb, &kb, &vb})));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "attention.output.dense.weight", {H, H}));
    ORCHID_ASSIGN_OR_RETURN(l.o_w, UploadBf16(t));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "attention.output.dense.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.o_b, UploadBf16(t));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(p + "attention.output.LayerNorm", H, &g, &b));
    ORCHID_ASSIGN_OR_RETURN(l.ln1_g, UploadF32(g));
    ORCHID_ASSIGN_OR_RETURN(l.ln1_b, UploadF32(b));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "intermediate.dense.weight", {I, H}));
    ORCHID_ASSIGN_OR_RETURN(l.i_w, UploadBf16(t));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "intermediate.dense.bias", {I}));
    ORCHID_ASSIGN_OR_RETURN(l.i_b, UploadBf16(t));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "output.dense.weight", {H, I}));
    ORCHID_ASSIGN_OR_RETURN(l.d_w, UploadBf16(t));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "output.dense.bias", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.d_b, UploadBf16(t));
    ORCHID_RETURN_IF_ERROR(r.ReadNorm(p + "output.LayerNorm", H, &g, &b));
    ORCHID_ASSIGN_OR_RETURN(l.ln2_g, UploadF32(g));
    ORCHID_ASSIGN_OR_RETURN(l.ln2_b, UploadF32(b));
  }
  info_.vocab_size = c.vocab_size;
  info_.hidden_size = c.hidden_size;
  info_.max_position_embeddings = max_positions_;
  info_.max_seq_length = st.max_seq_length > 0 && st.max_seq_length < max_positions_
                             ? st.max_seq_length
                             : max_positions_;
  info_.causal = false;
  (void)dir;
  return Status::Ok();
}

Status CudaEngine::LoadQwen3(const std::string& config_path, const SentenceTransformersConfig& st,
                             const SafetensorsFile& file) {
  ORCHID_ASSIGN_OR_RETURN(Qwen3Config c, ReadQwen3Config(config_path));
  const std::string anchor = "embed_tokens.weight";
  const std::optional<std::string> prefix = FindWeightPrefix(file, anchor);
  if (!prefix) return Status::Corrupt(file.path() + ": no \"" + anchor + "\"; not a Qwen3 model?");
  const WeightReader r(file, *prefix);
  const int64_t H = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
  H_ = c.hidden_size;
  I_ = c.intermediate_size;
  layers_ = c.num_hidden_layers;
  num_q_ = c.num_attention_heads;
  num_kv_ = c.num_key_value_heads;
  head_dim_ = c.head_dim;
  eps_ = c.rms_norm_eps;
  rope_theta_ = float(c.rope_theta);
  causal_ = c.causal;
  pos_offset_ = 0;
  max_positions_ = c.max_position_embeddings;
  type_vocab_ = 1;

  Tensor t;
  ORCHID_ASSIGN_OR_RETURN(t, r.Read(anchor, {c.vocab_size, H}));
  ORCHID_ASSIGN_OR_RETURN(word_, UploadBf16(t));
  qwen_.resize(size_t(layers_));
  for (int i = 0; i < layers_; ++i) {
    QwenLayer& l = qwen_[size_t(i)];
    const std::string p = "layers." + std::to_string(i) + ".";
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "input_layernorm.weight", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.in_norm, UploadF32(t));
    Tensor q, k, v;
    ORCHID_ASSIGN_OR_RETURN(q, r.Read(p + "self_attn.q_proj.weight", {c.q_size(), H}));
    ORCHID_ASSIGN_OR_RETURN(k, r.Read(p + "self_attn.k_proj.weight", {c.kv_size(), H}));
    ORCHID_ASSIGN_OR_RETURN(v, r.Read(p + "self_attn.v_proj.weight", {c.kv_size(), H}));
    ORCHID_ASSIGN_OR_RETURN(l.qkv_w, UploadBf16(Concat0({&q, &k, &v})));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "self_attn.q_norm.weight", {D}));
    ORCHID_ASSIGN_OR_RETURN(l.q_norm, UploadF32(t));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "self_attn.k_norm.weight", {D}));
    ORCHID_ASSIGN_OR_RETURN(l.k_norm, UploadF32(t));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "self_attn.o_proj.weight", {H, c.q_size()}));
    ORCHID_ASSIGN_OR_RETURN(l.o_w, UploadBf16(t));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "post_attention_layernorm.weight", {H}));
    ORCHID_ASSIGN_OR_RETURN(l.post_norm, UploadF32(t));
    Tensor gate, up;
    ORCHID_ASSIGN_OR_RETURN(gate, r.Read(p + "mlp.gate_proj.weight", {I, H}));
    ORCHID_ASSIGN_OR_RETURN(up, r.Read(p + "mlp.up_proj.weight", {I, H}));
    ORCHID_ASSIGN_OR_RETURN(l.gu_w, UploadBf16(Concat0({&gate, &up})));
    ORCHID_ASSIGN_OR_RETURN(t, r.Read(p + "mlp.down_proj.weight", {H, I}));
    ORCHID_ASSIGN_OR_RETURN(l.down_w, UploadBf16(t));
  }
  ORCHID_ASSIGN_OR_RETURN(t, r.Read("norm.weight", {H}));
  ORCHID_ASSIGN_OR_RETURN(final_norm_, UploadF32(t));

  info_.vocab_size = c.vocab_size;
  info_.hidden_size = c.hidden_size;
  info_.max_position_embeddings = c.max_position_embeddings;
  info_.max_seq_length = st.max_seq_length > 0 && st.max_seq_length < c.max_position_embeddings
                             ? st.max_seq_length
                             : c.max_position_embeddings;
  info_.causal = c.causal;
  if (!st.present) info_.default_pooling = Pooling::kLastToken;
  return Status::Ok();
}

Status CudaEngine::AllocateArena() {
  max_tokens_ = TokenBucket(opt_.max_batch_tokens, opt_.large_token_threshold);
  max_seqs_ = SequenceBucket(opt_.max_batch_sequences);
  const size_t T = size_t(max_tokens_);
  const size_t qkv_dim = size_t(num_q_ + 2 * num_kv_) * size_t(head_dim_);
  const size_t q_dim = size_t(num_q_) * size_t(head_dim_);
  const bool qwen = family_ == Family::kQwen3;
  // The largest input block over the buckets is the one of the largest buckets.
  const size_t input_bytes = InputBytes(max_tokens_, max_seqs_);
  size_t total = 0;
  auto reserve = [&](size_t bytes) {
    const size_t off = total;
    total += AlignUp(bytes);
    return off;
  };
  const size_t o_in = reserve(input_bytes);
  const size_t o_x = reserve(T * size_t(H_) * 2);
  const size_t o_qkv = reserve(T * qkv_dim * 2);
  const size_t o_ctx = reserve(T * q_dim * 2);
  const size_t o_tmp = reserve(T * size_t(H_) * 2);
  const size_t o_ffn = reserve(T * size_t(I_) * (qwen ? 2 : 1) * 2);
  const size_t o_act = qwen ? reserve(T * size_t(I_) * 2) : 0;
  const size_t o_res = qwen ? reserve(T * size_t(H_) * 4) : 0;
  const size_t o_out = reserve(size_t(max_seqs_) * size_t(H_) * 4);
  ORCHID_ASSIGN_OR_RETURN(void* arena, DeviceAlloc(total));
  auto* base = static_cast<unsigned char*>(arena);
  // Defined contents everywhere (padding rows of GEMM inputs are read, never used).
  ORCHID_CUDA_TRY(cudaMemsetAsync(arena, 0, total, stream_));
  input_dev_ = base + o_in;
  x_ = reinterpret_cast<bf16*>(base + o_x);
  qkv_ = reinterpret_cast<bf16*>(base + o_qkv);
  ctx_ = reinterpret_cast<bf16*>(base + o_ctx);
  tmp_ = reinterpret_cast<bf16*>(base + o_tmp);
  ffn_ = reinterpret_cast<bf16*>(base + o_ffn);
  act_ = qwen ? reinterpret_cast<bf16*>(base + o_act) : nullptr;
  res_ = qwen ? reinterpret_cast<float*>(base + o_res) : nullptr;
  out_dev_ = reinterpret_cast<float*>(base + o_out);
  for (int i = 0; i < kStagingSlots; ++i) {
    ORCHID_CUDA_TRY(cudaHostAlloc(&staging_[i], input_bytes, cudaHostAllocDefault));
    ORCHID_CUDA_TRY(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming));
  }
  return Status::Ok();
}

CudaEngine::~CudaEngine() {
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    stop_ = true;
  }
  pending_cv_.notify_all();
  if (completion_.joinable()) completion_.join();
  cudaSetDevice(opt_.device);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (auto& [key, g] : graphs_) {
    (void)key;
    if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
  }
  for (int i = 0; i < kStagingSlots; ++i) {
    if (staging_[i] != nullptr) cudaFreeHost(staging_[i]);
    if (staging_done_[i] != nullptr) cudaEventDestroy(staging_done_[i]);
  }
  for (auto& [p, cap] : free_host_) {
    (void)cap;
    cudaFreeHost(p);
  }
  for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
  for (void* p : allocations_) cudaFree(p);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status CudaEngine::CheckBatch(const RaggedBatch& b) const {
  ORCHID_RETURN_IF_ERROR(b.Validate(info_.vocab_size));
  for (size_t i = 0; i < b.positions.size(); ++i) {
    const int32_t p = b.positions[i];
    if (p < 0 || p >= max_positions_) {
      return Status::OutOfRange("position " + std::to_string(p) + " is outside the model's " +
                                std::to_string(max_positions_) + " positions");
    }
  }
  for (size_t i = 0; i < b.token_type_ids.size(); ++i) {
    const int32_t t = b.token_type_ids[i];
    if (t < 0 || t >= type_vocab_) {
      return Status::InvalidArgument("token type id " + std::to_string(t) + " is outside [0, " +
                                     std::to_string(type_vocab_) + ")");
    }
  }
  for (int s = 0; s < b.num_sequences(); ++s) {
    if (b.pooling[size_t(s)] == Pooling::kNone) {
      return Status::Unimplemented("the CUDA engine returns pooled vectors only");
    }
    if (b.seq_len(s) > max_tokens_) {
      return Status::OutOfRange("sequence of " + std::to_string(b.seq_len(s)) +
                                " tokens exceeds the CUDA engine's max_batch_tokens (" +
                                std::to_string(max_tokens_) + ")");
    }
  }
  return Status::Ok();
}

float* CudaEngine::AcquireHost(size_t floats, size_t* capacity) {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    // Smallest free buffer that fits.
    size_t best = free_host_.size();
    for (size_t i = 0; i < free_host_.size(); ++i) {
      if (free_host_[i].second >= floats &&
          (best == free_host_.size() || free_host_[i].second < free_host_[best].second)) {
        best = i;
      }
    }
    if (best != free_host_.size()) {
      auto [p, cap] = free_host_[best];
      free_host_.erase(free_host_.begin() + std::ptrdiff_t(best));
      *capacity = cap;
      return p;
    }
  }
  size_t cap = 16384;
  while (cap < floats) cap *= 2;
  void* p = nullptr;
  if (cudaHostAlloc(&p, cap * sizeof(float), cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  *capacity = cap;
  return static_cast<float*>(p);
}

void CudaEngine::ReleaseHost(float* p, size_t capacity) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  free_host_.emplace_back(p, capacity);
}

cudaEvent_t CudaEngine::AcquireEvent() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!free_events_.empty()) {
      cudaEvent_t e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return e;
}

LazyResult CudaEngine::Submit(RaggedBatch batch) {
  auto [result, promise] = LazyResult::Make();
  Status st = CheckBatch(batch);
  if (!st.ok()) {
    promise.Set(std::move(st));
    return result;
  }
  const int rows = batch.num_sequences(), dim = info_.hidden_size;
  if (rows == 0) {
    Embeddings empty;
    empty.dim = dim;
    promise.Set(std::move(empty));
    return result;
  }
  std::lock_guard<std::mutex> lock(submit_mu_);
  cudaSetDevice(opt_.device);
  size_t capacity = 0;
  float* host = AcquireHost(size_t(rows) * size_t(dim), &capacity);
  cudaEvent_t done = AcquireEvent();
  if (host == nullptr || done == nullptr) {
    if (host != nullptr) ReleaseHost(host, capacity);
    if (done != nullptr) {
      std::lock_guard<std::mutex> plock(pool_mu_);
      free_events_.push_back(done);
    }
    promise.Set(Status::ResourceExhausted("CUDA engine: cannot allocate pinned memory or event"));
    return result;
  }
  st = Enqueue(batch, host);
  if (st.ok()) st = CudaStatus(cudaEventRecord(done, stream_), "cudaEventRecord");
  if (!st.ok()) {
    // Nothing may still write into `host` once it is back in the pool.
    cudaStreamSynchronize(stream_);
    cudaGetLastError();
    ReleaseHost(host, capacity);
    {
      std::lock_guard<std::mutex> plock(pool_mu_);
      free_events_.push_back(done);
    }
    promise.Set(std::move(st));
    return result;
  }
  {
    std::lock_guard<std::mutex> plock(pending_mu_);
    pending_.push_back(Pending{done, host, capacity, rows, dim, std::move(promise)});
  }
  pending_cv_.notify_one();
  return result;
}

void CudaEngine::CompletionLoop() {
  cudaSetDevice(opt_.device);
  for (;;) {
    Pending p;
    {
      std::unique_lock<std::mutex> lock(pending_mu_);
      pending_cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stop_ and drained
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    const cudaError_t e = cudaEventSynchronize(p.done);
    if (e != cudaSuccess) {
      p.promise.Set(CudaStatus(e, "CUDA engine forward pass"));
    } else {
      Embeddings out;
      out.rows = p.rows;
      out.dim = p.dim;
      out.data.assign(p.host, p.host + size_t(p.rows) * size_t(p.dim));
      p.promise.Set(std::move(out));
    }
    ReleaseHost(p.host, p.capacity);
    std::lock_guard<std::mutex> lock(pool_mu_);
    free_events_.push_back(p.done);
  }
}

Status CudaEngine::Enqueue(const RaggedBatch& b, float* host_out) {
  const int S = b.num_sequences();
  int s0 = 0;
  while (s0 < S) {
    int s1 = s0, tokens = 0;
    while (s1 < S && s1 - s0 < opt_.max_batch_sequences &&
           tokens + b.seq_len(s1) <= opt_.max_batch_tokens) {
      tokens += b.seq_len(s1);
      ++s1;
    }
    if (s1 == s0) s1 = s0 + 1;  // one sequence over max_batch_tokens, within its bucket
    ORCHID_RETURN_IF_ERROR(RunChunk(b, s0, s1, host_out));
    s0 = s1;
  }
  return Status::Ok();
}

Status CudaEngine::RunChunk(const RaggedBatch& b, int s0, int s1, float* host_out) {
  const int S = s1 - s0;
  const int t0 = b.cu_seqlens[size_t(s0)];
  const int T = b.cu_seqlens[size_t(s1)] - t0;
  const int tb = TokenBucket(T, opt_.large_token_threshold);
  const int sb = SequenceBucket(S);
  if (tb > max_tokens_ || sb > max_seqs_) return Status::Internal("CUDA engine: chunk too large");
  const int nt = AttentionTiles(tb, sb);

  // Fill the pinned staging block once its previous copy has completed.
  const int slot = next_staging_;
  next_staging_ = (next_staging_ + 1) % kStagingSlots;
  ORCHID_CUDA_TRY(cudaEventSynchronize(staging_done_[slot]));
  const Inputs h = InputsAt(staging_[slot], tb, sb);
  std::copy_n(b.token_ids.data() + t0, T, h.ids);
  std::fill(h.ids + T, h.ids + tb, 0);
  if (b.token_type_ids.empty()) {
    std::fill(h.types, h.types + tb, 0);
  } else {
    std::copy_n(b.token_type_ids.data() + t0, T, h.types);
    std::fill(h.types + T, h.types + tb, 0);
  }
  std::copy_n(b.positions.data() + t0, T, h.pos);
  std::fill(h.pos + T, h.pos + tb, 0);
  for (int i = 0; i <= S; ++i) h.cu[i] = b.cu_seqlens[size_t(s0 + i)] - t0;
  for (int i = S + 1; i <= sb; ++i) h.cu[i] = T;
  ORCHID_RETURN_IF_ERROR(BuildAttentionTiles(h.cu, sb, nt, h.tile_seq, h.tile_q0));
  for (int i = 0; i < sb; ++i) {
    h.mode[i] = i < S ? uint8_t(b.pooling[size_t(s0 + i)]) : uint8_t(0);
    h.norm[i] = i < S ? uint8_t(b.normalize[size_t(s0 + i)] != 0) : uint8_t(0);
  }
  const Inputs d = InputsAt(input_dev_, tb, sb);
  ORCHID_CUDA_TRY(cudaMemcpyAsync(d.ids, h.ids, h.bytes, cudaMemcpyHostToDevice, stream_));
  ORCHID_CUDA_TRY(cudaEventRecord(staging_done_[slot], stream_));

  ORCHID_RETURN_IF_ERROR(RunForward(tb, sb));

  const size_t dim = size_t(info_.hidden_size);
  ORCHID_CUDA_TRY(cudaMemcpyAsync(host_out + size_t(s0) * dim, out_dev_,
                                  size_t(S) * dim * sizeof(float), cudaMemcpyDeviceToHost,
                                  stream_));
  return Status::Ok();
}

Status CudaEngine::RunForward(int tb, int sb) {
  if (opt_.graphs == CudaGraphs::kOff) {
    ++eager_;
    return Forward(tb, sb);
  }
  Graph& g = graphs_[{tb, sb}];
  if (g.exec != nullptr) {
    ++replays_;
    return CudaStatus(cudaGraphLaunch(g.exec, stream_), "cudaGraphLaunch");
  }
  if (g.seen == 0 || g.capture_failed) {  // first sight: eager (loads kernels, GEMM plans)
    g.seen = 1;
    ++eager_;
    return Forward(tb, sb);
  }
  const Status cap = Capture(tb, sb, &g.exec);
  if (!cap.ok()) {
    // A bucket that cannot be captured still runs (eagerly); the counter makes it visible.
    g.capture_failed = true;
    g.exec = nullptr;
    ++capture_failures_;
    std::fprintf(stderr, "orchid CUDA engine: graph capture failed for %d tokens x %d sequences, "
                 "running it eagerly: %s\n", tb, sb, cap.ToString().c_str());
    ++eager_;
    return Forward(tb, sb);
  }
  ++captures_;
  graph_count_.store(graph_count_.load() + 1);
  ++replays_;
  return CudaStatus(cudaGraphLaunch(g.exec, stream_), "cudaGraphLaunch");
}

Status CudaEngine::Capture(int tb, int sb, cudaGraphExec_t* exec) {
  ORCHID_CUDA_TRY(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const Status fwd = Forward(tb, sb);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
  if (!fwd.ok() || end != cudaSuccess) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    return fwd.ok() ? CudaStatus(end, "cudaStreamEndCapture") : fwd;
  }
  const cudaError_t inst = cudaGraphInstantiate(exec, graph, 0);
  cudaGraphDestroy(graph);
  return CudaStatus(inst, "cudaGraphInstantiate");
}

Status CudaEngine::CaptureAll() {
  std::lock_guard<std::mutex> lock(submit_mu_);
  const int top = std::min(max_tokens_, TokenBucket(opt_.eager_capture_max_tokens,
                                                    opt_.large_token_threshold));
  // The input block of every bucket must hold a valid empty batch for the warm-up pass:
  // all-zero ids/types/positions, cu all zero (every sequence empty), no tiles.
  for (int tb = 64; tb <= top; tb = TokenBucket(tb + 1, opt_.large_token_threshold)) {
    for (int sb = 1; sb <= max_seqs_ && sb <= tb; sb *= 2) {
      const Inputs d = InputsAt(input_dev_, tb, sb);
      ORCHID_CUDA_TRY(cudaMemsetAsync(d.ids, 0, d.bytes, stream_));
      const size_t tile_bytes = sizeof(int32_t) * size_t(AttentionTiles(tb, sb));
      ORCHID_CUDA_TRY(cudaMemsetAsync(d.tile_seq, 0xff, tile_bytes, stream_));
      ++eager_;
      ORCHID_RETURN_IF_ERROR(Forward(tb, sb));
      Graph& g = graphs_[{tb, sb}];
      g.seen = 1;
      ORCHID_RETURN_IF_ERROR(Capture(tb, sb, &g.exec));
      ++captures_;
      graph_count_.store(graph_count_.load() + 1);
    }
  }
  return CudaStatus(cudaStreamSynchronize(stream_), "CaptureAll");
}

Status CudaEngine::Forward(int tb, int sb) {
  const Inputs in = InputsAt(input_dev_, tb, sb);
  return family_ == Family::kBert ? ForwardBert(in, tb, sb) : ForwardQwen3(in, tb, sb);
}

Status CudaEngine::ForwardBert(const Inputs& in, int tb, int sb) {
  const int H = H_, I = I_;
  const int nt = AttentionTiles(tb, sb);
  const float scale = 1.f / std::sqrt(float(head_dim_));
  ORCHID_CUDA_TRY(EmbedLayerNorm(in.ids, in.types, in.pos, pos_offset_, word_, pos_emb_,
                                 type_emb_, emb_ln_g_, emb_ln_b_, eps_, tb, H, x_, stream_));
  for (const BertLayer& l : bert_) {
    ORCHID_RETURN_IF_ERROR(gemm_.Run(x_, l.qkv_w, l.qkv_b, qkv_, tb, 3 * H, H,
                                     GemmEpilogue::kBias, stream_));
    ORCHID_CUDA_TRY(RaggedFlashAttention(qkv_, in.cu, in.tile_seq, in.tile_q0, nt, num_q_,
                                         num_kv_, head_dim_, scale, false, ctx_, stream_));
    ORCHID_RETURN_IF_ERROR(
        gemm_.Run(ctx_, l.o_w, l.o_b, tmp_, tb, H, H, GemmEpilogue::kBias, stream_));
    ORCHID_CUDA_TRY(AddLayerNorm(tmp_, x_, l.ln1_g, l.ln1_b, eps_, tb, H, x_, stream_));
    ORCHID_RETURN_IF_ERROR(
        gemm_.Run(x_, l.i_w, l.i_b, ffn_, tb, I, H, GemmEpilogue::kBiasGelu, stream_));
    ORCHID_RETURN_IF_ERROR(
        gemm_.Run(ffn_, l.d_w, l.d_b, tmp_, tb, H, I, GemmEpilogue::kBias, stream_));
    ORCHID_CUDA_TRY(AddLayerNorm(tmp_, x_, l.ln2_g, l.ln2_b, eps_, tb, H, x_, stream_));
  }
  ORCHID_CUDA_TRY(PoolNormalize(x_, in.cu, in.mode, in.norm, sb, H, out_dev_, stream_));
  return Status::Ok();
}

Status CudaEngine::ForwardQwen3(const Inputs& in, int tb, int sb) {
  const int H = H_, I = I_;
  const int nt = AttentionTiles(tb, sb);
  const int qkv_dim = (num_q_ + 2 * num_kv_) * head_dim_;
  const int q_dim = num_q_ * head_dim_;
  const float scale = 1.f / std::sqrt(float(head_dim_));
  ORCHID_CUDA_TRY(EmbedGather(in.ids, word_, tb, H, res_, stream_));
  ORCHID_CUDA_TRY(AddRmsNorm(nullptr, res_, qwen_[0].in_norm, eps_, tb, H, x_, stream_));
  for (size_t i = 0; i < qwen_.size(); ++i) {
    const QwenLayer& l = qwen_[i];
    ORCHID_RETURN_IF_ERROR(
        gemm_.Run(x_, l.qkv_w, nullptr, qkv_, tb, qkv_dim, H, GemmEpilogue::kNone, stream_));
    ORCHID_CUDA_TRY(QkNormRope(qkv_, in.pos, l.q_norm, l.k_norm, eps_, rope_theta_, tb, num_q_,
                               num_kv_, head_dim_, stream_));
    ORCHID_CUDA_TRY(RaggedFlashAttention(qkv_, in.cu, in.tile_seq, in.tile_q0, nt, num_q_,
                                         num_kv_, head_dim_, scale, causal_, ctx_, stream_));
    ORCHID_RETURN_IF_ERROR(
        gemm_.Run(ctx_, l.o_w, nullptr, tmp_, tb, H, q_dim, GemmEpilogue::kNone, stream_));
    ORCHID_CUDA_TRY(AddRmsNorm(tmp_, res_, l.post_norm, eps_, tb, H, x_, stream_));
    ORCHID_RETURN_IF_ERROR(
        gemm_.Run(x_, l.gu_w, nullptr, ffn_, tb, 2 * I, H, GemmEpilogue::kNone, stream_));
    ORCHID_CUDA_TRY(SwiGlu(ffn_, tb, I, act_, stream_));
    ORCHID_RETURN_IF_ERROR(
        gemm_.Run(act_, l.down_w, nullptr, tmp_, tb, H, I, GemmEpilogue::kNone, stream_));
    const float* next = i + 1 < qwen_.size() ? qwen_[i + 1].in_norm : final_norm_;
    ORCHID_CUDA_TRY(AddRmsNorm(tmp_, res_, next, eps_, tb, H, x_, stream_));
  }
  ORCHID_CUDA_TRY(PoolNormalize(x_, in.cu, in.mode, in.norm, sb, H, out_dev_, stream_));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Engine>> MakeCudaEngine(const std::string& model_dir,
                                               const CudaEngineOptions& options) {
  ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<CudaEngine> e, CudaEngine::Create(model_dir, options));
  return std::unique_ptr<Engine>(std::move(e));
}

CudaEngineStats GetCudaEngineStats(const Engine& engine) {
  const auto* e = dynamic_cast<const CudaEngine*>(&engine);
  return e != nullptr ? e->stats() : CudaEngineStats{};
}

}  // namespace orchid::cuda
