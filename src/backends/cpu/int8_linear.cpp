#include "backends/cpu/int8_linear.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <vector>

#include "backends/cpu/gelu.h"
#include "backends/cpu/onednn.h"
#include "backends/cpu/vec_math.h"
#include "backends/cpu/cpu_features.h"

namespace orchid {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Input channels a layer may keep out of int8 (Quantize's outliers), at most.
constexpr int kMaxOutliers = 256;

// Run's pieces: one block size of onednn::BlockedMatmul, whose int32 products take this many
// bytes at most (they stay in L2 until finished).
constexpr int kPieceBytes = 384 * 1024;

// Per-thread scratch that only grows.
template <typename T>
T* Scratch(std::vector<T>* v, size_t n) {
  if (v->size() < n) v->resize(n);
  return v->data();
}

// Symmetric int8 of one weight row w (times `mul` when given): returns the scale.
float QuantizeWeightRow(const float* w, int k, const float* mul, int8_t* q) {
  float amax = 0.0f;
  for (int i = 0; i < k; ++i) amax = std::max(amax, std::fabs(mul ? w[i] * mul[i] : w[i]));
  if (amax == 0.0f) {
    std::fill_n(q, std::max(k, 0), int8_t{0});
    return 1.0f;
  }
  const float inv = 127.0f / amax;
  for (int i = 0; i < k; ++i) {
    // nearbyint: to nearest, ties to even; |w| <= amax keeps it within [-127, 127].
    q[i] = int8_t(std::nearbyint((mul ? w[i] * mul[i] : w[i]) * inv));
  }
  return amax / 127.0f;
}

// The activation row's range and the scaled copy t = x * mul (t = x when mul is null).
#if ORCHID_HAVE_X86_SIMD
ORCHID_AVX512 void RangeAvx512(const float* x, int k, const float* mul, float* t, float* lo,
                               float* hi) {
  __m512 vlo = _mm512_set1_ps(INFINITY), vhi = _mm512_set1_ps(-INFINITY);
  int i = 0;
  for (; i + 16 <= k; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    if (mul) {
      v = _mm512_mul_ps(v, _mm512_loadu_ps(mul + i));
      _mm512_storeu_ps(t + i, v);
    }
    vlo = _mm512_min_ps(vlo, v);
    vhi = _mm512_max_ps(vhi, v);
  }
  float l = _mm512_reduce_min_ps(vlo), h = _mm512_reduce_max_ps(vhi);
  for (; i < k; ++i) {
    const float v = mul ? (t[i] = x[i] * mul[i]) : x[i];
    l = std::min(l, v);
    h = std::max(h, v);
  }
  *lo = l;
  *hi = h;
}

ORCHID_AVX512 void RoundAvx512(const float* t, int k, float lo, float inv, uint8_t* q) {
  const __m512 vlo = _mm512_set1_ps(lo), vinv = _mm512_set1_ps(inv);
  int i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(t + i), vlo), vinv);
    // cvtps: the MXCSR's rounding, to nearest even; vpmovusdb saturates to [0, 255].
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(q + i),
        _mm512_cvtusepi32_epi8(_mm512_max_epi32(_mm512_cvtps_epi32(v), _mm512_setzero_si512())));
  }
  for (; i < k; ++i) q[i] = uint8_t(std::clamp(std::nearbyint((t[i] - lo) * inv), 0.0f, 255.0f));
}

// out = a s s_w + lo wsum (+ bias) + sum_o xo[o] wo[o, :] (a: the row's int32 products), into y
// (kNone), added to it (kAccumulate), or (kGelu) y = gelu(out + gelu_bias): the AVX-512 path
// applies the GELU before its store, bit for bit what BiasGelu does after it (gelu.h), one pass
// over the row fewer; the scalar path leaves it to BiasGelu.
struct RowTerms {
  const float* sw;  // s_w[n]
  const float* wsum;
  const float* bias;  // null: none
  int num_outliers;
  const float* xo;  // the row's outlier inputs
  const float* wo;  // [num_outliers, wo_ld]
  int wo_ld;
  bool gelu;
  const float* gelu_bias;  // null: none (kGelu)
};

// One 16-column block of FinishRowAvx512 up to the outliers: a s s_w + lo wsum (+ bias).
ORCHID_AVX512 inline __m512 DequantizeBlock(const int32_t* a, const RowTerms& t, __m512 vs,
                                            __m512 vlo, int c) {
  const __m512 prod =
      _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(a + c)), _mm512_loadu_ps(t.sw + c));
  __m512 v = _mm512_fmadd_ps(prod, vs, _mm512_mul_ps(vlo, _mm512_loadu_ps(t.wsum + c)));
  if (t.bias) v = _mm512_add_ps(v, _mm512_loadu_ps(t.bias + c));
  return v;
}

// ...and after them: the accumulation, the GELU and the store.
ORCHID_AVX512 inline void StoreBlock(__m512 v, const RowTerms& t, bool accumulate, float* y,
                                     int c) {
  if (accumulate) v = _mm512_add_ps(v, _mm512_loadu_ps(y + c));
  if (t.gelu) {
    if (t.gelu_bias) v = _mm512_add_ps(v, _mm512_loadu_ps(t.gelu_bias + c));
    v = simd::Gelu(v);
  }
  _mm512_storeu_ps(y + c, v);
}

ORCHID_AVX512 void FinishRowAvx512(const int32_t* a, int n, float s, float lo, const RowTerms& t,
                                   bool accumulate, float* y) {
  const __m512 vs = _mm512_set1_ps(s), vlo = _mm512_set1_ps(lo);
  int c = 0;
  // Four blocks at a time: each outlier's broadcast serves four independent FMA chains (one
  // chain per block is latency-bound). Every element sees the same operations in the same
  // order as in the one-block loop below.
  for (; c + 64 <= n; c += 64) {
    __m512 v0 = DequantizeBlock(a, t, vs, vlo, c), v1 = DequantizeBlock(a, t, vs, vlo, c + 16),
           v2 = DequantizeBlock(a, t, vs, vlo, c + 32), v3 = DequantizeBlock(a, t, vs, vlo, c + 48);
    for (int o = 0; o < t.num_outliers; ++o) {
      const __m512 xo = _mm512_set1_ps(t.xo[o]);
      const float* wo = t.wo + size_t(o) * size_t(t.wo_ld) + size_t(c);
      v0 = _mm512_fmadd_ps(xo, _mm512_loadu_ps(wo), v0);
      v1 = _mm512_fmadd_ps(xo, _mm512_loadu_ps(wo + 16), v1);
      v2 = _mm512_fmadd_ps(xo, _mm512_loadu_ps(wo + 32), v2);
      v3 = _mm512_fmadd_ps(xo, _mm512_loadu_ps(wo + 48), v3);
    }
    StoreBlock(v0, t, accumulate, y, c);
    StoreBlock(v1, t, accumulate, y, c + 16);
    StoreBlock(v2, t, accumulate, y, c + 32);
    StoreBlock(v3, t, accumulate, y, c + 48);
  }
  for (; c + 16 <= n; c += 16) {
    __m512 v = DequantizeBlock(a, t, vs, vlo, c);
    for (int o = 0; o < t.num_outliers; ++o) {
      v = _mm512_fmadd_ps(_mm512_set1_ps(t.xo[o]),
                          _mm512_loadu_ps(t.wo + size_t(o) * size_t(t.wo_ld) + size_t(c)), v);
    }
    StoreBlock(v, t, accumulate, y, c);
  }
  const int tail = c;
  for (; c < n; ++c) {
    float v = float(a[c]) * t.sw[c] * s + lo * t.wsum[c] + (t.bias ? t.bias[c] : 0.0f);
    for (int o = 0; o < t.num_outliers; ++o)
      v += t.xo[o] * t.wo[size_t(o) * size_t(t.wo_ld) + size_t(c)];
    y[c] = accumulate ? y[c] + v : v;
  }
  if (t.gelu && tail < n)
    BiasGelu(y + tail, t.gelu_bias ? t.gelu_bias + tail : nullptr, size_t(n - tail));
}
#endif

void RangeScalar(const float* x, int k, const float* mul, float* t, float* lo, float* hi) {
  float l = INFINITY, h = -INFINITY;
  for (int i = 0; i < k; ++i) {
    const float v = mul ? (t[i] = x[i] * mul[i]) : x[i];
    l = std::min(l, v);
    h = std::max(h, v);
  }
  *lo = l;
  *hi = h;
}

void FinishRowScalar(const int32_t* a, int n, float s, float lo, const RowTerms& t,
                     bool accumulate, float* y) {
  for (int c = 0; c < n; ++c) {
    float v = float(a[c]) * t.sw[c] * s + lo * t.wsum[c] + (t.bias ? t.bias[c] : 0.0f);
    for (int o = 0; o < t.num_outliers; ++o)
      v += t.xo[o] * t.wo[size_t(o) * size_t(t.wo_ld) + size_t(c)];
    y[c] = accumulate ? y[c] + v : v;
  }
}

int LevelsForIsa() {
  onednn::EnableAmx();
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx2_vnni:
      return 255;
    default:
      return 127;
  }
}

}  // namespace

int Int8ActivationLevels() {
  static const int levels = LevelsForIsa();
  return levels;
}

float QuantizeActivationRow(const float* x, int k, const float* mul, int levels, uint8_t* q,
                            float* lo) {
  thread_local std::vector<float> tmp_buf;
  float* t = mul ? Scratch(&tmp_buf, size_t(k)) : nullptr;
  float l = 0, h = 0;
#if ORCHID_HAVE_X86_SIMD
  const bool avx512 = UseAvx512();
  if (avx512) {
    RangeAvx512(x, k, mul, t, &l, &h);
  } else {
    RangeScalar(x, k, mul, t, &l, &h);
  }
#else
  RangeScalar(x, k, mul, t, &l, &h);
#endif
  *lo = l;
  if (!(h > l)) {  // a constant row (or k == 0): x = lo exactly
    std::fill_n(q, std::max(k, 0), uint8_t{0});
    return 0.0f;
  }
  const float s = (h - l) / float(levels);
  const float inv = float(levels) / (h - l);
  const float* src = mul ? t : x;
#if ORCHID_HAVE_X86_SIMD
  if (avx512) {
    RoundAvx512(src, k, l, inv, q);
    return s;
  }
#endif
  for (int i = 0; i < k; ++i) {
    q[i] = uint8_t(std::clamp(std::nearbyint((src[i] - l) * inv), 0.0f, float(levels)));
  }
  return s;
}

// Output columns [c0, c0 + n) of a layer: their matmul (u8 x s8 -> s32) and weights (in the
// primitives' layout).
struct Int8Weight::Slice {
  int c0 = 0, n = 0;
  onednn::BlockedMatmul matmul;
  dnnl::memory weights;
};

struct Int8Weight::Impl {
  // All the columns, and the column slices (none: one slice, `whole`), whose weights point into
  // whole's (Quantize makes none where oneDNN's layout does not allow it).
  Slice whole;
  std::vector<Slice> slices;
  std::vector<float> scales;     // s_w
  std::vector<float> wsum;       // s_w[n] sum_k Wq[n,k]: the zero point's term
  std::vector<float> inv_smoothing;  // 1 / c[k] (0 for an outlier channel); empty: none
  std::vector<int> outliers;         // input channels multiplied in fp32
  std::vector<float> outlier_w;      // [outliers, n]: W's columns for them, transposed
};

Int8Weight Int8Weight::Quantize(const float* w, int n, int k, const float* smoothing,
                                const std::vector<int>& outliers, int column_slices) {
  Int8Weight out;
  out.n_ = n;
  out.k_ = k;
  auto impl = std::make_shared<Impl>();
  // An outlier channel's factor is 0: its int8 weight column and its quantized input are 0.
  std::vector<float> mul;
  if (outliers.size() > size_t(kMaxOutliers)) {
    throw std::invalid_argument("int8: more than 256 outlier channels");
  }
  if (smoothing != nullptr || !outliers.empty()) {
    mul.assign(size_t(k), 1.0f);
    if (smoothing != nullptr) mul.assign(smoothing, smoothing + k);
    impl->outliers = outliers;
    impl->outlier_w.resize(outliers.size() * size_t(n));
    for (size_t o = 0; o < outliers.size(); ++o) {
      const int j = outliers[o];
      mul[size_t(j)] = 0.0f;
      for (int r = 0; r < n; ++r)
        impl->outlier_w[o * size_t(n) + size_t(r)] = w[size_t(r) * size_t(k) + size_t(j)];
    }
    smoothing = mul.data();
  }
  impl->scales.resize(size_t(n));
  impl->wsum.resize(size_t(n));
  // Row-major until oneDNN's reorders below have their copies.
  std::vector<int8_t> quantized(size_t(n) * size_t(k));
  for (int r = 0; r < n; ++r) {
    int8_t* q = quantized.data() + size_t(r) * size_t(k);
    impl->scales[size_t(r)] = QuantizeWeightRow(w + size_t(r) * size_t(k), k, smoothing, q);
    int64_t sum = 0;
    for (int i = 0; i < k; ++i) sum += q[i];
    impl->wsum[size_t(r)] = impl->scales[size_t(r)] * float(sum);
  }
  if (smoothing != nullptr) {
    impl->inv_smoothing.resize(size_t(k));
    for (int i = 0; i < k; ++i) {
      impl->inv_smoothing[size_t(i)] = smoothing[i] == 0.0f ? 0.0f : 1.0f / smoothing[i];
    }
  }
  const dnnl::engine& eng = onednn::Engine();
  // Columns [c0, c0 + n) of the quantized weights in the layout their primitives prefer.
  auto make_slice = [&](int c0, int width) {
    Slice slice;
    slice.c0 = c0;
    slice.n = width;
    // int32 products (no output scales: they would make every layer's primitives its own and
    // keep oneDNN's primitive cache from sharing the kernels between layers of one shape).
    slice.matmul = onednn::BlockedMatmul::Create(dt::u8, dt::s8, dt::s32, k, width,
                                                 /*bias=*/false, /*sum=*/false);
    if (slice.matmul.empty()) {
      throw std::runtime_error("int8: oneDNN makes no u8 x s8 matmul on this CPU");
    }
    // y = x W^T: W's rows [c0, c0 + n) ([n, k] row-major) are W^T's columns, [k, n] "ba".
    dnnl::memory plain({{k, width}, dt::s8, tag::ba}, eng,
                       quantized.data() + size_t(c0) * size_t(k));
    slice.weights = dnnl::memory(slice.matmul.weights_desc(), eng);
    onednn::OneThread one;
    dnnl::stream st(eng);
    dnnl::reorder(plain, slice.weights).execute(st, plain, slice.weights);
    st.wait();
    return slice;
  };
  impl->whole = make_slice(0, n);
  // Slices of whole 64-column blocks where n allows (else 16), at least 64 columns each.
  const int count = std::clamp(std::min(column_slices, n / 64), 1, std::max(1, n / 16));
  const int align = n % 64 == 0 ? 64 : 16;
  size_t offset = 0;  // where the next slice's weights would start in whole's
  bool shared = true;
  for (int sl = 0; count > 1 && shared && sl < count; ++sl) {
    const int c0 = int(int64_t(n) * sl / count) / align * align;
    const int c1 = sl + 1 == count ? n : int(int64_t(n) * (sl + 1) / count) / align * align;
    Slice slice = make_slice(c0, c1 - c0);
    // oneDNN's blocked layouts keep each block of output columns together: then a slice's
    // weights are bytes [offset, offset + size) of the whole layer's, and the slices need no
    // copy of their own. Checked byte for byte, not assumed (a layout may pad or append).
    const size_t size = slice.weights.get_desc().get_size();
    const auto* base = static_cast<const uint8_t*>(impl->whole.weights.get_data_handle());
    shared = shared && offset + size <= impl->whole.weights.get_desc().get_size() &&
             std::memcmp(base + offset, slice.weights.get_data_handle(), size) == 0;
    offset += size;
    impl->slices.push_back(std::move(slice));
  }
  if (shared) {
    offset = 0;
    for (Slice& slice : impl->slices) {
      const dnnl::memory::desc d = slice.weights.get_desc();
      slice.weights = dnnl::memory(
          d, eng, static_cast<uint8_t*>(impl->whole.weights.get_data_handle()) + offset);
      offset += d.get_size();
    }
  } else {
    // No slices: their own copies would double the weights, and the rows' path would run
    // one small matmul per slice (one per thread) instead of one over all the columns.
    impl->slices.clear();
  }
  out.impl_ = std::move(impl);
  return out;
}

const float* Int8Weight::scales() const { return impl_->scales.data(); }
std::vector<int8_t> Int8Weight::quantized() const {
  // Back from the primitives' layout: the whole layer's, or each slice's rows.
  std::vector<int8_t> out(size_t(n_) * size_t(k_));
  const dnnl::engine& eng = onednn::Engine();
  onednn::OneThread one;
  dnnl::stream st(eng);
  dnnl::memory plain({{k_, n_}, dt::s8, tag::ba}, eng, out.data());
  dnnl::memory packed = impl_->whole.weights;
  dnnl::reorder(packed, plain).execute(st, packed, plain);
  st.wait();
  return out;
}
const std::string& Int8Weight::kernel() const { return impl_->whole.matmul.impl(); }
int Int8Weight::column_slices() const { return std::max(1, int(impl_->slices.size())); }

namespace {

// The largest block size of onednn::BlockedMatmul whose int32 products (rows x n) fit
// kPieceBytes: the rows a thread runs at a time.
int PieceRows(int n) {
  for (int rows : onednn::BlockedMatmul::kRows) {
    if (size_t(rows) * size_t(n) * 4 <= size_t(kPieceBytes)) return rows;
  }
  return onednn::BlockedMatmul::kTail;
}

}  // namespace

void Int8Weight::RunPiece(const float* x, int rows, int ldx, const float* bias, float* y, int ldy,
                          Epilogue epilogue, const Slice* slices, int count) const {
  const int k = k_, n = n_;
  const Impl& impl = *impl_;
  const float* inv_c = impl.inv_smoothing.empty() ? nullptr : impl.inv_smoothing.data();
  const int levels = Int8ActivationLevels();
  const int piece = PieceRows(n);
  thread_local std::vector<uint8_t> q_buf;
  thread_local std::vector<float> row_buf;
  thread_local std::vector<int32_t> acc_buf;
  uint8_t* q = Scratch(&q_buf, size_t(piece) * size_t(k));
  float* scale = Scratch(&row_buf, size_t(piece) * 2);
  float* lo = scale + piece;
  // Slice s's products: [rows, slice n] from acc + piece * c0.
  int32_t* acc = Scratch(&acc_buf, size_t(piece) * size_t(n));
  for (int r = 0; r < rows; ++r) {
    scale[r] = QuantizeActivationRow(x + size_t(r) * size_t(ldx), k, inv_c, levels,
                                     q + size_t(r) * size_t(k), &lo[r]);
  }
  for (int sl = 0; sl < count; ++sl) {
    const Slice& slice = slices[sl];
    slice.matmul.Run(q, rows, slice.weights, nullptr, acc + size_t(piece) * size_t(slice.c0),
                     false);
  }
  const bool accumulate = epilogue == Epilogue::kAccumulate;
  const bool gelu = epilogue == Epilogue::kGelu;
  const float* b = gelu ? nullptr : bias;  // (kGelu: added just before the GELU)
  const int num_outliers = int(impl.outliers.size());
  float xo[kMaxOutliers];
  for (int r = 0; r < rows; ++r) {
    float* out = y + size_t(r) * size_t(ldy);
    const float* xr = x + size_t(r) * size_t(ldx);
    for (int o = 0; o < num_outliers; ++o) xo[o] = xr[impl.outliers[size_t(o)]];
    for (int sl = 0; sl < count; ++sl) {
      const int c0 = slices[sl].c0, w = slices[sl].n;
      const int32_t* a = acc + size_t(piece) * size_t(c0) + size_t(r) * size_t(w);
      const RowTerms terms{impl.scales.data() + c0,
                           impl.wsum.data() + c0,
                           b ? b + c0 : nullptr,
                           num_outliers,
                           xo,
                           impl.outlier_w.data() + c0,
                           n,
                           gelu,
                           bias ? bias + c0 : nullptr};
#if ORCHID_HAVE_X86_SIMD
      if (UseAvx512()) {
        FinishRowAvx512(a, w, scale[r], lo[r], terms, accumulate, out + c0);  // GELU included
        continue;
      }
#endif
      FinishRowScalar(a, w, scale[r], lo[r], terms, accumulate, out + c0);
      if (gelu) BiasGelu(out + c0, terms.gelu_bias, size_t(w));
    }
  }
}

void Int8Weight::Run(ThreadPool* pool, const float* x, int m, int ldx, const float* bias, float* y,
                     int ldy, Epilogue epilogue) const {
  if (m <= 0 || n_ <= 0) return;
  constexpr int kTail = onednn::BlockedMatmul::kTail;
  const Impl& impl = *impl_;
  const int threads = PoolSize(pool), slices = int(impl.slices.size());
  // Pieces of rows whose int32 products stay in L2 until they are finished.
  const int piece = PieceRows(n_);
  if (slices > 1 && (m + kTail - 1) / kTail < threads) {
    // Too few 16-row blocks to share out (a short query): the threads share the columns
    // instead, each quantizing every row and reading only its slices' weights. The int32
    // products are exact, so a row's result is the same bits either way.
    ParallelFor(pool, slices, 1, [&](int, int64_t s0, int64_t s1) {
      for (int64_t sl = s0; sl < s1; ++sl) {
        for (int begin = 0; begin < m; begin += piece) {
          RunPiece(x + size_t(begin) * size_t(ldx), std::min(piece, m - begin), ldx, bias,
                   y + size_t(begin) * size_t(ldy), ldy, epilogue, &impl.slices[size_t(sl)], 1);
        }
      }
    });
    return;
  }
  // Row ranges: one per thread, in whole 16-row blocks (onednn.h), on the whole layer's matmul.
  const int64_t per_thread = std::max<int64_t>((m + threads - 1) / threads, kTail);
  const int64_t grain = (per_thread + kTail - 1) / kTail * kTail;
  ParallelFor(pool, m, grain, [&](int, int64_t range_begin, int64_t range_end) {
    for (int64_t begin = range_begin; begin < range_end; begin += piece) {
      const int rows = int(std::min<int64_t>(piece, range_end - begin));
      RunPiece(x + size_t(begin) * size_t(ldx), rows, ldx, bias, y + size_t(begin) * size_t(ldy),
               ldy, epilogue, &impl.whole, 1);
    }
  });
}

const char* OneDnnIsa() {
  onednn::EnableAmx();
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx:
      return "AMX (avx512_core_amx)";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "AVX512-BF16 (avx512_core_bf16)";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "AVX512-VNNI (avx512_core_vnni)";
    case dnnl::cpu_isa::avx512_core:
      return "AVX-512 (avx512_core)";
    case dnnl::cpu_isa::avx2_vnni:
      return "AVX-VNNI (avx2_vnni)";
    case dnnl::cpu_isa::avx2:
      return "AVX2 (avx2)";
    default:
      return "an older ISA";
  }
}

}  // namespace orchid
