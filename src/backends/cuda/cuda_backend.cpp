// CudaBackend (cuda_backend.h): weights, the pass, and each op as a launch sequence.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cuda/cuda_check.h"

namespace orchid::cuda {
namespace {

int RoundUp8(int n) { return (n + 7) / 8 * 8; }

// An op that Supports() refuses reaching its Do* (the base class asks first): a bug.
Status Refused(const char* op) {
  return Status::Internal(std::string("cuda backend: ") + op + " reached although refused");
}

}  // namespace

CudaBackend::~CudaBackend() = default;

CudaBackend::GeluEpilogue CudaBackend::GeluEpilogueMode() {
  static const GeluEpilogue mode = [] {
    const char* e = std::getenv("ORCHID_CUDA_GELU");
    return e != nullptr && std::strcmp(e, "cublaslt") == 0 ? GeluEpilogue::kCublasLtTanh
                                                           : GeluEpilogue::kSeparateErf;
  }();
  return mode;
}

Status CudaBackend::Init() {
  ORCHID_RETURN_IF_ERROR(gemm_.Init());
  if (const char* e = std::getenv("ORCHID_CUDNN_ATTENTION");
      e != nullptr && (std::strcmp(e, "0") == 0 || std::strcmp(e, "off") == 0)) {
    cudnn_off_ = "ORCHID_CUDNN_ATTENTION=" + std::string(e);
    return Status::Ok();
  }
  auto cudnn = CudnnAttention::Create(stream_);
  if (cudnn.ok()) {
    cudnn_ = std::move(*cudnn);
  } else if (cudnn.status().code() == StatusCode::kUnavailable) {
    cudnn_off_ = cudnn.status().message();  // not installed, or off: the own kernel
  } else {
    // Loaded but its handle failed: the own kernel serves, and /info and the log say why.
    cudnn_off_ = "cuDNN failed to start: " + cudnn.status().message();
  }
  return Status::Ok();
}

bool CudaBackend::length_bucketed() const {
  for (const auto& [key, route] : routes_) {
    (void)key;
    if (route.cudnn) return true;
  }
  return false;
}

std::string CudaBackend::AttentionReport() const {
  std::string r;
  for (const auto& [key, route] : routes_) {
    (void)key;
    if (!r.empty()) r += "; ";
    r += route.why;
  }
  return r;
}

CudaBackend::AttentionStats CudaBackend::attention_stats() const {
  AttentionStats s = attn_stats_;
  s.cudnn_plans = cudnn_ != nullptr ? cudnn_->plans() : 0;
  return s;
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
      l.w, memory_.UploadBf16(w.data(), size_t(l.n) * size_t(l.k), size_t(l.n_pad) * size_t(l.k)));
  if (bias != nullptr) {
    // Both types: the GEMM's bias has its output's type (bf16 or fp32 buffer, known per op).
    ORCHID_ASSIGN_OR_RETURN(l.bias, memory_.UploadBf16(bias->data(), size_t(l.n), size_t(l.n_pad)));
    ORCHID_ASSIGN_OR_RETURN(l.bias_f32,
                            memory_.UploadF32(bias->data(), size_t(l.n), size_t(l.n_pad)));
  }
  linears_.push_back(l);
  return int(linears_.size()) - 1;
}

Result<int> CudaBackend::DoAddNorm(ops::NormKind kind, const Tensor& weight, const Tensor* bias,
                                   float eps) {
  NormLayer n;
  n.kind = kind;
  n.eps = eps;
  ORCHID_ASSIGN_OR_RETURN(n.weight, memory_.UploadF32(weight));
  if (bias != nullptr) {
    ORCHID_ASSIGN_OR_RETURN(n.bias, memory_.UploadF32(*bias));
  }
  norms_.push_back(n);
  return int(norms_.size()) - 1;
}

Result<int> CudaBackend::DoAddTable(Tensor t) {
  ORCHID_ASSIGN_OR_RETURN(bf16 * p, memory_.UploadBf16(t.data(), t.numel(), t.numel()));
  tables_.push_back(p);
  return int(tables_.size()) - 1;
}

// --- plan, arena and pass ------------------------------------------------------------------

Status CudaBackend::Plan(const std::function<Status()>& forward) {
  if (arena_.allocated()) return Status::Internal("cuda backend: Plan after Allocate");
  arena_.BeginPlan();
  Status st;
  for (bool prune : {false, true}) {
    prune_ = prune;
    pending_.reset();
    st = forward();
    if (st.ok()) st = Flush();
    if (!st.ok()) break;
  }
  arena_.EndPlan(st.ok());
  prune_ = false;
  pending_.reset();
  return st;
}

Status CudaBackend::Allocate(int max_tokens, int max_seqs) {
  // Without a plan: the widest row any op could put in a scratch (a padded-width GEMM output
  // may be fp32: two bf16 elements per value).
  int width = 0;
  for (const ops::BufferDecl& d : decls()) width = std::max(width, d.width);
  for (const LinearLayer& l : linears_) {
    width = std::max({width, l.n_pad == l.n ? l.n : 2 * l.n_pad, l.k});
  }
  ORCHID_RETURN_IF_ERROR(arena_.Allocate(decls(), max_tokens, max_seqs, width, &memory_, stream_));
  // cuDNN attention's ragged index (a few KB; fixed addresses, like the arena).
  const size_t n = size_t(max_seqs) + 1;
  ORCHID_ASSIGN_OR_RETURN(void* index, memory_.Alloc(3 * n * sizeof(int32_t)));
  seq_len_ = static_cast<int32_t*>(index);
  qkv_offset_ = seq_len_ + n;
  out_offset_ = qkv_offset_ + n;
  return Status::Ok();
}

void CudaBackend::Begin(const Inputs& device_inputs, int tb, int sb, bool prune) {
  in_ = device_inputs;
  tb_ = tb;
  sb_ = sb;
  prune_ = prune;
  pending_.reset();
  index_qkv_pitch_ = index_out_pitch_ = -1;  // the ragged index is computed again this pass
  prof_ = InstalledOpProfiler();
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

Status CudaBackend::Touch(ops::Buffer b) {
  if (pending_ && pending_->residual.id == b.id) return Flush();
  return Status::Ok();
}

Status CudaBackend::Flush() {
  if (!pending_) return Status::Ok();
  const ops::Buffer r = pending_->residual;
  pending_.reset();
  if (arena_.planning()) return Status::Ok();  // (its Linear recorded the delta scratch)
  const int width = decl(r).width;
  ORCHID_RETURN_IF_ERROR(NeedScratch(Scratch::kDelta, decl(r).rows, width));
  return Launch("ResidualAdd (flush)", [&] {
    const bf16* delta = scratch(Scratch::kDelta);
    return is_bf16(r) ? ORCHID_CUDA_STATUS(ResidualAdd(delta, bf(r), rows(r), width, stream_))
                      : ORCHID_CUDA_STATUS(ResidualAdd(delta, f32(r), rows(r), width, stream_));
  });
}

// --- ops -----------------------------------------------------------------------------------

Status CudaBackend::DoEmbed(const ops::EmbedOp& op, ops::Buffer out) {
  // Supports(): word rows alone into fp32 (no norm), or word (+ position) (+ token type) rows
  // and a LayerNorm into bf16.
  const int H = decl(out).width;
  ORCHID_RETURN_IF_ERROR(Touch(out));
  if (!op.norm.valid()) {
    return Launch("Embed gather", [&] {
      return ORCHID_CUDA_STATUS(
          EmbedGather(in_.ids, tables_[size_t(op.word.id)], tb_, H, f32(out), stream_));
    });
  }
  return Launch("Embed LayerNorm", [&] {
    const NormLayer& n = norms_[size_t(op.norm.id)];
    const bf16* position = op.position.valid() ? tables_[size_t(op.position.id)] : nullptr;
    const bf16* type = op.type.valid() ? tables_[size_t(op.type.id)] : nullptr;
    return ORCHID_CUDA_STATUS(EmbedLayerNorm(in_.ids, in_.types, in_.positions, op.position_offset,
                                             tables_[size_t(op.word.id)], position, type, n.weight,
                                             n.bias, n.eps, tb_, H, bf(out), stream_));
  });
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
    ORCHID_RETURN_IF_ERROR(NeedScratch(Scratch::kConvertIn, domain, l.k));
    x = scratch(Scratch::kConvertIn);
  }
  // The GEMM's output: bf16 (y) or, for an fp32 buffer outside a residual add, fp32 (y32),
  // straight into `out` when its width needs no padding, else into convert_out scratch.
  const bool fp32_out = !residual && !is_bf16(out);
  const bool direct = !residual && l.n_pad == l.n;
  bf16* y = nullptr;
  float* y32 = nullptr;
  if (residual) {
    ORCHID_RETURN_IF_ERROR(NeedScratch(Scratch::kDelta, decl(out).rows, l.n));
    y = scratch(Scratch::kDelta);
  } else if (direct) {
    if (fp32_out) {
      y32 = f32(out);
    } else {
      y = bf(out);
    }
  } else {
    ORCHID_RETURN_IF_ERROR(
        NeedScratch(Scratch::kConvertOut, domain, fp32_out ? 2 * l.n_pad : l.n_pad));
    if (fp32_out) {
      y32 = reinterpret_cast<float*>(scratch(Scratch::kConvertOut));
    } else {
      y = scratch(Scratch::kConvertOut);
    }
  }

  // cuBLASLt's bias + GELU epilogue (tanh approximation) replaces the exact-GELU pass when
  // ORCHID_CUDA_GELU=cublaslt and the layer has a bias (every GELU layer of the admitted
  // families); otherwise the GEMM's bias epilogue and the exact pass after it.
  const bool fused_gelu = e == ops::Epilogue::kGelu && l.bias != nullptr &&
                          GeluEpilogueMode() == GeluEpilogue::kCublasLtTanh;
  const int R = rows(in);
  // Profiling: each launch timed apart ("Linear n=3072 k=768 gelu: gemm", "...: gelu", ...).
  auto label = [&](const char* part) {
    return [&, part] {
      return "Linear n=" + std::to_string(l.n) + " k=" + std::to_string(l.k) +
             (e == ops::Epilogue::kGelu ? (fused_gelu ? " gelu(lt-tanh)" : " gelu")
              : residual                ? " +res"
                                        : "") +
             (is_bf16(in) ? "" : " f32-in") + (fp32_out ? " f32-out" : "") +
             (domain == ops::Rows::kTokens ? "" : " pooled") + ": " + part;
    };
  };
  if (!is_bf16(in)) {
    ORCHID_RETURN_IF_ERROR(Launch(label("f32->bf16"), [&] {
      return ORCHID_CUDA_STATUS(Fp32ToBf16(f32(in), R, l.k, scratch(Scratch::kConvertIn), stream_));
    }));
  }
  const GemmEpilogue ep = fused_gelu          ? GemmEpilogue::kBiasGelu
                          : l.bias != nullptr ? GemmEpilogue::kBias
                                              : GemmEpilogue::kNone;
  // The GEMM (bias of the output's type), the exact GELU, then the padded width's first n
  // columns copied out; the same steps into bf16 or fp32.
  auto run = [&](auto* dst, const auto* bias, auto* final_out) -> Status {
    ORCHID_RETURN_IF_ERROR(Launch(
        label("gemm"), [&] { return gemm_.Run(x, l.w, bias, dst, R, l.n_pad, l.k, ep, stream_); },
        2.0 * R * l.n_pad * l.k));
    if (e == ops::Epilogue::kGelu && !fused_gelu) {
      ORCHID_RETURN_IF_ERROR(Launch(
          label("gelu"), [&] { return ORCHID_CUDA_STATUS(GeluErf(dst, R, l.n_pad, stream_)); }));
    }
    if (residual) {
      pending_ = Pending{out};
      return Status::Ok();
    }
    if (direct) return Status::Ok();
    return Launch(label("copy cols"), [&] {
      return ORCHID_CUDA_STATUS(CopyColumns(dst, R, l.n_pad, l.n, final_out, stream_));
    });
  };
  return fp32_out ? run(y32, l.bias_f32, f32(out)) : run(y, l.bias, bf(out));
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
  const int R = rows(in), H = w.width;
  auto label = [&] {
    return std::string(layer_norm ? "Norm LayerNorm" : "Norm RMSNorm") + (fuse ? " +res" : "") +
           (decl(in).rows == ops::Rows::kTokens ? "" : " pooled");
  };
  return Launch(label, [&] {
    const bf16* delta = fuse ? scratch(Scratch::kDelta) : nullptr;
    return layer_norm ? ORCHID_CUDA_STATUS(AddLayerNorm(delta, bf(in), n.weight, n.bias, n.eps, R,
                                                        H, bf(out), stream_))
                      : ORCHID_CUDA_STATUS(
                            AddRmsNorm(delta, f32(in), n.weight, n.eps, R, H, bf(out), stream_));
  });
}

Status CudaBackend::DoQkNormRope(ops::Buffer qkv, const ops::RopeOptions& o) {
  // Supports(): bf16, head_dim <= 256, default rotary embeddings, RMSNorms of one epsilon.
  const NormLayer* q = o.q_norm.valid() ? &norms_[size_t(o.q_norm.id)] : nullptr;
  const NormLayer* k = o.k_norm.valid() ? &norms_[size_t(o.k_norm.id)] : nullptr;
  ORCHID_RETURN_IF_ERROR(Touch(qkv));
  return Launch("QkNormRope", [&] {
    return ORCHID_CUDA_STATUS(cuda::QkNormRope(
        bf(qkv), in_.positions, q != nullptr ? q->weight : nullptr,
        k != nullptr ? k->weight : nullptr, q != nullptr ? q->eps : 0.f, float(o.theta), tb_,
        o.num_heads, o.num_kv_heads, o.head_dim, stream_, float(o.inv_freq_divisor)));
  });
}

const CudaBackend::AttentionRoute& CudaBackend::Route(const ops::AttentionOptions& o, int qkv_pitch,
                                                      int out_pitch) {
  const RouteKey key{o.num_heads, o.num_kv_heads, o.head_dim, o.causal, qkv_pitch, out_pitch};
  if (auto it = routes_.find(key); it != routes_.end()) return it->second;
  AttentionRoute r;
  const std::string layout =
      std::to_string(o.num_heads) + " heads (" + std::to_string(o.num_kv_heads) +
      " kv) d=" + std::to_string(o.head_dim) + (o.causal ? " causal" : " bidirectional");
  const std::string own =
      std::string("own kernel (") + AttentionKernelName(DefaultAttentionKernel()) + "), " + layout;
  if (cudnn_ == nullptr) {
    r.why = own + "; cuDNN not used: " + cudnn_off_;
  } else {
    // Whether cuDNN builds a plan for these heads at all, on a representative shape (one
    // sequence of up to 128 rows); the passes' own shapes are built as they come.
    const CudnnAttentionShape probe{1,
                                    128,
                                    o.num_heads,
                                    o.num_kv_heads,
                                    o.head_dim,
                                    o.causal,
                                    1.f / std::sqrt(float(o.head_dim)),
                                    qkv_pitch,
                                    out_pitch};
    const Status st = cudnn_->Prepare(probe);
    if (st.ok()) {
      r.cudnn = true;
      r.why = "cudnn fused SDPA (ragged THD), " + layout + "; " + Cudnn().Describe();
    } else {
      r.why = own + "; " + st.message();
    }
  }
  std::fprintf(stderr, "orchid CUDA backend: attention: %s\n", r.why.c_str());
  return routes_.emplace(key, std::move(r)).first->second;
}

Status CudaBackend::CudnnAttentionPass(ops::Buffer qkv, const ops::AttentionOptions& o,
                                       int out_pitch, float scale, bf16* dst) {
  const int qkv_pitch = decl(qkv).width;
  // The ragged offsets are int32 element offsets (as PyTorch passes them).
  if (int64_t(tb_) * std::max(qkv_pitch, out_pitch) >= (int64_t(1) << 31)) {
    return Status::Unimplemented("cuDNN attention: " + std::to_string(tb_) +
                                 " rows of this pitch overflow its int32 offsets");
  }
  CudnnAttentionShape shape;
  shape.batch = sb_;
  shape.max_seq_len = in_.max_seq_len > 0 ? std::min(in_.max_seq_len, tb_) : tb_;
  shape.num_q = o.num_heads;
  shape.num_kv = o.num_kv_heads;
  shape.head_dim = o.head_dim;
  shape.causal = o.causal;
  shape.scale = scale;
  shape.qkv_pitch = qkv_pitch;
  shape.out_pitch = out_pitch;
  ORCHID_RETURN_IF_ERROR(cudnn_->Prepare(shape));
  const std::string name =
      "Attention h=" + std::to_string(o.num_heads) + " kv=" + std::to_string(o.num_kv_heads) +
      " d=" + std::to_string(o.head_dim) + (o.causal ? " causal" : "") + " cudnn";
  if (index_qkv_pitch_ != qkv_pitch || index_out_pitch_ != out_pitch) {
    ORCHID_RETURN_IF_ERROR(Launch(name + ": index", [&] {
      return ORCHID_CUDA_STATUS(RaggedAttentionIndex(in_.cu, sb_, qkv_pitch, out_pitch, seq_len_,
                                                     qkv_offset_, out_offset_, stream_));
    }));
    index_qkv_pitch_ = qkv_pitch;
    index_out_pitch_ = out_pitch;
  }
  return Launch(
      name, [&] { return cudnn_->Run(shape, bf(qkv), seq_len_, qkv_offset_, out_offset_, dst); }, 0,
      4.0 * o.head_dim * o.num_heads * (o.causal ? 0.5 : 1.0));
}

Status CudaBackend::DoAttention(ops::Buffer qkv, ops::Buffer out, const ops::AttentionOptions& o) {
  // Supports(): bf16, no bias, relative positions, window or scale, an instantiated head_dim.
  ORCHID_RETURN_IF_ERROR(Touch(qkv));
  ORCHID_RETURN_IF_ERROR(Touch(out));
  const bool pooled = decl(out).rows == ops::Rows::kPooled;
  const int W = decl(out).width;
  if (pooled) ORCHID_RETURN_IF_ERROR(NeedScratch(Scratch::kAttention, ops::Rows::kTokens, W));
  const float scale = 1.f / std::sqrt(float(o.head_dim));
  bf16* dst = pooled ? scratch(Scratch::kAttention) : bf(out);
  auto label = [&](const char* part) {
    return [&, part] {
      return "Attention h=" + std::to_string(o.num_heads) +
             " kv=" + std::to_string(o.num_kv_heads) + " d=" + std::to_string(o.head_dim) +
             (o.causal ? " causal" : "") + part;
    };
  };
  const AttentionRoute& route = Route(o, decl(qkv).width, W);
  bool done = arena_.planning();  // (planning launches nothing; the route is decided)
  if (!done && route.cudnn) {
    const Status st = CudnnAttentionPass(qkv, o, W, scale, dst);
    if (st.ok()) {
      done = true;
      ++attn_stats_.cudnn_calls;
    } else if (st.code() != StatusCode::kUnimplemented) {
      return st;
    } else {
      // A shape cuDNN refuses (or offsets that would overflow): the own kernel, said once.
      ++attn_stats_.cudnn_fallbacks;
      if (logged_.emplace(st.message(), true).second) {
        std::fprintf(stderr,
                     "orchid CUDA backend: attention on the own kernel for this shape: %s\n",
                     st.message().c_str());
      }
    }
  }
  if (!done) {
    if (!arena_.planning()) ++attn_stats_.own_calls;
    // QK^T and PV: 4 head_dim num_heads FLOPs per (query, key) pair, half the pairs when causal.
    ORCHID_RETURN_IF_ERROR(Launch(
        label(""),
        [&] {
          return ORCHID_CUDA_STATUS(RaggedFlashAttention(
              bf(qkv), in_.cu, in_.tile_seq, in_.tile_q0, in_.num_tiles, o.num_heads,
              o.num_kv_heads, o.head_dim, scale, o.causal, dst, stream_));
        },
        0, 4.0 * o.head_dim * o.num_heads * (o.causal ? 0.5 : 1.0)));
  }
  if (!pooled) return Status::Ok();
  return Launch(label(": gather pooled"), [&] {
    return ORCHID_CUDA_STATUS(
        GatherPooledRows(scratch(Scratch::kAttention), W, in_.cu, in_.mode, sb_, bf(out), stream_));
  });
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
  return Launch("SwiGlu", [&] {
    return ORCHID_CUDA_STATUS(
        cuda::SwiGlu(bf(gate_up), rows(out), decl(out).width, bf(out), stream_));
  });
}

Status CudaBackend::DoActivate(ops::Buffer x, ops::Activation a) {
  ORCHID_RETURN_IF_ERROR(Touch(x));
  if (a == ops::Activation::kLog1pRelu) return Refused("Activate (log1p relu)");
  if (a == ops::Activation::kQuickGelu || a == ops::Activation::kGeluTanh) {
    return Refused("Activate (quick_gelu / tanh GELU)");
  }
  const bool gelu = a == ops::Activation::kGelu, relu = a == ops::Activation::kRelu;
  const int R = rows(x), W = decl(x).width;
  // The activation's kernel on the buffer's element type.
  auto apply = [&](auto* v) {
    return gelu   ? ORCHID_CUDA_STATUS(GeluErf(v, R, W, stream_))
           : relu ? ORCHID_CUDA_STATUS(Relu(v, R, W, stream_))
                  : ORCHID_CUDA_STATUS(Tanh(v, R, W, stream_));
  };
  auto label = [&] { return std::string("Activate ") + (gelu ? "gelu" : relu ? "relu" : "tanh"); };
  return Launch(label, [&] { return is_bf16(x) ? apply(bf(x)) : apply(f32(x)); });
}

Status CudaBackend::DoGatherPooled(ops::Buffer tokens, ops::Buffer pooled) {
  ORCHID_RETURN_IF_ERROR(Touch(tokens));
  ORCHID_RETURN_IF_ERROR(Touch(pooled));
  const int W = decl(pooled).width;
  return Launch("GatherPooled", [&] {
    return is_bf16(pooled) ? ORCHID_CUDA_STATUS(GatherPooledRows(bf(tokens), W, in_.cu, in_.mode,
                                                                 sb_, bf(pooled), stream_))
                           : ORCHID_CUDA_STATUS(GatherPooledRows(f32(tokens), W, in_.cu, in_.mode,
                                                                 sb_, f32(pooled), stream_));
  });
}

Status CudaBackend::DoPool(ops::Buffer hidden, ops::Buffer out, bool normalize) {
  // (from a bf16 buffer: Supports())
  ORCHID_RETURN_IF_ERROR(Touch(hidden));
  ORCHID_RETURN_IF_ERROR(Touch(out));
  return Launch("Pool", [&] {
    // A kPooled input holds one row per sequence already: pool it as one-row sequences.
    const int32_t* cu = decl(hidden).rows == ops::Rows::kPooled ? arena_.identity_cu() : in_.cu;
    const uint8_t* flags = normalize ? in_.norm : arena_.zero_flags();
    return ORCHID_CUDA_STATUS(
        PoolNormalize(bf(hidden), cu, in_.mode, flags, sb_, decl(out).width, f32(out), stream_));
  });
}

}  // namespace orchid::cuda
