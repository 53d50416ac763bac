// CudnnAttention (cudnn_attention.h): loading libcudnn at run time, and one cudnn-frontend SDPA
// graph per shape over the ragged (THD) QKV rows.
#include "backends/cuda/cudnn_attention.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_check.h"

#if ORCHID_HAVE_CUDNN
#include <cudnn_frontend.h>

// The frontend's dynamic loading resolves every cuDNN call through this handle (one
// definition per program; cudnn_frontend_shim.h declares it).
void* cudnn_frontend::cudnn_dlhandle = nullptr;
#endif

namespace orchid::cuda {
namespace {

std::string VersionString(int64_t v) {
  // cuDNN 9: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

#if ORCHID_HAVE_CUDNN
namespace fe = cudnn_frontend;

// Tensor uids of the SDPA graph (the variant pack's keys).
enum Uid : int64_t { kQ = 1, kK, kV, kO, kSeqLen, kQkvOffset, kOutOffset };

CudnnLibraryInfo Load() {
  CudnnLibraryInfo info;
  info.compiled = true;
  info.frontend = std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
                  std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
                  std::to_string(CUDNN_FRONTEND_PATCH_VERSION);
#ifdef ORCHID_CUDNN_LIBRARY_HINT
  info.hint = ORCHID_CUDNN_LIBRARY_HINT;
#endif
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("ORCHID_CUDNN_LIBRARY"); env != nullptr && *env != '\0') {
    if (std::strcmp(env, "off") == 0 || std::strcmp(env, "0") == 0) {
      info.error = "ORCHID_CUDNN_LIBRARY=" + std::string(env) + " turns cuDNN off";
      return info;
    }
    candidates.emplace_back(env);  // the user's choice only
  } else {
    if (!info.hint.empty() && std::filesystem::exists(info.hint)) candidates.push_back(info.hint);
    candidates.emplace_back("libcudnn.so.9");
  }
  void* handle = nullptr;
  std::string errors;
  for (const std::string& c : candidates) {
    info.path = c;
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    const char* e = dlerror();
    errors +=
        (errors.empty() ? "" : "; ") + (e != nullptr ? std::string(e) : c + ": dlopen failed");
  }
  if (handle == nullptr) {
    info.error = "cannot load libcudnn: " + errors;
    return info;
  }
  using GetVersion = size_t (*)();
  auto get_version = reinterpret_cast<GetVersion>(dlsym(handle, "cudnnGetVersion"));
  if (get_version == nullptr) {
    info.error = info.path + " has no cudnnGetVersion";
    dlclose(handle);
    return info;
  }
  info.version = int64_t(get_version());
  if (info.version / 10000 != 9) {
    info.error = info.path + " is cuDNN " + VersionString(info.version) +
                 "; orchid is compiled against cuDNN 9 headers (CUDNN_VERSION " +
                 std::to_string(CUDNN_VERSION) + ")";
    dlclose(handle);
    return info;
  }
  // The frontend also calls a few CUDA runtime functions through dlopen: make it open the
  // runtime this process already links (libcudart.so.<major>), never another major version
  // that happens to be on the search path. A user's own choice stays.
  const std::string cudart = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", cudart.c_str(), /*overwrite=*/0);
  fe::cudnn_dlhandle = handle;  // kept open for the life of the process
  info.loaded = true;
  return info;
}

std::string FrontendError(const char* step, fe::error_t e) {
  return std::string(step) + ": " + e.get_message();
}

#define ORCHID_FE_TRY(step, expr)                                                       \
  do {                                                                                  \
    fe::error_t fe_err_ = (expr);                                                       \
    if (!fe_err_.is_good()) return Status::Unimplemented(FrontendError(step, fe_err_)); \
  } while (0)
#endif  // ORCHID_HAVE_CUDNN

}  // namespace

std::string CudnnLibraryInfo::Describe() const {
  if (!compiled) return "cuDNN not compiled in (no cudnn-frontend headers at configure time)";
  if (!loaded) return "cuDNN not loaded: " + error;
  return "cuDNN " + VersionString(version) + " (" + path + "), cudnn-frontend " + frontend;
}

const CudnnLibraryInfo& Cudnn() {
#if ORCHID_HAVE_CUDNN
  static const CudnnLibraryInfo info = Load();
#else
  static const CudnnLibraryInfo info = [] {
    CudnnLibraryInfo i;
    i.error = "built without the cudnn-frontend headers";
    return i;
  }();
#endif
  return info;
}

std::string CudnnAttentionShape::Describe() const {
  return "b=" + std::to_string(batch) + " s=" + std::to_string(max_seq_len) +
         " h=" + std::to_string(num_q) + " kv=" + std::to_string(num_kv) +
         " d=" + std::to_string(head_dim) + (causal ? " causal" : " bidirectional") +
         " pitch=" + std::to_string(qkv_pitch) + "/" + std::to_string(out_pitch);
}

#if ORCHID_HAVE_CUDNN

struct CudnnAttention::Plan {
  std::shared_ptr<fe::graph::Graph> graph;
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
  ~Plan() {
    if (workspace != nullptr) cudaFree(workspace);
  }
};

Result<std::unique_ptr<CudnnAttention>> CudnnAttention::Create(cudaStream_t stream) {
  const CudnnLibraryInfo& lib = Cudnn();
  if (!lib.loaded) return Status::Unavailable(lib.Describe());
  std::unique_ptr<CudnnAttention> a(new CudnnAttention(stream));
  try {
    cudnnHandle_t h = nullptr;
    if (fe::detail::create_handle(&h) != CUDNN_STATUS_SUCCESS || h == nullptr) {
      return Status::Internal("cudnnCreate failed");
    }
    a->handle_ = h;
    if (fe::detail::set_stream(h, stream) != CUDNN_STATUS_SUCCESS) {
      return Status::Internal("cudnnSetStream failed");
    }
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cuDNN handle: ") + e.what());
  }
  return a;
}

CudnnAttention::~CudnnAttention() {
  plans_.clear();  // workspaces first
  if (handle_ != nullptr) {
    try {
      fe::detail::destroy_handle(static_cast<cudnnHandle_t>(handle_));
    } catch (const std::exception&) {  // nothing to do at teardown
    }
  }
}

size_t CudnnAttention::plans() const { return plans_.size(); }
size_t CudnnAttention::refusals() const { return refused_.size(); }

Status CudnnAttention::Build(const CudnnAttentionShape& s, std::unique_ptr<Plan>* out) {
  const int64_t b = s.batch, hq = s.num_q, hkv = s.num_kv, d = s.head_dim, len = s.max_seq_len;
  auto plan = std::make_unique<Plan>();
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  int device = 0, major = 0, minor = 0;
  ORCHID_CUDA_TRY(cudaGetDevice(&device));
  ORCHID_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ORCHID_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  g->set_sm_version(major * 10 + minor);

  auto index = [&](const char* name, int64_t uid, int64_t n) {
    return g->tensor(fe::graph::Tensor_attributes()
                         .set_name(name)
                         .set_uid(uid)
                         .set_dim({n, 1, 1, 1})
                         .set_stride({1, 1, 1, 1})
                         .set_data_type(fe::DataType_t::INT32));
  };
  auto seq_len = index("seq_len", kSeqLen, b);
  auto qkv_offset = index("qkv_offset", kQkvOffset, b + 1);
  auto out_offset = index("out_offset", kOutOffset, b + 1);
  // [b, heads, s, d]: heads d apart within a row, tokens a pitch apart; the batch stride is
  // replaced by the ragged offsets (a nominal s * pitch, 16-byte aligned like every stride).
  auto ragged = [&](const char* name, int64_t uid, int64_t heads, int64_t pitch) {
    auto t = g->tensor(fe::graph::Tensor_attributes()
                           .set_name(name)
                           .set_uid(uid)
                           .set_dim({b, heads, len, d})
                           .set_stride({len * pitch, d, pitch, 1}));
    return t;
  };
  auto q = ragged("Q", kQ, hq, s.qkv_pitch);
  auto k = ragged("K", kK, hkv, s.qkv_pitch);
  auto v = ragged("V", kV, hkv, s.qkv_pitch);
  q->set_ragged_offset(qkv_offset);
  k->set_ragged_offset(qkv_offset);
  v->set_ragged_offset(qkv_offset);

  auto options = fe::graph::SDPA_attributes()
                     .set_name("orchid_ragged_sdpa")
                     .set_generate_stats(false)
                     .set_attn_scale(s.scale)
                     .set_padding_mask(true)
                     .set_seq_len_q(seq_len)
                     .set_seq_len_kv(seq_len);
  if (s.causal) {
    options.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT)
        .set_diagonal_band_right_bound(0);
  }
  auto [o, stats] = g->sdpa(q, k, v, options);
  (void)stats;  // inference: none
  o->set_output(true)
      .set_uid(kO)
      .set_dim({b, hq, len, d})
      .set_stride({len * s.out_pitch, d, s.out_pitch, 1})
      .set_ragged_offset(out_offset);

  const auto handle = static_cast<cudnnHandle_t>(handle_);
  ORCHID_FE_TRY("validate", g->validate());
  ORCHID_FE_TRY("build_operation_graph", g->build_operation_graph(handle));
  ORCHID_FE_TRY("create_execution_plans",
                g->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}));
  ORCHID_FE_TRY("check_support", g->check_support(handle));
  ORCHID_FE_TRY("build_plans", g->build_plans(handle));
  ORCHID_FE_TRY("get_workspace_size", g->get_workspace_size(plan->workspace_bytes));
  if (plan->workspace_bytes > 0) {
    ORCHID_CUDA_TRY(cudaMalloc(&plan->workspace, size_t(plan->workspace_bytes)));
  }
  plan->graph = std::move(g);
  *out = std::move(plan);
  return Status::Ok();
}

Status CudnnAttention::Prepare(const CudnnAttentionShape& s) {
  const auto key = s.Key();
  if (plans_.count(key) != 0) return Status::Ok();
  if (auto it = refused_.find(key); it != refused_.end()) return it->second;
  if (s.batch <= 0 || s.max_seq_len <= 0 || s.num_q <= 0 || s.num_kv <= 0 ||
      s.num_q % s.num_kv != 0 || s.head_dim <= 0) {
    return Status::InvalidArgument("cuDNN attention: bad shape " + s.Describe());
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ORCHID_CUDA_TRY(cudaStreamIsCapturing(stream_, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    return Status::FailedPrecondition("cuDNN attention: no plan for " + s.Describe() +
                                      " before the stream's capture (run it eagerly first)");
  }
  std::unique_ptr<Plan> plan;
  Status st;
  try {
    st = Build(s, &plan);
  } catch (const std::exception& e) {
    st = Status::Unimplemented(std::string("cudnn-frontend threw: ") + e.what());
  }
  if (!st.ok()) {
    // A device error is not the shape's fault: report it, do not remember it.
    if (st.code() == StatusCode::kUnimplemented) {
      st = Status::Unimplemented("cuDNN refused " + s.Describe() + ": " + st.message());
      refused_.emplace(key, st);
    }
    return st;
  }
  plans_.emplace(key, std::shared_ptr<Plan>(std::move(plan)));
  return Status::Ok();
}

Status CudnnAttention::Run(const CudnnAttentionShape& s, const bf16* qkv, const int32_t* seq_len,
                           const int32_t* qkv_offset, const int32_t* out_offset, bf16* out) {
  ORCHID_RETURN_IF_ERROR(Prepare(s));
  const Plan& p = *plans_.at(s.Key());
  // The variant pack's pointers; K and V start hq and hq + hkv heads into each QKV row.
  auto* base = const_cast<bf16*>(qkv);
  std::unordered_map<int64_t, void*> pack{
      {kQ, base},
      {kK, base + size_t(s.num_q) * size_t(s.head_dim)},
      {kV, base + size_t(s.num_q + s.num_kv) * size_t(s.head_dim)},
      {kO, out},
      {kSeqLen, const_cast<int32_t*>(seq_len)},
      {kQkvOffset, const_cast<int32_t*>(qkv_offset)},
      {kOutOffset, const_cast<int32_t*>(out_offset)}};
  try {
    fe::error_t e = p.graph->execute(static_cast<cudnnHandle_t>(handle_), pack, p.workspace);
    if (!e.is_good()) {
      return Status::Internal("cuDNN attention " + s.Describe() + ": " + e.get_message());
    }
  } catch (const std::exception& e) {
    return Status::Internal("cuDNN attention " + s.Describe() + ": " + e.what());
  }
  return Status::Ok();
}

#else  // !ORCHID_HAVE_CUDNN

struct CudnnAttention::Plan {};

Result<std::unique_ptr<CudnnAttention>> CudnnAttention::Create(cudaStream_t stream) {
  (void)stream;
  return Status::Unavailable(Cudnn().Describe());
}
CudnnAttention::~CudnnAttention() = default;
size_t CudnnAttention::plans() const { return 0; }
size_t CudnnAttention::refusals() const { return 0; }
Status CudnnAttention::Build(const CudnnAttentionShape& shape, std::unique_ptr<Plan>* plan) {
  (void)shape;
  (void)plan;
  return Status::Unavailable(Cudnn().Describe());
}
Status CudnnAttention::Prepare(const CudnnAttentionShape& shape) {
  (void)shape;
  return Status::Unavailable(Cudnn().Describe());
}
Status CudnnAttention::Run(const CudnnAttentionShape& shape, const bf16* qkv,
                           const int32_t* seq_len, const int32_t* qkv_offset,
                           const int32_t* out_offset, bf16* out) {
  (void)shape, (void)qkv, (void)seq_len, (void)qkv_offset, (void)out_offset, (void)out;
  return Status::Unavailable(Cudnn().Describe());
}

#endif  // ORCHID_HAVE_CUDNN

}  // namespace orchid::cuda
