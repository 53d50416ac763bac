#include "backends/cpu/pooling.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/embedding.h"

namespace orchid {

void Pool(const float* hidden, int dim, const int32_t* cu_seqlens, int num_seqs,
          const Pooling* modes, float* out, const int32_t* skip) {
  for (int s = 0; s < num_seqs; ++s) {
    const int start = cu_seqlens[s], end = cu_seqlens[s + 1];
    float* dst = out + size_t(s) * dim;
    // The first token the reducing modes read (CLS and last token read theirs whatever skip is).
    const int begin = skip == nullptr ? start : std::min(end, start + std::max(0, skip[s]));
    if (begin == end && modes[s] != Pooling::kCls && modes[s] != Pooling::kLastToken) {
      std::fill_n(dst, dim, 0.0f);
      continue;
    }
    switch (modes[s]) {
      case Pooling::kCls:
        std::memcpy(dst, hidden + size_t(start) * dim, sizeof(float) * dim);
        break;
      case Pooling::kLastToken:
        std::memcpy(dst, hidden + size_t(end - 1) * dim, sizeof(float) * dim);
        break;
      case Pooling::kMax:
        std::memcpy(dst, hidden + size_t(begin) * dim, sizeof(float) * dim);
        for (int t = begin + 1; t < end; ++t) {
          const float* row = hidden + size_t(t) * dim;
          for (int d = 0; d < dim; ++d) dst[d] = std::max(dst[d], row[d]);
        }
        break;
      case Pooling::kMean:
      case Pooling::kMeanSqrtLen:
      case Pooling::kWeightedMean:
      case Pooling::kNone: {
        // Summed in double: long sequences otherwise lose low bits of small components.
        // Weighted mean: token t of the sequence (from 1) weighs t, the sum divided by n(n+1)/2.
        // With skipped tokens the weights keep their place in the whole sequence: tokens a..b
        // (from 1) weigh (a + b)(b - a + 1) / 2 together.
        const bool weighted = modes[s] == Pooling::kWeightedMean;
        const double n = double(end - begin);
        const double first = double(begin - start + 1), last = double(end - start);
        const double inv = modes[s] == Pooling::kMeanSqrtLen ? 1.0 / std::sqrt(n)
                           : weighted ? 2.0 / ((first + last) * (last - first + 1.0))
                                      : 1.0 / n;
        constexpr int kChunk = 64;
        double acc[kChunk];
        for (int d0 = 0; d0 < dim; d0 += kChunk) {
          const int w = dim - d0 < kChunk ? dim - d0 : kChunk;
          for (int d = 0; d < w; ++d) acc[d] = 0;
          for (int t = begin; t < end; ++t) {
            const float* row = hidden + size_t(t) * dim + d0;
            const double weight = weighted ? double(t - start + 1) : 1.0;
            for (int d = 0; d < w; ++d) acc[d] += weight * row[d];
          }
          for (int d = 0; d < w; ++d) dst[d0 + d] = float(acc[d] * inv);
        }
        break;
      }
    }
  }
}

bool PooledRows(const RaggedBatch& batch, std::vector<int32_t>* query_rows,
                std::vector<int32_t>* rows) {
  const int num_seqs = batch.num_sequences();
  query_rows->resize(2 * size_t(num_seqs));
  rows->clear();
  for (int s = 0; s < num_seqs; ++s) {
    const int len = batch.seq_len(s);
    int begin = 0, end = len;
    if (batch.pooling[size_t(s)] == Pooling::kCls) {
      end = 1;
    } else if (batch.pooling[size_t(s)] == Pooling::kLastToken) {
      begin = len - 1;
    }
    (*query_rows)[2 * size_t(s)] = begin;
    (*query_rows)[2 * size_t(s) + 1] = end;
    for (int i = begin; i < end; ++i) rows->push_back(batch.cu_seqlens[size_t(s)] + i);
  }
  return int(rows->size()) < batch.num_tokens();
}

}  // namespace orchid
