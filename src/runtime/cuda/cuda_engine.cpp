// CudaEngine (cuda_engine.h): the runner around a model family (src/families) on the CUDA
// backend (src/backends/cuda/cuda_backend.h): buckets, the input block, graphs, Submit and the
// completion thread. It knows ops::Backend, Family and the registry's ModelSpec, never a
// family's tensors or layers; the kernels are in ops.cu / attention.cu, the GEMMs in gemm.cpp.
//
// Per-bucket input block (device, at a fixed address per (token bucket tb, sequence bucket sb)
// so a captured graph reads new inputs after each refill; the host fills one slot of a ring of
// pinned blocks with the same layout and sends it with one cudaMemcpyAsync):
//   int32 ids[tb] | types[tb] | positions[tb] | cu[sb + 1] | tile_seq[nt] | tile_q0[nt]
//   uint8 mode[sb] | norm[sb]                                   (nt = AttentionTiles(tb, sb))
// Padding tokens have id 0, type 0, position 0 (valid table rows); cu[s] for the padding
// sequences s > S repeats the real token count, so they are empty; their mode is 0 (pooling and
// the pooled-row gathers write zeros for them).
//
// Forward pass: backend.Begin(inputs, tb, sb, prune); family.Forward(backend);
// backend.Finish(). `prune` is true when every sequence of the chunk pools its CLS or last
// token (the family may then run its last layer on the pooled rows only); it is decided on the
// host from the batch before the pass, and graphs are kept per (tb, sb, prune). The result,
// family.output() rows [0, S) ([sb, info.output_dim()] fp32 in the arena), is copied to a
// pinned host buffer.
//
// Locks: submit_mu_ (Submit/CaptureAll: staging ring, arena, stream order, graphs_, the
// backend), pool_mu_ (pinned result buffers and events, shared with the completion thread),
// pending_mu_ (the completion queue). Never two at once except pool_mu_ inside submit_mu_.
#include "runtime/cuda/cuda_engine.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops.h"
#include "description/registry.h"
#include "families/family.h"

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
    case CudaGraphs::kOff:
      return "off";
    case CudaGraphs::kLazy:
      return "lazy";
    case CudaGraphs::kEagerCaptureAll:
      return "eager-capture-all";
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

int LengthBucket(int max_len, int token_bucket) {
  int b = 64;
  while (b < max_len) b *= 2;
  return std::min(b, token_bucket);
}

int AttentionTiles(int token_bucket, int seq_bucket) {
  return (token_bucket + kAttentionTileRows - 1) / kAttentionTileRows + seq_bucket;
}

Status BuildAttentionTiles(const int32_t* cu, int num_seqs, int num_tiles, int32_t* tile_seq,
                           int32_t* tile_q0) {
  std::vector<int> order(static_cast<size_t>(num_seqs));
  for (int s = 0; s < num_seqs; ++s) order[size_t(s)] = s;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cu[a + 1] - cu[a] > cu[b + 1] - cu[b]; });
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

// Pointers of one bucket's input block (device or pinned host: the same layout).
struct InputBlock {
  int32_t *ids, *types, *pos, *cu, *tile_seq, *tile_q0;
  uint8_t *mode, *norm;
  int num_tiles;
  size_t bytes;  // size of the block
};

size_t InputBytes(int tb, int sb) {
  const int nt = AttentionTiles(tb, sb);
  return sizeof(int32_t) * (3 * size_t(tb) + size_t(sb) + 1 + 2 * size_t(nt)) + 2 * size_t(sb);
}

InputBlock InputsAt(void* base, int tb, int sb) {
  InputBlock in{};
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
  in.num_tiles = nt;
  in.bytes = InputBytes(tb, sb);
  return in;
}

// Whether a chunk's pooling reads one row per sequence (CLS or last token) only.
bool PoolsOneRow(Pooling p) { return p == Pooling::kCls || p == Pooling::kLastToken; }

class CudaEngine final : public Engine {
 public:
  static Result<std::unique_ptr<CudaEngine>> Create(const std::string& dir,
                                                    const CudaEngineOptions& options);
  ~CudaEngine() override;
  const ModelInfo& info() const override { return info_; }
  LazyResult Submit(RaggedBatch batch) override;
  CudaEngineStats stats() const {
    return {eager_.load(),       captures_.load(),         replays_.load(),
            graph_count_.load(), capture_failures_.load(), attn_cudnn_.load(),
            attn_own_.load(),    attn_fallbacks_.load(),   cudnn_plans_.load()};
  }

 private:
  struct Graph {
    int seen = 0;
    bool capture_failed = false;  // run this bucket eagerly from now on
    cudaGraphExec_t exec = nullptr;
  };
  // (token bucket, sequence bucket, prune, length bucket: 0 unless the backend needs one)
  using GraphKey = std::tuple<int, int, bool, int>;
  struct Pending {
    cudaEvent_t done = nullptr;
    float* host = nullptr;
    size_t capacity = 0;  // floats
    int rows = 0, dim = 0;
    LazyResult::Promise promise;
  };

  explicit CudaEngine(const CudaEngineOptions& o) : opt_(o) {}
  Status Init(const std::string& dir);

  Status CheckBatch(const RaggedBatch& b) const;
  Status Enqueue(const RaggedBatch& b, float* host_out);
  Status RunChunk(const RaggedBatch& b, int s0, int s1, float* host_out);
  // Eager / capture / replay per the graph policy.
  Status RunForward(int tb, int sb, bool prune, int lb);
  Status Forward(int tb, int sb, bool prune, int lb);  // enqueues the kernels (capturable)
  Status Capture(int tb, int sb, bool prune, int lb, cudaGraphExec_t* exec);
  Status CaptureAll();

  float* AcquireHost(size_t floats, size_t* capacity);
  void ReleaseHost(float* p, size_t capacity);
  cudaEvent_t AcquireEvent();
  void CompletionLoop();

  CudaEngineOptions opt_;
  ModelInfo info_;
  int out_dim_ = 0;                    // info_.output_dim()
  int max_tokens_ = 0, max_seqs_ = 0;  // largest buckets
  bool length_buckets_ = false;        // the backend's attention needs a length bucket

  // The backend (weights, arena) and the family on it; the family is destroyed first.
  std::unique_ptr<CudaBackend> backend_;
  std::unique_ptr<Family> family_;
  void* input_dev_ = nullptr;  // the input block, sized for the largest bucket

  // Host staging: a ring of pinned input blocks, each free again once its copy event fires.
  // Submit() blocks only when a batch is split into more chunks than the ring holds (then it
  // waits for the copy of the chunk kStagingSlots back, i.e. for the GPU to catch up).
  static constexpr int kStagingSlots = 8;
  void* staging_[kStagingSlots] = {};
  cudaEvent_t staging_done_[kStagingSlots] = {};
  int next_staging_ = 0;

  cudaStream_t stream_ = nullptr;
  std::map<GraphKey, Graph> graphs_;
  std::atomic<uint64_t> eager_{0}, captures_{0}, replays_{0}, graph_count_{0}, capture_failures_{0};
  // The backend's attention counters, copied after each pass (stats() reads them unlocked).
  std::atomic<uint64_t> attn_cudnn_{0}, attn_own_{0}, attn_fallbacks_{0}, cudnn_plans_{0};
  void CopyAttentionStats() {
    const CudaBackend::AttentionStats a = backend_->attention_stats();
    attn_cudnn_.store(a.cudnn_calls);
    attn_own_.store(a.own_calls);
    attn_fallbacks_.store(a.cudnn_fallbacks);
    cudnn_plans_.store(a.cudnn_plans);
  }

  std::mutex submit_mu_;  // Submit: staging, arena, stream order, graphs_, the backend

  std::mutex pool_mu_;  // pinned result buffers and events, shared with the completion thread
  std::vector<std::pair<float*, size_t>> free_host_;
  std::vector<cudaEvent_t> free_events_;

  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::deque<Pending> pending_;
  bool stop_ = false;
  std::thread completion_;
};

Result<std::unique_ptr<CudaEngine>> CudaEngine::Create(const std::string& dir,
                                                       const CudaEngineOptions& options) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) return Status::Unavailable("no CUDA device: " + why);
  if (options.max_batch_tokens < 64 || options.max_batch_sequences < 1 ||
      options.large_token_threshold < 64) {
    return Status::InvalidArgument(
        "CUDA engine options: max_batch_tokens >= 64, "
        "max_batch_sequences >= 1, large_token_threshold >= 64");
  }
  std::unique_ptr<CudaEngine> e(new CudaEngine(options));
  ORCHID_RETURN_IF_ERROR(e->Init(dir));
  return e;
}

Status CudaEngine::Init(const std::string& dir) {
  // What the model is, and whether this backend serves it, before touching the device.
  ORCHID_ASSIGN_OR_RETURN(ModelSpec spec, DescribeModel(dir));
  ORCHID_RETURN_IF_ERROR(CheckBackend(spec, BackendKind::kCuda));
  info_ = spec.info;
  out_dim_ = info_.output_dim();

  ORCHID_CUDA_TRY(cudaSetDevice(opt_.device));
  ORCHID_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  ORCHID_CUDA_TRY(PrepareAttentionKernels());
  backend_ = std::make_unique<CudaBackend>(stream_);
  ORCHID_RETURN_IF_ERROR(backend_->Init());
  // The backend refuses an op its kernels lack (op_support.h) while the family adds its
  // weights and, below, while it plans: either way before any batch, naming the model.
  auto refusal = [&spec](const Status& st) {
    if (st.code() != StatusCode::kUnimplemented) return st;
    return Status::Unimplemented(spec.dir + " (" + spec.info.architecture +
                                 "): the cuda backend cannot serve it: " + st.message());
  };
  auto family = LoadFamily(spec, *backend_);
  if (!family.ok()) return refusal(family.status());
  family_ = std::move(*family);
  const ops::BufferDecl& out = backend_->decl(family_->output());
  if (out.rows != ops::Rows::kSequences || out.width != out_dim_ ||
      out.precision != ops::Precision::kAccumulator) {
    return Status::Internal("CUDA engine: the family's output is not [sequences, " +
                            std::to_string(out_dim_) + "] fp32");
  }

  max_tokens_ = TokenBucket(opt_.max_batch_tokens, opt_.large_token_threshold);
  max_seqs_ = SequenceBucket(opt_.max_batch_sequences);
  // The family's op sequence once unpruned and once pruned, nothing launched: sizes the
  // backend's scratch and refuses an op form the backend lacks now rather than on a batch.
  if (Status st = backend_->Plan([this] { return family_->Forward(*backend_); }); !st.ok()) {
    return refusal(st);
  }
  ORCHID_RETURN_IF_ERROR(backend_->Allocate(max_tokens_, max_seqs_));
  // Which library runs attention (decided while planning), for /info and the log.
  length_buckets_ = backend_->length_bucketed();
  if (const std::string a = backend_->AttentionReport(); !a.empty()) {
    info_.engine_facts.push_back({"attention", a});
  }
  if (CudaBackend::GeluEpilogueMode() == CudaBackend::GeluEpilogue::kCublasLtTanh) {
    info_.engine_facts.push_back(
        {"gelu", "cuBLASLt bias + GELU epilogue (tanh approximation; ORCHID_CUDA_GELU=cublaslt)"});
  }

  // The largest input block over the buckets is the one of the largest buckets.
  const size_t input_bytes = InputBytes(max_tokens_, max_seqs_);
  ORCHID_CUDA_TRY(cudaMalloc(&input_dev_, input_bytes));
  ORCHID_CUDA_TRY(cudaMemsetAsync(input_dev_, 0, input_bytes, stream_));
  for (int i = 0; i < kStagingSlots; ++i) {
    ORCHID_CUDA_TRY(cudaHostAlloc(&staging_[i], input_bytes, cudaHostAllocDefault));
    ORCHID_CUDA_TRY(cudaEventCreateWithFlags(&staging_done_[i], cudaEventDisableTiming));
  }
  // The weights went up with cudaMemcpy from pageable memory on the legacy default stream,
  // which may return before the DMA has landed and which does not order work on stream_ (a
  // non-blocking stream); the arena was cleared on stream_. Wait for every stream of the device
  // before the first forward pass (CaptureAll below, or the first Submit).
  ORCHID_CUDA_TRY(cudaDeviceSynchronize());
  completion_ = std::thread([this] { CompletionLoop(); });
  if (opt_.graphs == CudaGraphs::kEagerCaptureAll) ORCHID_RETURN_IF_ERROR(CaptureAll());
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
  family_.reset();
  backend_.reset();  // weights, arena, cuBLASLt
  if (input_dev_ != nullptr) cudaFree(input_dev_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status CudaEngine::CheckBatch(const RaggedBatch& b) const {
  ORCHID_RETURN_IF_ERROR(b.Validate(info_));
  if (!b.attend_lens.empty()) {
    return Status::Unimplemented(
        "tokens that are not attended to (a ColBERT query's expansion) are not served by the "
        "cuda engine");
  }
  for (int s = 0; s < b.num_sequences(); ++s) {
    if (!b.pool_skips.empty() && b.pool_skips[size_t(s)] != 0) {
      return Status::Unimplemented(
          "pooling without the prompt's tokens (include_prompt: false) is not served by the cuda "
          "engine");
    }
    if (b.pooling[size_t(s)] == Pooling::kNone) {
      return Status::Unimplemented(
          "per-token output (pooling \"none\", /embed_all) is not served by the cuda engine");
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
  const int rows = batch.num_sequences(), dim = out_dim_;
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
  bool prune = true;
  int longest = 1;
  for (int s = s0; s < s1; ++s) {
    prune = prune && PoolsOneRow(b.pooling[size_t(s)]);
    longest = std::max(longest, b.seq_len(s));
  }
  const int lb = length_buckets_ ? LengthBucket(longest, tb) : 0;

  // Fill the pinned staging block once its previous copy has completed.
  const int slot = next_staging_;
  next_staging_ = (next_staging_ + 1) % kStagingSlots;
  ORCHID_CUDA_TRY(cudaEventSynchronize(staging_done_[slot]));
  const InputBlock h = InputsAt(staging_[slot], tb, sb);
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
  ORCHID_RETURN_IF_ERROR(BuildAttentionTiles(h.cu, sb, h.num_tiles, h.tile_seq, h.tile_q0));
  for (int i = 0; i < sb; ++i) {
    h.mode[i] = i < S ? uint8_t(b.pooling[size_t(s0 + i)]) : uint8_t(0);
    h.norm[i] = i < S ? uint8_t(b.normalize[size_t(s0 + i)] != 0) : uint8_t(0);
  }
  const InputBlock d = InputsAt(input_dev_, tb, sb);
  ORCHID_CUDA_TRY(cudaMemcpyAsync(d.ids, h.ids, h.bytes, cudaMemcpyHostToDevice, stream_));
  ORCHID_CUDA_TRY(cudaEventRecord(staging_done_[slot], stream_));

  const Status fwd = RunForward(tb, sb, prune, lb);
  CopyAttentionStats();
  ORCHID_RETURN_IF_ERROR(fwd);

  const size_t dim = size_t(out_dim_);
  ORCHID_CUDA_TRY(
      cudaMemcpyAsync(host_out + size_t(s0) * dim, backend_->device_f32(family_->output()),
                      size_t(S) * dim * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  return Status::Ok();
}

Status CudaEngine::RunForward(int tb, int sb, bool prune, int lb) {
  if (opt_.graphs == CudaGraphs::kOff) {
    ++eager_;
    return Forward(tb, sb, prune, lb);
  }
  Graph& g = graphs_[{tb, sb, prune, lb}];
  if (g.exec != nullptr) {
    ++replays_;
    return CudaStatus(cudaGraphLaunch(g.exec, stream_), "cudaGraphLaunch");
  }
  if (g.seen == 0 || g.capture_failed) {  // first sight: eager (loads kernels, GEMM plans)
    g.seen = 1;
    ++eager_;
    return Forward(tb, sb, prune, lb);
  }
  const Status cap = Capture(tb, sb, prune, lb, &g.exec);
  if (!cap.ok()) {
    // A bucket that cannot be captured still runs (eagerly); the counter makes it visible.
    g.capture_failed = true;
    g.exec = nullptr;
    ++capture_failures_;
    std::fprintf(stderr,
                 "orchid CUDA engine: graph capture failed for %d tokens x %d sequences%s "
                 "(length bucket %d), running it eagerly: %s\n",
                 tb, sb, prune ? " (pruned)" : "", lb, cap.ToString().c_str());
    ++eager_;
    return Forward(tb, sb, prune, lb);
  }
  ++captures_;
  graph_count_.store(graph_count_.load() + 1);
  ++replays_;
  return CudaStatus(cudaGraphLaunch(g.exec, stream_), "cudaGraphLaunch");
}

Status CudaEngine::Capture(int tb, int sb, bool prune, int lb, cudaGraphExec_t* exec) {
  ORCHID_CUDA_TRY(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const Status fwd = Forward(tb, sb, prune, lb);
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
  const int top =
      std::min(max_tokens_, TokenBucket(opt_.eager_capture_max_tokens, opt_.large_token_threshold));
  // The pruning the model's default pooling implies; batches with other pooling capture their
  // graphs lazily (second sight), like kLazy.
  const bool prune = PoolsOneRow(info_.default_pooling);
  // The input block of every bucket must hold a valid empty batch for the warm-up pass:
  // all-zero ids/types/positions, cu all zero (every sequence empty), no tiles, modes 0.
  // With cuDNN attention every length bucket a batch of (tb, sb) can have: 64, 128, ... tb.
  for (int tb = 64; tb <= top; tb = TokenBucket(tb + 1, opt_.large_token_threshold)) {
    for (int sb = 1; sb <= max_seqs_ && sb <= tb; sb *= 2) {
      const InputBlock d = InputsAt(input_dev_, tb, sb);
      ORCHID_CUDA_TRY(cudaMemsetAsync(d.ids, 0, d.bytes, stream_));
      const size_t tile_bytes = sizeof(int32_t) * size_t(d.num_tiles);
      ORCHID_CUDA_TRY(cudaMemsetAsync(d.tile_seq, 0xff, tile_bytes, stream_));
      for (int lb = length_buckets_ ? LengthBucket(1, tb) : 0;; lb = LengthBucket(lb + 1, tb)) {
        ++eager_;
        ORCHID_RETURN_IF_ERROR(Forward(tb, sb, prune, lb));
        Graph& g = graphs_[{tb, sb, prune, lb}];
        g.seen = 1;
        ORCHID_RETURN_IF_ERROR(Capture(tb, sb, prune, lb, &g.exec));
        ++captures_;
        graph_count_.store(graph_count_.load() + 1);
        if (!length_buckets_ || lb >= tb) break;
      }
    }
  }
  CopyAttentionStats();
  return CudaStatus(cudaStreamSynchronize(stream_), "CaptureAll");
}

Status CudaEngine::Forward(int tb, int sb, bool prune, int lb) {
  const InputBlock d = InputsAt(input_dev_, tb, sb);
  CudaBackend::Inputs in;
  in.ids = d.ids;
  in.types = d.types;
  in.positions = d.pos;
  in.cu = d.cu;
  in.tile_seq = d.tile_seq;
  in.tile_q0 = d.tile_q0;
  in.num_tiles = d.num_tiles;
  in.mode = d.mode;
  in.norm = d.norm;
  in.max_seq_len = lb;
  backend_->Begin(in, tb, sb, prune);
  ORCHID_RETURN_IF_ERROR(family_->Forward(*backend_));
  return backend_->Finish();
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
