// RMSNorm (Qwen3, Llama): y = x / sqrt(mean(x^2) + eps) * weight, computed in fp32 as
// Hugging Face's Qwen3RMSNorm does (the mean of squares over the last dimension).
#pragma once

#include "backends/cpu/thread_pool.h"

namespace orchid {

// y[rows, dim] from x[rows, dim]; rows are ldx / ldy floats apart. In place when x == y.
void RmsNorm(ThreadPool* pool, const float* x, int ldx, int rows, int dim, const float* weight,
             float eps, float* y, int ldy);

// Per-head RMSNorm in place (Qwen3's q_norm / k_norm): for every row r and head h, the
// head_dim floats at x + r * ld + h * head_dim are normalised with the same `weight`.
void RmsNormHeads(ThreadPool* pool, float* x, int ld, int rows, int num_heads, int head_dim,
                  const float* weight, float eps);

}  // namespace orchid
