// LayerNorm over the last dimension, in place: x = (x - mean) / sqrt(var + eps) * gamma + beta,
// with the biased variance (as PyTorch), computed in two passes for accuracy.
#pragma once

#include "backends/cpu/thread_pool.h"

namespace orchid {

// x: [rows, dim], row-major, rows dim floats apart.
void LayerNorm(ThreadPool* pool, float* x, int rows, int dim, const float* gamma, const float* beta,
               float eps);

}  // namespace orchid
