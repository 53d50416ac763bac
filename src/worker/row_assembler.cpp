#include "worker/row_assembler.h"

#include <cmath>
#include <cstring>
#include <string>

namespace orchid {

void TruncateDimensions(Embeddings* m, int dims, bool renormalize) {
  const size_t d = size_t(dims);
  for (int r = 0; r < m->rows; ++r) {
    const float* src = m->row(r);
    float* dst = m->data.data() + size_t(r) * d;  // rows move down in place: dst <= src
    double sq = 0;
    for (size_t c = 0; c < d; ++c) sq += double(src[c]) * double(src[c]);
    const double norm = std::sqrt(sq);
    const float scale = !renormalize ? 1.0f : norm > 0 ? float(1.0 / norm) : 0.0f;
    for (size_t c = 0; c < d; ++c) dst[c] = src[c] * scale;
  }
  m->dim = dims;
  m->data.resize(size_t(m->rows) * d);
}

namespace {

// Per-token output (Pooling::kNone): the slice's token rows, at their place among the
// request's tokens, whose first is `row` of `rows`. False when the request failed.
bool CopyTokenRows(const Embeddings& rows, size_t row, const BatchSlice& s,
                   bool pooled_with_tokens) {
  PendingRequest& e = *s.entry;
  if (!rows.has_tokens() || rows.token_offsets.size() != size_t(rows.rows) + 1) {
    e.Fail(Status::Internal("engine returned no per-token rows"));
    return false;
  }
  const size_t tdim = size_t(rows.token_dim);
  const size_t before = e.token_start[s.first], total = e.token_start.back();
  if (e.out.data.empty()) {
    e.out.rows = int(total);
    e.out.dim = int(tdim);
    e.out.data.resize(total * tdim);
  }
  const int32_t t0 = rows.token_offsets[row], t1 = rows.token_offsets[row + s.count];
  if (before + size_t(t1 - t0) > total || size_t(rows.tokens.size()) < size_t(t1) * tdim) {
    e.Fail(Status::Internal("engine returned per-token rows of the wrong shape"));
    return false;
  }
  std::memcpy(e.out.data.data() + before * tdim, rows.tokens.data() + size_t(t0) * tdim,
              size_t(t1 - t0) * tdim * sizeof(float));
  if (pooled_with_tokens) {
    // Its pooled rows (BGE-M3's dense vectors) come with the token rows.
    const size_t dim = size_t(rows.dim);
    if (e.out.pooled.empty()) e.out.pooled.resize(e.request.sequences.size() * dim);
    std::memcpy(e.out.pooled.data() + s.first * dim, rows.row(int(row)),
                s.count * dim * sizeof(float));
  }
  return true;
}

// Pooled output: the slice's rows, at their sequences' places. False when the request failed.
bool CopyPooledRows(const Embeddings& rows, size_t row, const BatchSlice& s) {
  PendingRequest& e = *s.entry;
  const size_t dim = size_t(rows.dim);
  if (e.out.data.empty()) {
    e.out.rows = int(e.request.sequences.size());
    e.out.dim = rows.dim;
    e.out.data.resize(e.request.sequences.size() * dim);
  } else if (e.out.dim != rows.dim) {
    e.Fail(Status::Internal("engine changed the embedding dimension between batches"));
    return false;
  }
  std::memcpy(e.out.data.data() + s.first * dim, rows.row(int(row)), s.count * dim * sizeof(float));
  return true;
}

}  // namespace

void DeliverRows(const Result<Embeddings>& result, const std::vector<BatchSlice>& slices,
                 bool pooled_with_tokens) {
  size_t expected_rows = 0;
  for (const BatchSlice& s : slices) expected_rows += s.count;
  if (!result.ok() || size_t(result->rows) != expected_rows) {
    const Status error =
        result.ok() ? Status::Internal("engine returned " + std::to_string(result->rows) +
                                       " rows for " + std::to_string(expected_rows) + " sequences")
                    : result.status();
    for (const BatchSlice& s : slices) s.entry->Fail(error);
    return;
  }
  size_t row = 0;
  for (const BatchSlice& s : slices) {
    PendingRequest& e = *s.entry;
    const size_t first_row = row;
    row += s.count;
    if (e.failed) continue;
    const bool per_token = e.request.pooling == Pooling::kNone;
    const bool copied = per_token ? CopyTokenRows(*result, first_row, s, pooled_with_tokens)
                                  : CopyPooledRows(*result, first_row, s);
    if (!copied) continue;
    e.rows_done += s.count;
    if (e.rows_done < e.request.sequences.size()) continue;
    if (!per_token && e.request.dimensions > 0 && e.request.dimensions < e.out.dim) {
      TruncateDimensions(&e.out, e.request.dimensions, e.request.normalize);
    }
    e.Succeed();
  }
}

}  // namespace orchid
