#include "backends/cpu/linear.h"

#include <algorithm>

#include "backends/cpu/gelu.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/vec_math.h"
#include "backends/cpu/cpu_features.h"

namespace orchid {
namespace {

// Rows per work item for large m: the item's rows of x and y stay in L2 while every panel of
// the weights streams past them. Measured on Sapphire Rapids-class cores (2 MB+ L2): 64 rows
// for k = 384 (96 rows loses 15%), 128 for k = 1536.
int RowChunk(int k) { return k >= 1024 ? 128 : 64; }

// kFloat32Blas: cblas_sgemm on pieces of rows x columns (columns in multiples of 16, split
// only when there are too few row chunks to keep every thread busy), then the epilogue on the
// piece while it is still in cache.
void LinearBlas(ThreadPool* pool, const float* x, int m, int ldx, const PackedWeight& w,
                const float* bias, float* y, int ldy, LinearEpilogue epilogue) {
  const int n = w.n(), k = w.k();
  const int threads = PoolSize(pool);
  const int chunk = RowChunk(k);
  const int row_chunks = (m + chunk - 1) / chunk;
  const int col_blocks = (n + 15) / 16;
  const int col_splits =
      threads > 1 && row_chunks < 2 * threads ? std::min(4 * threads, (col_blocks + 2) / 3) : 1;
  const int64_t items = int64_t(row_chunks) * col_splits;
  ParallelFor(pool, items, 1, [&](int, int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int rc = int(item / col_splits), cs = int(item % col_splits);
      int64_t c0, c1;
      SplitRange(n, col_splits, cs, 16, &c0, &c1);
      const int r0 = rc * chunk, r1 = std::min(m, (rc + 1) * chunk);
      if (c0 >= c1) continue;
      const int cols = int(c1 - c0);
      float* out = y + size_t(r0) * ldy + c0;
      // (cblas wants leading dimensions >= 1, k = 0 included.)
      Gemm(false, true, r1 - r0, cols, k, 1.0f, x + size_t(r0) * ldx, std::max(ldx, 1),
           w.rows() + size_t(c0) * k, std::max(k, 1),
           epilogue == LinearEpilogue::kAccumulate ? 1.0f : 0.0f, out, ldy);
      for (int r = r0; r < r1; ++r, out += ldy) {
        if (epilogue == LinearEpilogue::kGelu) {
          BiasGelu(out, bias == nullptr ? nullptr : bias + c0, size_t(cols));
        } else if (bias != nullptr) {
          for (int c = 0; c < cols; ++c) out[c] += bias[c0 + c];
        }
      }
    }
  });
}

}  // namespace

bool ParseWeightType(const std::string& name, WeightType* out) {
  if (name == "float32" || name == "fp32") {
    *out = WeightType::kFloat32;
  } else if (name == "bfloat16" || name == "bf16") {
    *out = WeightType::kBfloat16;
  } else if (name == "int8") {
    *out = WeightType::kInt8;
  } else {
    return false;
  }
  return true;
}

const char* WeightTypeName(WeightType type) {
  switch (type) {
    case WeightType::kBfloat16:
      return "bfloat16";
    case WeightType::kFloat32Blas:
      return "float32 (BLAS)";
    case WeightType::kInt8:
      return "int8";
    case WeightType::kFloat32:
      break;
  }
  return "float32";
}

bool ResolveWeightType(const std::string& dtype, const std::string& gemm, WeightType* out,
                       std::string* error) {
  WeightType type = WeightType::kFloat32;
  if (!dtype.empty() && !ParseWeightType(dtype, &type)) {
    *error = "--dtype must be float32, bfloat16 or int8, not " + dtype;
    return false;
  }
  if (gemm == "blas") {
    if (type == WeightType::kBfloat16 || type == WeightType::kInt8) {
      *error = "--gemm blas multiplies float32 only; use --gemm packed with --dtype " + dtype;
      return false;
    }
    type = WeightType::kFloat32Blas;
  } else if (gemm.empty() || gemm == "auto") {
    // The packed kernel needs AVX2 + FMA or AVX-512 to beat the library; elsewhere (older x86,
    // other architectures) its scalar path is far slower than OpenBLAS's own kernels.
    if (type == WeightType::kFloat32 && !UseAvx2() && !UseAvx512()) {
      type = WeightType::kFloat32Blas;
    }
  } else if (gemm != "packed") {
    *error = "--gemm must be auto, packed or blas, not " + gemm;
    return false;
  }
  *out = type;
  return true;
}

PackedWeight PackedWeight::QuantizeInt8(const float* w, int n, int k, const float* smoothing,
                                        const std::vector<int>& outliers, int column_slices) {
  PackedWeight pw;
  pw.n_ = n;
  pw.k_ = k;
  pw.type_ = WeightType::kInt8;
  pw.int8_ = Int8Weight::Quantize(w, n, k, smoothing, outliers, column_slices);
  return pw;
}

PackedWeight PackedWeight::Pack(const float* w, int n, int k, WeightType type) {
  PackedWeight pw;
  pw.n_ = n;
  pw.k_ = k;
  pw.type_ = type;
  if (type == WeightType::kInt8) {
    pw.int8_ = Int8Weight::Quantize(w, n, k);
  } else if (type == WeightType::kBfloat16) {
    const size_t size = PackedSizeBf16(n, k);
    pw.buf16_.Reserve(size == 0 ? 1 : size);
    PackRowsBf16(w, n, k, k, pw.buf16_.data());
    if (Bf16GemmSetting() != Bf16Gemm::kPacked) {
      OneDnnBf16Weight onednn = OneDnnBf16Weight::Pack(w, n, k);
      if (ChooseBf16Gemm(onednn, pw.bf16_view())) {
        pw.onednn_bf16_ = std::move(onednn);
        pw.buf16_ = Buffer<bf16>();  // only one copy of the weights stays
      }
    }
  } else if (type == WeightType::kFloat32Blas) {
    pw.buf_.Reserve(size_t(n) * size_t(k) + 1);
    std::copy(w, w + size_t(n) * size_t(k), pw.buf_.data());
  } else {
    const size_t size = PackedSize(n, k);
    pw.buf_.Reserve(size == 0 ? 1 : size);
    PackRows(w, n, k, k, pw.buf_.data());
  }
  return pw;
}

void Linear(ThreadPool* pool, const float* x, int m, int ldx, const PackedWeight& w,
            const float* bias, float* y, int ldy, LinearEpilogue epilogue) {
  if (m <= 0 || w.n() <= 0) return;
  if (w.type() == WeightType::kFloat32Blas) {
    return LinearBlas(pool, x, m, ldx, w, bias, y, ldy, epilogue);
  }
  if (w.type() == WeightType::kInt8) {
    return w.int8().Run(pool, x, m, ldx, bias, y, ldy, epilogue);
  }
  const bool half = w.type() == WeightType::kBfloat16;
  if (half && !w.onednn_bf16().empty()) {
    return w.onednn_bf16().Run(pool, x, m, ldx, bias, y, ldy, epilogue);
  }
  const int panels = w.panels();
  const int threads = PoolSize(pool);
  const int chunk = RowChunk(w.k());
  const int row_chunks = (m + chunk - 1) / chunk;
  // bfloat16: the input rounded once per call into per-thread scratch (rows padded to even k).
  thread_local Buffer<bf16> scratch;
  const int ldxb = 2 * ((w.k() + 1) / 2);
  if (half) {
    scratch.Reserve(size_t(m) * size_t(ldxb) + 1);
    bf16* xb = scratch.data();
    ParallelFor(pool, row_chunks, 1, [&](int, int64_t begin, int64_t end) {
      ConvertRowsBf16(x, ldx, w.k(), xb, ldxb, int(begin) * chunk, std::min(m, int(end) * chunk));
    });
  }
  // Few row chunks: split the panels too, so every thread has work (and reads only its share
  // of the weights, which is what bounds a short query). Several pieces per thread, handed
  // out dynamically, so a thread the OS delays does not hold the others up for long.
  const int panel_splits =
      threads > 1 && row_chunks < 2 * threads ? std::min(4 * threads, (panels + 2) / 3) : 1;
  const int64_t items = int64_t(row_chunks) * panel_splits;
  const bf16* xb = scratch.data();
  auto run = [&](int, int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int rc = int(item / panel_splits), ps = int(item % panel_splits);
      int64_t p0, p1;
      SplitRange(panels, panel_splits, ps, 3, &p0, &p1);
      const int r0 = rc * chunk, r1 = std::min(m, (rc + 1) * chunk);
      if (half) {
        PackedGemmTilesBf16(xb, ldxb, w.bf16_view(), bias, y, ldy, epilogue, r0, r1, int(p0),
                            int(p1));
      } else {
        PackedGemmTiles(x, ldx, w.view(), 1.0f, bias, y, ldy, epilogue, r0, r1, int(p0), int(p1));
      }
    }
  };
  ParallelFor(pool, items, 1, run);
}

}  // namespace orchid
