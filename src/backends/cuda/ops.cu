// The CUDA backend's memory-bound kernels: embeddings + LayerNorm, residual add + LayerNorm /
// RMSNorm, Qwen3's q/k RMSNorm + RoPE, SwiGLU, pooling + L2 normalisation, and the glue of the
// op contract (exact GELU, tanh, residual adds, fp32 <-> bf16 copies, pooled-row gathers).
// ops.h states each op's math; this file states how the work is laid out.
//
// Layout: the row kernels run one thread block per row (token or sequence), kRowThreads threads
// that stride over the row's columns, so a warp touches consecutive elements (coalesced); the
// element-wise kernels (SwiGLU, GELU, tanh, adds, conversions) run a grid-stride loop over all
// elements with a grid computed from the element count alone. Row
// statistics are reduced in fp32 with BlockSum (warp shuffles, then one value per warp in
// shared memory). Kernels that need a row twice keep it in dynamic shared memory as fp32
// (H floats) beside BlockSum's static 32-float array; both together must stay within the 48 KB
// a block may use without opting in, so H <= kMaxRowFloats = 12256. Each thread re-reads only
// the elements it wrote itself, so no barrier is needed between those phases. Grids depend only
// on T/S.
//
// Thread safety: stateless; see ops.h.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/op_support.h"
#include "backends/cuda/ops.h"

namespace orchid::cuda {
namespace {

constexpr int kRowThreads = 256;  // multiple of 32
// Shared memory of the row kernels: the static reduction array (kRedFloats) plus the dynamic
// row (H floats) must fit in the 48 KB a launch gets without cudaFuncSetAttribute; the largest
// H is what is left after the static part (12256, not 12288 = 48 KB / 4).
constexpr int kRedFloats = 32;
constexpr size_t kDefaultSmemBytes = 48 * 1024;
constexpr int kMaxRowFloats = int((kDefaultSmemBytes - kRedFloats * sizeof(float)) / sizeof(float));
static_assert(kMaxRowFloats == kMaxRowWidth);  // what op_support.h admits
static_assert(size_t(kMaxRowFloats) * sizeof(float) + kRedFloats * sizeof(float) <=
              kDefaultSmemBytes);

// Sum of v over the block. Every thread of the block must call it (block-uniform control flow);
// red: kRedFloats (32) floats of shared memory. The leading barrier makes back-to-back calls
// safe.
__device__ float BlockSum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float r = 0.f;
  const int warps = int(blockDim.x) >> 5;
  for (int i = 0; i < warps; ++i) r += red[i];
  return r;
}

__global__ void __launch_bounds__(kRowThreads)
    EmbedLayerNormKernel(const int32_t* __restrict__ ids, const int32_t* __restrict__ types,
                         const int32_t* __restrict__ positions, int pos_offset,
                         const bf16* __restrict__ word, const bf16* __restrict__ pos_table,
                         const bf16* __restrict__ type_table, const float* __restrict__ gamma,
                         const float* __restrict__ beta, float eps, int H,
                         bf16* __restrict__ out) {
  extern __shared__ float row[];  // [H]
  __shared__ float red[kRedFloats];
  const size_t t = blockIdx.x;
  const bf16* w = word + size_t(ids[t]) * H;
  // Optional tables (block-uniform): null, no term.
  const bf16* p =
      pos_table != nullptr ? pos_table + size_t(positions[t] + pos_offset) * H : nullptr;
  const bf16* ty =
      type_table != nullptr ? type_table + size_t(types != nullptr ? types[t] : 0) * H : nullptr;
  float s = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    float v = __bfloat162float(w[j]);
    if (p != nullptr) v += __bfloat162float(p[j]);
    if (ty != nullptr) v += __bfloat162float(ty[j]);
    row[j] = v;
    s += v;
  }
  const float mean = BlockSum(s, red) / float(H);
  float s2 = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const float d = row[j] - mean;
    s2 += d * d;
  }
  const float rstd = rsqrtf(BlockSum(s2, red) / float(H) + eps);
  bf16* o = out + t * size_t(H);
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    o[j] = __float2bfloat16((row[j] - mean) * rstd * gamma[j] + beta[j]);
  }
}

__global__ void __launch_bounds__(kRowThreads)
    AddLayerNormKernel(const bf16* __restrict__ x, const bf16* residual,
                       const float* __restrict__ gamma, const float* __restrict__ beta,
                       float eps, int H, bf16* out) {
  // residual and out may alias: no __restrict__ on them. x == nullptr: no add (block-uniform).
  extern __shared__ float row[];
  __shared__ float red[kRedFloats];
  const size_t base = size_t(blockIdx.x) * size_t(H);
  float s = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const float v =
        (x != nullptr ? __bfloat162float(x[base + j]) : 0.f) + __bfloat162float(residual[base + j]);
    row[j] = v;
    s += v;
  }
  const float mean = BlockSum(s, red) / float(H);
  float s2 = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    const float d = row[j] - mean;
    s2 += d * d;
  }
  const float rstd = rsqrtf(BlockSum(s2, red) / float(H) + eps);
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    out[base + j] = __float2bfloat16((row[j] - mean) * rstd * gamma[j] + beta[j]);
  }
}

__global__ void __launch_bounds__(kRowThreads)
    EmbedGatherKernel(const int32_t* __restrict__ ids, const bf16* __restrict__ table, int H,
                      float* __restrict__ res) {
  const size_t t = blockIdx.x;
  const bf16* w = table + size_t(ids[t]) * H;
  float* r = res + t * size_t(H);
  for (int j = threadIdx.x; j < H; j += blockDim.x) r[j] = __bfloat162float(w[j]);
}

__global__ void __launch_bounds__(kRowThreads)
    AddRmsNormKernel(const bf16* __restrict__ delta, float* __restrict__ res,
                     const float* __restrict__ weight, float eps, int H, bf16* __restrict__ out) {
  extern __shared__ float row[];
  __shared__ float red[kRedFloats];
  const size_t base = size_t(blockIdx.x) * size_t(H);
  float ss = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    float v = res[base + j];
    if (delta != nullptr) {
      v += __bfloat162float(delta[base + j]);
      res[base + j] = v;
    }
    row[j] = v;
    ss += v * v;
  }
  const float inv = rsqrtf(BlockSum(ss, red) / float(H) + eps);
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    out[base + j] = __float2bfloat16(row[j] * inv * weight[j]);
  }
}

// One block of 4 warps per token; warp w handles heads w, w+4, ... of the Q and K heads. Each
// warp stages its head (head_dim <= 256 floats) in its own slice of shared memory.
constexpr int kRopeWarps = 4;
constexpr int kMaxHeadDim = 256;

__global__ void __launch_bounds__(kRopeWarps * 32)
    QkNormRopeKernel(bf16* __restrict__ qkv, const int32_t* __restrict__ positions,
                     const float* __restrict__ q_weight, const float* __restrict__ k_weight,
                     float eps, float theta, float inv_freq_divisor, int num_q, int num_kv,
                     int d) {
  __shared__ float buf[kRopeWarps][kMaxHeadDim];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const size_t t = blockIdx.x;
  const size_t ld = size_t(num_q + 2 * num_kv) * size_t(d);
  const float pos = float(positions[t]);
  const int half = d / 2;
  float* b = buf[warp];
  for (int h = warp; h < num_q + num_kv; h += kRopeWarps) {
    bf16* x = qkv + t * ld + size_t(h) * size_t(d);
    const float* w = h < num_q ? q_weight : k_weight;
    float ss = 0.f;
    for (int i = lane; i < d; i += 32) {
      const float v = __bfloat162float(x[i]);
      b[i] = v;
      ss += v * v;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    const float inv = w != nullptr ? rsqrtf(ss / float(d) + eps) : 1.f;
    __syncwarp();  // b[] written by other lanes is read below
    for (int i = lane; i < half; i += 32) {
      float x1 = b[i] * inv, x2 = b[i + half] * inv;
      if (w != nullptr) {
        x1 *= w[i];
        x2 *= w[i + half];
      }
      // transformers: inv_freq = 1 / theta^(2i/d) in fp32; angle = pos * inv_freq in fp32.
      float inv_freq = 1.f / powf(theta, float(2 * i) / float(d));
      if (inv_freq_divisor != 1.f) inv_freq /= inv_freq_divisor;
      const float angle = pos * inv_freq;
      float sn, cs;
      sincosf(angle, &sn, &cs);
      x[i] = __float2bfloat16(x1 * cs - x2 * sn);
      x[i + half] = __float2bfloat16(x2 * cs + x1 * sn);
    }
    __syncwarp();  // b[] is rewritten by the next head
  }
}

__global__ void SwiGluKernel(const bf16* __restrict__ gu, size_t T, int I,
                             bf16* __restrict__ out) {
  const size_t n = T * size_t(I);
  for (size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += size_t(gridDim.x) * blockDim.x) {
    const size_t t = idx / size_t(I), i = idx % size_t(I);
    const float g = __bfloat162float(gu[t * 2 * size_t(I) + i]);
    const float u = __bfloat162float(gu[t * 2 * size_t(I) + size_t(I) + i]);
    out[idx] = __float2bfloat16(g / (1.f + __expf(-g)) * u);
  }
}

__global__ void __launch_bounds__(kRowThreads)
    PoolNormalizeKernel(const bf16* __restrict__ hidden, const int32_t* __restrict__ cu,
                        const uint8_t* __restrict__ mode, const uint8_t* __restrict__ norm,
                        int H, float* __restrict__ out) {
  extern __shared__ float row[];
  __shared__ float red[kRedFloats];
  const int s = blockIdx.x;
  const int b = cu[s], e = cu[s + 1], n = e - b;
  const int m = mode[s];
  float ss = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    float v = 0.f;
    if (n > 0) {
      if (m == 1) {  // mean
        float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
        int t = b;
        for (; t + 3 < e; t += 4) {
          a0 += __bfloat162float(hidden[size_t(t) * H + j]);
          a1 += __bfloat162float(hidden[size_t(t + 1) * H + j]);
          a2 += __bfloat162float(hidden[size_t(t + 2) * H + j]);
          a3 += __bfloat162float(hidden[size_t(t + 3) * H + j]);
        }
        for (; t < e; ++t) a0 += __bfloat162float(hidden[size_t(t) * H + j]);
        v = ((a0 + a1) + (a2 + a3)) / float(n);
      } else if (m == 2) {  // CLS: first token
        v = __bfloat162float(hidden[size_t(b) * H + j]);
      } else if (m == 3) {  // last token
        v = __bfloat162float(hidden[size_t(e - 1) * H + j]);
      }
    }
    row[j] = v;
    ss += v * v;
  }
  float scale = 1.f;
  if (norm[s] != 0) scale = 1.f / fmaxf(sqrtf(BlockSum(ss, red)), 1e-12f);  // block-uniform
  float* o = out + size_t(s) * H;
  for (int j = threadIdx.x; j < H; j += blockDim.x) o[j] = row[j] * scale;
}

// --- element-wise and row-copy kernels ---------------------------------------------------------

__device__ __forceinline__ float Load(const bf16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ float Load(const float* p) { return *p; }
__device__ __forceinline__ void Store(bf16* p, float v) { *p = __float2bfloat16(v); }
__device__ __forceinline__ void Store(float* p, float v) { *p = v; }

// Grid-stride loops: idx over [0, n).
#define ORCHID_GRID_STRIDE(idx, n)                                            \
  for (size_t idx = size_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < (n); \
       idx += size_t(gridDim.x) * blockDim.x)

template <typename T>
__global__ void GeluErfKernel(T* __restrict__ x, size_t n) {
  ORCHID_GRID_STRIDE(i, n) {
    const float v = Load(x + i);
    Store(x + i, 0.5f * v * (1.f + erff(v * 0.70710678118654752f)));
  }
}

// bf16 GELU 8 elements (16 bytes) a thread: the scalar kernel's 2-byte accesses took twice
// PyTorch's time for BERT-base's FFN (bench/results/gpu-h200-profile-20261204-1552.md). The
// same erff and rounding per element.
__global__ void GeluErfBf16x8Kernel(bf16* __restrict__ x, size_t n8) {
  ORCHID_GRID_STRIDE(i, n8) {
    uint4 raw = reinterpret_cast<const uint4*>(x)[i];
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float2 f = __bfloat1622float2(h[j]);
      f.x = 0.5f * f.x * (1.f + erff(f.x * 0.70710678118654752f));
      f.y = 0.5f * f.y * (1.f + erff(f.y * 0.70710678118654752f));
      h[j] = __floats2bfloat162_rn(f.x, f.y);
    }
    reinterpret_cast<uint4*>(x)[i] = raw;
  }
}

template <typename T>
__global__ void TanhKernel(T* __restrict__ x, size_t n) {
  ORCHID_GRID_STRIDE(i, n) { Store(x + i, tanhf(Load(x + i))); }
}

template <typename T>
__global__ void ReluKernel(T* __restrict__ x, size_t n) {
  ORCHID_GRID_STRIDE(i, n) { Store(x + i, fmaxf(Load(x + i), 0.0f)); }
}

template <typename T>
__global__ void ResidualAddKernel(const bf16* __restrict__ delta, T* __restrict__ x, size_t n) {
  ORCHID_GRID_STRIDE(i, n) { Store(x + i, Load(x + i) + __bfloat162float(delta[i])); }
}

__global__ void Fp32ToBf16Kernel(const float* __restrict__ in, size_t n, bf16* __restrict__ out) {
  ORCHID_GRID_STRIDE(i, n) { out[i] = __float2bfloat16(in[i]); }
}

template <typename In, typename Out>
__global__ void CopyColumnsKernel(const In* __restrict__ in, size_t ld, size_t N, size_t n,
                                  Out* __restrict__ out) {
  ORCHID_GRID_STRIDE(i, n) {
    const size_t t = i / N, j = i % N;
    Store(out + i, Load(in + t * ld + j));
  }
}

#undef ORCHID_GRID_STRIDE

// One block per output row; the row is copied as is (no conversion: in and out have one type).
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    GatherPooledRowsKernel(const T* __restrict__ in, int W, const int32_t* __restrict__ cu,
                           const uint8_t* __restrict__ mode, T* __restrict__ out) {
  const int s = blockIdx.x;
  const int b = cu[s], e = cu[s + 1], m = mode[s];
  const int src = e <= b ? -1 : m == 2 ? b : m == 3 ? e - 1 : -1;
  T* o = out + size_t(s) * size_t(W);
  if (src < 0) {
    for (int j = threadIdx.x; j < W; j += blockDim.x) Store(o + j, 0.f);
    return;
  }
  const T* r = in + size_t(src) * size_t(W);
  for (int j = threadIdx.x; j < W; j += blockDim.x) o[j] = r[j];
}

constexpr int kElementThreads = 256;
// Blocks for n elements: enough for one element per thread, at most 65536 (grid-stride beyond).
int ElementBlocks(size_t n) {
  const size_t want = (n + kElementThreads - 1) / kElementThreads;
  return int(want < 65536 ? want : 65536);
}

size_t RowSmem(int H) { return size_t(H) * sizeof(float); }

}  // namespace

cudaError_t EmbedLayerNorm(const int32_t* ids, const int32_t* types, const int32_t* positions,
                           int pos_offset, const bf16* word, const bf16* pos_table,
                           const bf16* type_table, const float* gamma, const float* beta,
                           float eps, int T, int H, bf16* out, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  if (H > kMaxRowFloats) return cudaErrorInvalidValue;
  EmbedLayerNormKernel<<<T, kRowThreads, RowSmem(H), stream>>>(
      ids, types, positions, pos_offset, word, pos_table, type_table, gamma, beta, eps, H, out);
  return cudaGetLastError();
}

cudaError_t AddLayerNorm(const bf16* x, const bf16* residual, const float* gamma,
                         const float* beta, float eps, int T, int H, bf16* out,
                         cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  if (H > kMaxRowFloats) return cudaErrorInvalidValue;
  AddLayerNormKernel<<<T, kRowThreads, RowSmem(H), stream>>>(x, residual, gamma, beta, eps, H,
                                                             out);
  return cudaGetLastError();
}

cudaError_t EmbedGather(const int32_t* ids, const bf16* table, int T, int H, float* res,
                        cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  EmbedGatherKernel<<<T, kRowThreads, 0, stream>>>(ids, table, H, res);
  return cudaGetLastError();
}

cudaError_t AddRmsNorm(const bf16* delta, float* res, const float* weight, float eps, int T,
                       int H, bf16* out, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  if (H > kMaxRowFloats) return cudaErrorInvalidValue;
  AddRmsNormKernel<<<T, kRowThreads, RowSmem(H), stream>>>(delta, res, weight, eps, H, out);
  return cudaGetLastError();
}

cudaError_t QkNormRope(bf16* qkv, const int32_t* positions, const float* q_weight,
                       const float* k_weight, float eps, float theta, int T, int num_q,
                       int num_kv, int head_dim, cudaStream_t stream, float inv_freq_divisor) {
  if (T <= 0) return cudaSuccess;
  if (head_dim <= 0 || head_dim % 2 != 0 || head_dim > kMaxHeadDim) return cudaErrorInvalidValue;
  QkNormRopeKernel<<<T, kRopeWarps * 32, 0, stream>>>(
      qkv, positions, q_weight, k_weight, eps, theta, inv_freq_divisor, num_q, num_kv, head_dim);
  return cudaGetLastError();
}

cudaError_t SwiGlu(const bf16* gu, int T, int I, bf16* out, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  const size_t n = size_t(T) * size_t(I);
  const int threads = 256;
  const size_t want = (n + threads - 1) / threads;
  const int blocks = int(want < 65536 ? want : 65536);  // grid-stride beyond that
  SwiGluKernel<<<blocks, threads, 0, stream>>>(gu, size_t(T), I, out);
  return cudaGetLastError();
}

cudaError_t PoolNormalize(const bf16* hidden, const int32_t* cu_seqlens, const uint8_t* mode,
                          const uint8_t* norm, int S, int H, float* out, cudaStream_t stream) {
  if (S <= 0) return cudaSuccess;
  if (H > kMaxRowFloats) return cudaErrorInvalidValue;
  PoolNormalizeKernel<<<S, kRowThreads, RowSmem(H), stream>>>(hidden, cu_seqlens, mode, norm, H,
                                                              out);
  return cudaGetLastError();
}

namespace {
template <typename T>
cudaError_t LaunchGeluErf(T* x, int T_, int N, cudaStream_t stream) {
  const size_t n = size_t(T_ > 0 ? T_ : 0) * size_t(N > 0 ? N : 0);
  if (n == 0) return cudaSuccess;
  if constexpr (std::is_same_v<T, bf16>) {
    if (n % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0) {
      GeluErfBf16x8Kernel<<<ElementBlocks(n / 8), kElementThreads, 0, stream>>>(x, n / 8);
      return cudaGetLastError();
    }
  }
  GeluErfKernel<T><<<ElementBlocks(n), kElementThreads, 0, stream>>>(x, n);
  return cudaGetLastError();
}
template <typename T>
cudaError_t LaunchTanh(T* x, int T_, int N, bool relu, cudaStream_t stream) {
  const size_t n = size_t(T_ > 0 ? T_ : 0) * size_t(N > 0 ? N : 0);
  if (n == 0) return cudaSuccess;
  if (relu) {
    ReluKernel<T><<<ElementBlocks(n), kElementThreads, 0, stream>>>(x, n);
  } else {
    TanhKernel<T><<<ElementBlocks(n), kElementThreads, 0, stream>>>(x, n);
  }
  return cudaGetLastError();
}
template <typename T>
cudaError_t LaunchResidualAdd(const bf16* delta, T* x, int T_, int N, cudaStream_t stream) {
  const size_t n = size_t(T_ > 0 ? T_ : 0) * size_t(N > 0 ? N : 0);
  if (n == 0) return cudaSuccess;
  ResidualAddKernel<T><<<ElementBlocks(n), kElementThreads, 0, stream>>>(delta, x, n);
  return cudaGetLastError();
}
template <typename In, typename Out>
cudaError_t LaunchCopyColumns(const In* in, int T_, int ld, int N, Out* out, cudaStream_t stream) {
  if (N > ld) return cudaErrorInvalidValue;
  const size_t n = size_t(T_ > 0 ? T_ : 0) * size_t(N > 0 ? N : 0);
  if (n == 0) return cudaSuccess;
  CopyColumnsKernel<In, Out>
      <<<ElementBlocks(n), kElementThreads, 0, stream>>>(in, size_t(ld), size_t(N), n, out);
  return cudaGetLastError();
}
template <typename T>
cudaError_t LaunchGatherPooledRows(const T* in, int W, const int32_t* cu, const uint8_t* mode,
                                   int S, T* out, cudaStream_t stream) {
  if (S <= 0 || W <= 0) return cudaSuccess;
  GatherPooledRowsKernel<T><<<S, kRowThreads, 0, stream>>>(in, W, cu, mode, out);
  return cudaGetLastError();
}
}  // namespace

cudaError_t GeluErf(bf16* x, int T, int N, cudaStream_t stream) {
  return LaunchGeluErf(x, T, N, stream);
}
cudaError_t GeluErf(float* x, int T, int N, cudaStream_t stream) {
  return LaunchGeluErf(x, T, N, stream);
}

cudaError_t Tanh(bf16* x, int T, int N, cudaStream_t stream) {
  return LaunchTanh(x, T, N, false, stream);
}
cudaError_t Tanh(float* x, int T, int N, cudaStream_t stream) {
  return LaunchTanh(x, T, N, false, stream);
}
cudaError_t Relu(bf16* x, int T, int N, cudaStream_t stream) {
  return LaunchTanh(x, T, N, true, stream);
}
cudaError_t Relu(float* x, int T, int N, cudaStream_t stream) {
  return LaunchTanh(x, T, N, true, stream);
}

cudaError_t ResidualAdd(const bf16* delta, bf16* x, int T, int N, cudaStream_t stream) {
  return LaunchResidualAdd(delta, x, T, N, stream);
}
cudaError_t ResidualAdd(const bf16* delta, float* x, int T, int N, cudaStream_t stream) {
  return LaunchResidualAdd(delta, x, T, N, stream);
}

cudaError_t Fp32ToBf16(const float* in, int T, int N, bf16* out, cudaStream_t stream) {
  const size_t n = size_t(T > 0 ? T : 0) * size_t(N > 0 ? N : 0);
  if (n == 0) return cudaSuccess;
  Fp32ToBf16Kernel<<<ElementBlocks(n), kElementThreads, 0, stream>>>(in, n, out);
  return cudaGetLastError();
}

cudaError_t CopyColumns(const bf16* in, int T, int ld, int N, bf16* out, cudaStream_t stream) {
  return LaunchCopyColumns(in, T, ld, N, out, stream);
}
cudaError_t CopyColumns(const bf16* in, int T, int ld, int N, float* out, cudaStream_t stream) {
  return LaunchCopyColumns(in, T, ld, N, out, stream);
}
cudaError_t CopyColumns(const float* in, int T, int ld, int N, float* out, cudaStream_t stream) {
  return LaunchCopyColumns(in, T, ld, N, out, stream);
}

cudaError_t GatherPooledRows(const bf16* in, int W, const int32_t* cu_seqlens, const uint8_t* mode,
                             int S, bf16* out, cudaStream_t stream) {
  return LaunchGatherPooledRows(in, W, cu_seqlens, mode, S, out, stream);
}
cudaError_t GatherPooledRows(const float* in, int W, const int32_t* cu_seqlens, const uint8_t* mode,
                             int S, float* out, cudaStream_t stream) {
  return LaunchGatherPooledRows(in, W, cu_seqlens, mode, S, out, stream);
}

namespace {
__global__ void RaggedAttentionIndexKernel(const int32_t* __restrict__ cu, int S, int qkv_pitch,
                                           int out_pitch, int32_t* __restrict__ seq_len,
                                           int32_t* __restrict__ qkv_offset,
                                           int32_t* __restrict__ out_offset) {
  const int s = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (s > S) return;
  const int32_t c = cu[s];
  qkv_offset[s] = c * qkv_pitch;
  out_offset[s] = c * out_pitch;
  if (s < S) seq_len[s] = cu[s + 1] - c;
}
}  // namespace

cudaError_t RaggedAttentionIndex(const int32_t* cu_seqlens, int S, int qkv_pitch, int out_pitch,
                                 int32_t* seq_len, int32_t* qkv_offset, int32_t* out_offset,
                                 cudaStream_t stream) {
  if (S <= 0) return cudaSuccess;
  const int threads = 256, blocks = (S + 1 + threads - 1) / threads;
  RaggedAttentionIndexKernel<<<blocks, threads, 0, stream>>>(cu_seqlens, S, qkv_pitch, out_pitch,
                                                             seq_len, qkv_offset, out_offset);
  return cudaGetLastError();
}

}  // namespace orchid::cuda
