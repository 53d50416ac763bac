// GELU, exact form: gelu(x) = x/2 * (1 + erf(x / sqrt(2))) (PyTorch's default, BERT's "gelu").
#pragma once

#include <cstddef>

#include "backends/cpu/thread_pool.h"

namespace orchid {

// x = gelu(x + bias) over n values; bias (n values) may be null.
void BiasGelu(float* x, const float* bias, size_t n);

// x = gelu(x), split across the pool.
void Gelu(ThreadPool* pool, float* x, size_t n);

}  // namespace orchid
