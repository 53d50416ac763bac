// CudaBackend (cuda_backend.h): weights, the arena, and each op as a launch sequence.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "backends/cuda/bf16_host.h"
#include "backends/cuda/cuda_check.h"

namespace orchid::cuda {
namespace {

constexpr size_t kAlign = 256;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
int RoundUp8(int n) { return (n + 7) / 8 * 8; }

// An op that Supports() refuses reaching its Do* (the base class asks first): a bug.
Status Refused(const char* op) {
  return Status::Internal(std::string("cuda backend: ") + op + " reached although refused");
}

std::atomic<OpProfiler*> g_profiler{nullptr};  // SetOpProfiler

}  // namespace

// --- profiling -----------------------------------------------------------------------------

void SetOpProfiler(OpProfiler* p) { g_profiler.store(p); }

OpProfiler::~OpProfiler() {
  std::lock_guard<std::mutex> lock(mu_);
  WaitRecords();
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
  for (cudaEvent_t e : {start_, stop_}) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

cudaEvent_t OpProfiler::TakeEvent() {
  if (!free_.empty()) {
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  const cudaError_t err = cudaEventCreate(&e);
  if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
  return err == cudaSuccess ? e : nullptr;
}

void OpProfiler::BeginPass(bool capturing) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(capturing ? skipped_ : passes_);
}

void OpProfiler::Start(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  // Both events are taken before anything is recorded, so that no host work (an event
  // creation) sits between the group's launches and its stop event.
  if (start_ == nullptr) start_ = TakeEvent();
  if (stop_ == nullptr) stop_ = TakeEvent();
  if (start_ == nullptr) return;
  const cudaError_t err = cudaEventRecord(start_, stream);
  if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
}

void OpProfiler::Stop(cudaStream_t stream, const std::string& label, double flops, double attn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (start_ == nullptr || stop_ == nullptr) return;  // Start failed (error_ says why)
  const cudaError_t err = cudaEventRecord(stop_, stream);
  if (err != cudaSuccess) {
    if (error_ == cudaSuccess) error_ = err;
    return;
  }
  auto [it, added] = index_.emplace(label, entries_.size());
  if (added) {
    entries_.emplace_back();
    entries_.back().label = label;
  }
  Entry& e = entries_[it->second];
  ++e.calls;
  e.flops += flops;
  e.attn_flops_per_len2 += attn;
  records_.push_back(Record{it->second, start_, stop_});
  start_ = stop_ = nullptr;
}

void OpProfiler::WaitRecords() {
  for (const Record& r : records_) {
    float ms = 0.f;
    cudaError_t err = cudaEventSynchronize(r.stop);
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, r.start, r.stop);
    if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
    entries_[r.entry].ms += double(ms);
    free_.push_back(r.start);
    free_.push_back(r.stop);
  }
  records_.clear();
}

Status OpProfiler::Collect() {
  std::lock_guard<std::mutex> lock(mu_);
  WaitRecords();
  const cudaError_t err = error_;
  error_ = cudaSuccess;
  return CudaStatus(err, "OpProfiler");
}

void OpProfiler::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  WaitRecords();
  entries_.clear();
  index_.clear();
  passes_ = skipped_ = 0;
  error_ = cudaSuccess;
}

std::vector<OpProfiler::Entry> OpProfiler::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

int64_t OpProfiler::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

int64_t OpProfiler::skipped_passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return skipped_;
}

// --- the backend ---------------------------------------------------------------------------

CudaBackend::~CudaBackend() {
  for (void* p : allocations_) cudaFree(p);
}

Status CudaBackend::Init() { return gemm_.Init(); }

Result<void*> CudaBackend::DeviceAlloc(size_t bytes) {
  void* p = nullptr;
  ORCHID_CUDA_TRY(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  allocations_.push_back(p);
  return p;
}

Result<bf16*> CudaBackend::UploadBf16(const float* src, size_t n, size_t padded_n) {
  std::vector<uint16_t> h(padded_n, 0);  // the padding is zero
  for (size_t i = 0; i < n; ++i) h[i] = FloatToBf16Bits(src[i]);
  ORCHID_ASSIGN_OR_RETURN(void* p, DeviceAlloc(h.size() * sizeof(uint16_t)));
  ORCHID_CUDA_TRY(cudaMemcpy(p, h.data(), h.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  return static_cast<bf16*>(p);
}

Result<float*> CudaBackend::UploadF32(const Tensor& t) {
  return UploadF32(t.data(), t.numel(), t.numel());
}

Result<float*> CudaBackend::UploadF32(const float* src, size_t n, size_t padded_n) {
  std::vector<float> h(padded_n, 0.f);  // the padding is zero
  std::copy(src, src + n, h.begin());
  ORCHID_ASSIGN_OR_RETURN(void* p, DeviceAlloc(h.size() * sizeof(float)));
  ORCHID_CUDA_TRY(cudaMemcpy(p, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return static_cast<float*>(p);
}

// --- load time -----------------------------------------------------------------------------

Result<int> CudaBackend::DoAddLinear(const Tensor& w, const Tensor* bias, ops::LinearOptions o) {
  (void)o;  // every product is bf16 on CUDA (cuda_backend.h)
  LinearLayer l;
  l.n = int(w.dim(0));
  l.k = int(w.dim(1));
  l.n_pad = RoundUp8(l.n);  // (Supports() checked k, cuBLASLt's alignment)
  // Zero rows n .. n_pad - 1: their outputs are zero and never copied out.
  ORCHID_ASSIGN_OR_RETURN(
      l.w, UploadBf16(w.data(), size_t(l.n) * size_t(l.k), size_t(l.n_pad) * size_t(l.k)));
  if (bias != nullptr) {
    // Both types: the GEMM's bias has its output's type (bf16 or fp32 buffer, known per op).
    ORCHID_ASSIGN_OR_RETURN(l.bias, UploadBf16(bias->data(), size_t(l.n), size_t(l.n_pad)));
    ORCHID_ASSIGN_OR_RETURN(l.bias_f32, UploadF32(bias->data(), size_t(l.n), size_t(l.n_pad)));
  }
  linears_.push_back(l);
  return int(linears_.size()) - 1;
}

Result<int> CudaBackend::DoAddNorm(ops::NormKind kind, const Tensor& weight, const Tensor* bias,
                                   float eps) {
  NormLayer n;
  n.kind = kind;
  n.eps = eps;
  ORCHID_ASSIGN_OR_RETURN(n.weight, UploadF32(weight));
  if (bias != nullptr) {
    ORCHID_ASSIGN_OR_RETURN(n.bias, UploadF32(*bias));
  }
  norms_.push_back(n);
  return int(norms_.size()) - 1;
}

Result<int> CudaBackend::DoAddTable(Tensor t) {
  ORCHID_ASSIGN_OR_RETURN(bf16 * p, UploadBf16(t.data(), t.numel(), t.numel()));
  tables_.push_back(p);
  return int(tables_.size()) - 1;
}

// --- plan and arena ------------------------------------------------------------------------

Status CudaBackend::Plan(const std::function<Status()>& forward) {
  if (allocated_) return Status::Internal("cuda backend: Plan after Allocate");
  planning_ = true;
  Status st;
  for (bool prune : {false, true}) {
    prune_ = prune;
    pending_.reset();
    st = forward();
    if (st.ok()) st = Flush();
    if (!st.ok()) break;
  }
  planning_ = false;
  prune_ = false;
  pending_.reset();
  if (!st.ok()) return st;
  planned_ = true;
  return Status::Ok();
}

Status CudaBackend::Allocate(int max_tokens, int max_seqs) {
  if (allocated_) return Status::Internal("cuda backend: Allocate called twice");
  if (max_tokens <= 0 || max_seqs <= 0) {
    return Status::Internal("cuda backend: Allocate needs positive bucket sizes");
  }
  max_tokens_ = max_tokens;
  max_seqs_ = max_seqs;
  auto max_rows = [&](ops::Rows r) {
    return size_t(r == ops::Rows::kTokens ? max_tokens : max_seqs);
  };

  // Scratch capacities (bf16 elements).
  if (planned_) {
    for (int s = 0; s < kNumScratch; ++s) {
      size_t elems = 0;
      for (ops::Rows r : {ops::Rows::kTokens, ops::Rows::kPooled, ops::Rows::kSequences}) {
        elems = std::max(elems, max_rows(r) * size_t(plan_width_[s][int(r)]));
      }
      scratch_elems_[s] = elems;
    }
  } else {
    // No plan: the widest row any op could put there, over all tokens (a padded-width GEMM
    // output may be fp32: two bf16 elements per value).
    int width = 0;
    for (const ops::BufferDecl& d : decls()) width = std::max(width, d.width);
    for (const LinearLayer& l : linears_) {
      width = std::max({width, l.n_pad == l.n ? l.n : 2 * l.n_pad, l.k});
    }
    for (size_t& e : scratch_elems_) e = size_t(max_tokens) * size_t(width);
  }

  const std::vector<ops::BufferDecl>& ds = decls();
  std::vector<size_t> offsets(ds.size());
  size_t total = 0;
  for (size_t i = 0; i < ds.size(); ++i) {
    const size_t elem = ds[i].precision == ops::Precision::kActivation ? 2 : 4;
    offsets[i] = total;
    total += AlignUp(max_rows(ds[i].rows) * size_t(ds[i].width) * elem);
  }
  size_t scratch_off[kNumScratch];
  for (int s = 0; s < kNumScratch; ++s) {
    scratch_off[s] = total;
    total += AlignUp(scratch_elems_[s] * sizeof(uint16_t));
  }
  const size_t cu_off = total;
  total += AlignUp((size_t(max_seqs) + 1) * sizeof(int32_t));
  const size_t flags_off = total;
  total += AlignUp(size_t(max_seqs));

  ORCHID_ASSIGN_OR_RETURN(void* arena, DeviceAlloc(total));
  arena_bytes_ = total;
  auto* base = static_cast<unsigned char*>(arena);
  buffers_.resize(ds.size());
  for (size_t i = 0; i < ds.size(); ++i) buffers_[i] = base + offsets[i];
  for (int s = 0; s < kNumScratch; ++s) {
    scratch_[s] = scratch_elems_[s] > 0 ? reinterpret_cast<bf16*>(base + scratch_off[s]) : nullptr;
  }
  identity_cu_ = reinterpret_cast<int32_t*>(base + cu_off);
  zero_flags_ = base + flags_off;

  // Defined contents everywhere (GEMMs read padding rows; their results are never used), then
  // the identity cu_seqlens.
  ORCHID_CUDA_TRY(cudaMemsetAsync(arena, 0, total, stream_));
  std::vector<int32_t> cu(size_t(max_seqs) + 1);
  for (size_t i = 0; i < cu.size(); ++i) cu[i] = int32_t(i);
  ORCHID_CUDA_TRY(cudaMemcpyAsync(identity_cu_, cu.data(), cu.size() * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, stream_));
  ORCHID_CUDA_TRY(cudaStreamSynchronize(stream_));  // `cu` is a local
  allocated_ = true;
  return Status::Ok();
}

void CudaBackend::Begin(const Inputs& device_inputs, int tb, int sb, bool prune) {
  in_ = device_inputs;
  tb_ = tb;
  sb_ = sb;
  prune_ = prune;
  pending_.reset();
  prof_ = g_profiler.load();
  if (prof_ != nullptr) {
    // A pass being captured into a graph is not timed (events would become graph nodes, and a
    // replay runs none of this code).
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    const bool capturing = cudaStreamIsCapturing(stream_, &capture) != cudaSuccess ||
                           capture != cudaStreamCaptureStatusNone;
    prof_->BeginPass(capturing);
    if (capturing) prof_ = nullptr;
  }
}

Status CudaBackend::Finish() {
  const Status st = Flush();
  prof_ = nullptr;  // the pass is over: nothing may use the profiler before the next Begin
  return st;
}

int CudaBackend::rows(ops::Buffer b) const {
  return decl(b).rows == ops::Rows::kTokens ? tb_ : sb_;
}

Status CudaBackend::NeedScratch(Scratch s, ops::Rows domain, int width) {
  if (planning_) {
    int& w = plan_width_[s][int(domain)];
    w = std::max(w, width);
    return Status::Ok();
  }
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  const size_t rows_now = size_t(domain == ops::Rows::kTokens ? tb_ : sb_);
  if (tb_ > max_tokens_ || sb_ > max_seqs_ || rows_now * size_t(width) > scratch_elems_[s]) {
    return Status::Internal("cuda backend: scratch " + std::to_string(int(s)) + " holds " +
                            std::to_string(scratch_elems_[s]) + " elements, the op needs " +
                            std::to_string(rows_now * size_t(width)) +
                            " (an op form that Plan did not see?)");
  }
  return Status::Ok();
}

Status CudaBackend::Touch(ops::Buffer b) {
  if (pending_ && pending_->residual.id == b.id) return Flush();
  return Status::Ok();
}

Status CudaBackend::Flush() {
  if (!pending_) return Status::Ok();
  const ops::Buffer r = pending_->residual;
  pending_.reset();
  if (planning_) return Status::Ok();
  const int width = decl(r).width;
  ORCHID_RETURN_IF_ERROR(NeedScratch(kDelta, decl(r).rows, width));
  ProfStart();
  if (is_bf16(r)) {
    ORCHID_CUDA_TRY(ResidualAdd(scratch_[kDelta], bf(r), rows(r), width, stream_));
  } else {
    ORCHID_CUDA_TRY(ResidualAdd(scratch_[kDelta], f32(r), rows(r), width, stream_));
  }
  ProfStop([] { return std::string("ResidualAdd (flush)"); });
  return Status::Ok();
}

// --- ops -----------------------------------------------------------------------------------

Status CudaBackend::DoEmbed(const ops::EmbedOp& op, ops::Buffer out) {
  // Supports(): word rows alone into fp32 (no norm), or word (+ position) (+ token type) rows
  // and a LayerNorm into bf16.
  const int H = decl(out).width;
  ORCHID_RETURN_IF_ERROR(Touch(out));
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  if (!op.norm.valid()) {
    ProfStart();
    ORCHID_CUDA_TRY(EmbedGather(in_.ids, tables_[size_t(op.word.id)], tb_, H, f32(out), stream_));
    ProfStop([] { return std::string("Embed gather"); });
    return Status::Ok();
  }
  const NormLayer& n = norms_[size_t(op.norm.id)];
  const bf16* position = op.position.valid() ? tables_[size_t(op.position.id)] : nullptr;
  const bf16* type = op.type.valid() ? tables_[size_t(op.type.id)] : nullptr;
  ProfStart();
  ORCHID_CUDA_TRY(EmbedLayerNorm(in_.ids, in_.types, in_.positions, op.position_offset,
                                 tables_[size_t(op.word.id)], position, type, n.weight, n.bias,
                                 n.eps, tb_, H, bf(out), stream_));
  ProfStop([] { return std::string("Embed LayerNorm"); });
  return Status::Ok();
}

Status CudaBackend::DoLinear(ops::Buffer in, ops::LinearWeight w, ops::Buffer out,
                             ops::Epilogue e) {
  const LinearLayer& l = linears_[size_t(w.id)];
  const bool residual = e == ops::Epilogue::kResidualAdd;  // (n_pad == n: Supports())
  ORCHID_RETURN_IF_ERROR(Touch(in));
  // The delta scratch holds one pending add: a new one flushes whatever is pending.
  ORCHID_RETURN_IF_ERROR(residual ? Flush() : Touch(out));

  const ops::Rows domain = decl(in).rows;
  const bf16* x = nullptr;
  if (is_bf16(in)) {
    x = bf(in);
  } else {
    ORCHID_RETURN_IF_ERROR(NeedScratch(kConvertIn, domain, l.k));
    x = scratch_[kConvertIn];
  }
  // The GEMM's output: bf16 (y) or, for an fp32 buffer outside a residual add, fp32 (y32),
  // straight into `out` when its width needs no padding, else into convert_out scratch.
  const bool fp32_out = !residual && !is_bf16(out);
  const bool direct = !residual && l.n_pad == l.n;
  bf16* y = nullptr;
  float* y32 = nullptr;
  if (residual) {
    ORCHID_RETURN_IF_ERROR(NeedScratch(kDelta, decl(out).rows, l.n));
    y = scratch_[kDelta];
  } else if (direct) {
    if (fp32_out) {
      y32 = f32(out);
    } else {
      y = bf(out);
    }
  } else {
    ORCHID_RETURN_IF_ERROR(NeedScratch(kConvertOut, domain, fp32_out ? 2 * l.n_pad : l.n_pad));
    if (fp32_out) {
      y32 = reinterpret_cast<float*>(scratch_[kConvertOut]);
    } else {
      y = scratch_[kConvertOut];
    }
  }
  if (planning_) {
    if (residual) pending_ = Pending{out};
    return Status::Ok();
  }

  const int R = rows(in);
  // Profiling: each launch timed apart ("Linear n=3072 k=768 gelu: gemm", "...: gelu", ...).
  auto label = [&](const char* part) {
    return [&, part] {
      return "Linear n=" + std::to_string(l.n) + " k=" + std::to_string(l.k) +
             (e == ops::Epilogue::kGelu ? " gelu"
              : residual                ? " +res"
                                        : "") +
             (is_bf16(in) ? "" : " f32-in") + (fp32_out ? " f32-out" : "") +
             (domain == ops::Rows::kTokens ? "" : " pooled") + ": " + part;
    };
  };
  const double gemm_flops = 2.0 * R * l.n_pad * l.k;
  if (!is_bf16(in)) {
    ProfStart();
    ORCHID_CUDA_TRY(Fp32ToBf16(f32(in), R, l.k, scratch_[kConvertIn], stream_));
    ProfStop(label("f32->bf16"));
  }
  const GemmEpilogue ep = l.bias != nullptr ? GemmEpilogue::kBias : GemmEpilogue::kNone;
  if (fp32_out) {
    ProfStart();
    ORCHID_RETURN_IF_ERROR(gemm_.Run(x, l.w, l.bias_f32, y32, R, l.n_pad, l.k, ep, stream_));
    ProfStop(label("gemm"), gemm_flops);
    if (e == ops::Epilogue::kGelu) {
      ProfStart();
      ORCHID_CUDA_TRY(GeluErf(y32, R, l.n_pad, stream_));
      ProfStop(label("gelu"));
    }
    if (!direct) {
      ProfStart();
      ORCHID_CUDA_TRY(CopyColumns(y32, R, l.n_pad, l.n, f32(out), stream_));
      ProfStop(label("copy cols"));
    }
    return Status::Ok();
  }
  ProfStart();
  ORCHID_RETURN_IF_ERROR(gemm_.Run(x, l.w, l.bias, y, R, l.n_pad, l.k, ep, stream_));
  ProfStop(label("gemm"), gemm_flops);
  if (e == ops::Epilogue::kGelu) {
    ProfStart();
    ORCHID_CUDA_TRY(GeluErf(y, R, l.n_pad, stream_));
    ProfStop(label("gelu"));
  }
  if (residual) {
    pending_ = Pending{out};
    return Status::Ok();
  }
  if (!direct) {
    ProfStart();
    ORCHID_CUDA_TRY(CopyColumns(y, R, l.n_pad, l.n, bf(out), stream_));
    ProfStop(label("copy cols"));
  }
  return Status::Ok();
}

Status CudaBackend::DoNorm(ops::Buffer in, ops::NormWeight w, ops::Buffer out) {
  const NormLayer& n = norms_[size_t(w.id)];
  // Supports(): a LayerNorm bf16 -> bf16, an RMSNorm fp32 -> bf16.
  const bool layer_norm = n.kind == ops::NormKind::kLayerNorm;
  // A pending add into `in` fuses: LayerNorm only in place (the kernel does not write the sum
  // back to `in` otherwise); RMSNorm always (AddRmsNorm updates the fp32 residual in place).
  const bool pending_on_in = pending_ && pending_->residual.id == in.id;
  const bool fuse = pending_on_in && (!layer_norm || in.id == out.id);
  if (fuse) {
    pending_.reset();
  } else {
    ORCHID_RETURN_IF_ERROR(Touch(in));
    ORCHID_RETURN_IF_ERROR(Touch(out));
  }
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  const bf16* delta = fuse ? scratch_[kDelta] : nullptr;
  const int R = rows(in), H = w.width;
  ProfStart();
  if (layer_norm) {
    ORCHID_CUDA_TRY(AddLayerNorm(delta, bf(in), n.weight, n.bias, n.eps, R, H, bf(out), stream_));
  } else {
    ORCHID_CUDA_TRY(AddRmsNorm(delta, f32(in), n.weight, n.eps, R, H, bf(out), stream_));
  }
  ProfStop([&] {
    return std::string(layer_norm ? "Norm LayerNorm" : "Norm RMSNorm") + (fuse ? " +res" : "") +
           (decl(in).rows == ops::Rows::kTokens ? "" : " pooled");
  });
  return Status::Ok();
}

Status CudaBackend::DoQkNormRope(ops::Buffer qkv, const ops::RopeOptions& o) {
  // Supports(): bf16, head_dim <= 256, default rotary embeddings, RMSNorms of one epsilon.
  const NormLayer* q = o.q_norm.valid() ? &norms_[size_t(o.q_norm.id)] : nullptr;
  const NormLayer* k = o.k_norm.valid() ? &norms_[size_t(o.k_norm.id)] : nullptr;
  ORCHID_RETURN_IF_ERROR(Touch(qkv));
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  ProfStart();
  ORCHID_CUDA_TRY(cuda::QkNormRope(bf(qkv), in_.positions, q != nullptr ? q->weight : nullptr,
                                   k != nullptr ? k->weight : nullptr, q != nullptr ? q->eps : 0.f,
                                   float(o.theta), tb_, o.num_heads, o.num_kv_heads, o.head_dim,
                                   stream_, float(o.inv_freq_divisor)));
  ProfStop([] { return std::string("QkNormRope"); });
  return Status::Ok();
}

Status CudaBackend::DoAttention(ops::Buffer qkv, ops::Buffer out, const ops::AttentionOptions& o) {
  // Supports(): bf16, no bias, relative positions, window or scale, an instantiated head_dim.
  ORCHID_RETURN_IF_ERROR(Touch(qkv));
  ORCHID_RETURN_IF_ERROR(Touch(out));
  const bool pooled = decl(out).rows == ops::Rows::kPooled;
  const int W = decl(out).width;
  if (pooled) ORCHID_RETURN_IF_ERROR(NeedScratch(kAttention, ops::Rows::kTokens, W));
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  const float scale = 1.f / std::sqrt(float(o.head_dim));
  bf16* dst = pooled ? scratch_[kAttention] : bf(out);
  auto label = [&](const char* part) {
    return [&, part] {
      return "Attention h=" + std::to_string(o.num_heads) +
             " kv=" + std::to_string(o.num_kv_heads) + " d=" + std::to_string(o.head_dim) +
             (o.causal ? " causal" : "") + part;
    };
  };
  ProfStart();
  ORCHID_CUDA_TRY(RaggedFlashAttention(bf(qkv), in_.cu, in_.tile_seq, in_.tile_q0, in_.num_tiles,
                                       o.num_heads, o.num_kv_heads, o.head_dim, scale, o.causal,
                                       dst, stream_));
  // QK^T and PV: 4 head_dim num_heads FLOPs per (query, key) pair, half the pairs when causal.
  ProfStop(label(""), 0, 4.0 * o.head_dim * o.num_heads * (o.causal ? 0.5 : 1.0));
  if (pooled) {
    ProfStart();
    ORCHID_CUDA_TRY(
        GatherPooledRows(scratch_[kAttention], W, in_.cu, in_.mode, sb_, bf(out), stream_));
    ProfStop(label(": gather pooled"));
  }
  return Status::Ok();
}

Status CudaBackend::DoAdd(ops::Buffer in, ops::Buffer out) {
  (void)in;
  (void)out;
  return Refused("Add");
}

Result<int> CudaBackend::DoAddLora(const std::vector<ops::LoraPart>& parts, int n, int k,
                                   ops::LoraInput input) {
  (void)parts;
  (void)n;
  (void)k;
  (void)input;
  return Status::Unimplemented("cuda backend: no task adapters (LoRA)");
}

Status CudaBackend::DoLoraAdd(ops::Buffer in, ops::LoraWeight w, ops::Buffer out) {
  (void)in;
  (void)w;
  (void)out;
  return Refused("LoraAdd");
}

Status CudaBackend::DoVocabMaxPool(ops::Buffer hidden, ops::LinearWeight w, ops::Buffer out) {
  (void)hidden;
  (void)w;
  (void)out;
  return Refused("VocabMaxPool");
}

Status CudaBackend::DoNormalize(ops::Buffer x) {
  (void)x;
  return Refused("Normalize");
}

Status CudaBackend::DoGlu(ops::Buffer gate_up, ops::Buffer out, ops::Gate gate) {
  (void)gate;  // SwiGLU, bf16 -> bf16 (Supports())
  ORCHID_RETURN_IF_ERROR(Touch(gate_up));
  ORCHID_RETURN_IF_ERROR(Touch(out));
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  ProfStart();
  ORCHID_CUDA_TRY(cuda::SwiGlu(bf(gate_up), rows(out), decl(out).width, bf(out), stream_));
  ProfStop([] { return std::string("SwiGlu"); });
  return Status::Ok();
}

Status CudaBackend::DoActivate(ops::Buffer x, ops::Activation a) {
  ORCHID_RETURN_IF_ERROR(Touch(x));
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  if (a == ops::Activation::kLog1pRelu) return Refused("Activate (log1p relu)");
  const bool relu = a == ops::Activation::kRelu;
  auto label = [&] {
    return std::string("Activate ") + (a == ops::Activation::kGelu ? "gelu"
                                       : relu                      ? "relu"
                                                                   : "tanh");
  };
  ProfStart();
  if (a == ops::Activation::kGelu) {
    ORCHID_CUDA_TRY(is_bf16(x) ? GeluErf(bf(x), rows(x), decl(x).width, stream_)
                               : GeluErf(f32(x), rows(x), decl(x).width, stream_));
    ProfStop(label);
    return Status::Ok();
  }
  if (is_bf16(x)) {
    ORCHID_CUDA_TRY(relu ? Relu(bf(x), rows(x), decl(x).width, stream_)
                         : Tanh(bf(x), rows(x), decl(x).width, stream_));
  } else {
    ORCHID_CUDA_TRY(relu ? Relu(f32(x), rows(x), decl(x).width, stream_)
                         : Tanh(f32(x), rows(x), decl(x).width, stream_));
  }
  ProfStop(label);
  return Status::Ok();
}

Status CudaBackend::DoGatherPooled(ops::Buffer tokens, ops::Buffer pooled) {
  ORCHID_RETURN_IF_ERROR(Touch(tokens));
  ORCHID_RETURN_IF_ERROR(Touch(pooled));
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  const int W = decl(pooled).width;
  ProfStart();
  if (is_bf16(pooled)) {
    ORCHID_CUDA_TRY(GatherPooledRows(bf(tokens), W, in_.cu, in_.mode, sb_, bf(pooled), stream_));
  } else {
    ORCHID_CUDA_TRY(GatherPooledRows(f32(tokens), W, in_.cu, in_.mode, sb_, f32(pooled), stream_));
  }
  ProfStop([] { return std::string("GatherPooled"); });
  return Status::Ok();
}

Status CudaBackend::DoPool(ops::Buffer hidden, ops::Buffer out, bool normalize) {
  // (from a bf16 buffer: Supports())
  ORCHID_RETURN_IF_ERROR(Touch(hidden));
  ORCHID_RETURN_IF_ERROR(Touch(out));
  if (planning_) return Status::Ok();
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  // A kPooled input holds one row per sequence already: pool it as one-row sequences.
  const int32_t* cu = decl(hidden).rows == ops::Rows::kPooled ? identity_cu_ : in_.cu;
  const uint8_t* flags = normalize ? in_.norm : zero_flags_;
  ProfStart();
  ORCHID_CUDA_TRY(
      PoolNormalize(bf(hidden), cu, in_.mode, flags, sb_, decl(out).width, f32(out), stream_));
  ProfStop([] { return std::string("Pool"); });
  return Status::Ok();
}

}  // namespace orchid::cuda
