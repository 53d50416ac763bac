#include "engine/cpu/linear.h"

#include <algorithm>

namespace orchid {
namespace {

// Rows per work item for large m: the item's rows of x and y stay in L2 while every panel of
// the weights streams past them. Measured on Sapphire Rapids-class cores (2 MB+ L2): 64 rows
// for k = 384 (96 rows loses 15%), 128 for k = 1536.
int RowChunk(int k) { return k >= 1024 ? 128 : 64; }

}  // namespace

PackedWeight PackedWeight::Pack(const float* w, int n, int k) {
  PackedWeight pw;
  pw.n_ = n;
  pw.k_ = k;
  const size_t size = PackedSize(n, k);
  pw.buf_.Reserve(size == 0 ? 1 : size);
  PackRows(w, n, k, k, pw.buf_.data());
  return pw;
}

void Linear(ThreadPool* pool, const float* x, int m, int ldx, const PackedWeight& w,
            const float* bias, float* y, int ldy, LinearEpilogue epilogue) {
  if (m <= 0 || w.n() <= 0) return;
  const PanelView view = w.view();
  const int panels = view.panels();
  const int threads = PoolSize(pool);
  const int chunk = RowChunk(w.k());
  const int row_chunks = (m + chunk - 1) / chunk;
  // Few row chunks: split the panels too, so every thread has work (and reads only its share
  // of the weights, which is what bounds a short query). Several pieces per thread, handed
  // out dynamically, so a thread the OS delays does not hold the others up for long.
  const int panel_splits =
      threads > 1 && row_chunks < 2 * threads ? std::min(4 * threads, (panels + 2) / 3) : 1;
  const int64_t items = int64_t(row_chunks) * panel_splits;
  auto run = [&](int, int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int rc = int(item / panel_splits), ps = int(item % panel_splits);
      int64_t p0, p1;
      SplitRange(panels, panel_splits, ps, 3, &p0, &p1);
      PackedGemmTiles(x, ldx, view, 1.0f, bias, y, ldy, epilogue, rc * chunk,
                      std::min(m, (rc + 1) * chunk), int(p0), int(p1));
    }
  };
  ParallelFor(pool, items, 1, run);
}

}  // namespace orchid
