#include "backends/cpu/lora.h"

#include <algorithm>

namespace orchid {
namespace {

// x . a in 8 interleaved partial sums (a vector register's worth, which the compiler keeps in
// one), added up in a fixed order.
float Dot(const float* x, const float* a, int k) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int j = 0;
  for (; j + 8 <= k; j += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += x[j + l] * a[j + l];
  }
  float s = 0.0f;
  for (; j < k; ++j) s += x[j] * a[j];
  for (int l = 0; l < 8; ++l) s += acc[l];
  return s;
}

}  // namespace

LoraDelta::LoraDelta(const std::vector<ops::LoraPart>& parts, int n, int k, bool table)
    : n_(n), k_(k), table_(table) {
  for (const ops::LoraPart& p : parts) {
    Part q;
    q.adapter = p.adapter;
    q.row_offset = p.row_offset;
    q.rank = int(p.a->dim(0));
    q.rows = int(p.b->dim(0));
    const float* a = p.a->data();
    q.a.resize(size_t(q.rank) * size_t(k));
    for (int r = 0; r < q.rank; ++r) {
      for (int j = 0; j < k; ++j) {
        const float v = a[size_t(r) * size_t(k) + size_t(j)];
        if (table) {
          q.a[size_t(j) * size_t(q.rank) + size_t(r)] = v;
        } else {
          q.a[size_t(r) * size_t(k) + size_t(j)] = v;
        }
      }
    }
    const float* b = p.b->data();
    q.bt.resize(size_t(q.rank) * size_t(q.rows));
    for (int i = 0; i < q.rows; ++i) {
      for (int r = 0; r < q.rank; ++r) {
        q.bt[size_t(r) * size_t(q.rows) + size_t(i)] =
            b[size_t(i) * size_t(q.rank) + size_t(r)] * p.scale;
      }
    }
    parts_.push_back(std::move(q));
  }
}

void LoraDelta::Apply(ThreadPool* pool, const float* in, const int32_t* ids, int rows,
                      const int32_t* seq_of_row, const std::vector<int32_t>& adapters,
                      float* out) const {
  if (adapters.empty() || rows <= 0) return;
  const int64_t kGrain = 16;
  auto run = [&](int, int64_t begin, int64_t end) {
    std::vector<float> low;
    for (int64_t t = begin; t < end; ++t) {
      const int adapter = adapters[size_t(seq_of_row[t])];
      if (adapter == 0) continue;
      float* y = out + size_t(t) * size_t(n_);
      for (const Part& p : parts_) {
        if (p.adapter != adapter) continue;
        low.assign(size_t(p.rank), 0.0f);
        if (table_) {
          const float* row = p.a.data() + size_t(ids[t]) * size_t(p.rank);
          std::copy_n(row, p.rank, low.data());
        } else {
          const float* x = in + size_t(t) * size_t(k_);
          for (int r = 0; r < p.rank; ++r) {
            low[size_t(r)] = Dot(x, p.a.data() + size_t(r) * size_t(k_), k_);
          }
        }
        float* dst = y + p.row_offset;
        for (int r = 0; r < p.rank; ++r) {
          const float c = low[size_t(r)];
          const float* bt = p.bt.data() + size_t(r) * size_t(p.rows);
          for (int i = 0; i < p.rows; ++i) dst[i] += c * bt[i];
        }
      }
    }
  };
  if (pool == nullptr) {
    run(0, 0, rows);
  } else {
    pool->ParallelFor(rows, kGrain, run);
  }
}

}  // namespace orchid
