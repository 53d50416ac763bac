#include "engine/cpu/linear.h"

#include <algorithm>

namespace orchid {
namespace {

// Rows per work item for large m: the item's rows of x and y stay in L2 while every panel of
// the weights streams past them. Measured on Sapphire Rapids-class cores (2 MB+ L2): 64 rows
// for k = 384 (96 rows loses 15%), 128 for k = 1536.
int RowChunk(int k) { return k >= 1024 ? 128 : 64; }

}  // namespace

bool ParseWeightType(const std::string& name, WeightType* out) {
  if (name == "float32" || name == "fp32") {
    *out = WeightType::kFloat32;
  } else if (name == "bfloat16" || name == "bf16") {
    *out = WeightType::kBfloat16;
  } else {
    return false;
  }
  return true;
}

const char* WeightTypeName(WeightType type) {
  return type == WeightType::kBfloat16 ? "bfloat16" : "float32";
}

PackedWeight PackedWeight::Pack(const float* w, int n, int k, WeightType type) {
  PackedWeight pw;
  pw.n_ = n;
  pw.k_ = k;
  pw.type_ = type;
  if (type == WeightType::kBfloat16) {
    const size_t size = PackedSizeBf16(n, k);
    pw.buf16_.Reserve(size == 0 ? 1 : size);
    PackRowsBf16(w, n, k, k, pw.buf16_.data());
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
  const bool half = w.type() == WeightType::kBfloat16;
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
      ConvertRowsBf16(x, ldx, w.k(), xb, ldxb, int(begin) * chunk,
                      std::min(m, int(end) * chunk));
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
        PackedGemmTiles(x, ldx, w.view(), 1.0f, bias, y, ldy, epilogue, r0, r1, int(p0),
                        int(p1));
      }
    }
  };
  ParallelFor(pool, items, 1, run);
}

}  // namespace orchid
