// GELU, exact form: gelu(x) = x/2 * (1 + erf(x / sqrt(2))) (PyTorch's default, BERT's "gelu").
#pragma once

#include <cstddef>

#include "backends/cpu/thread_pool.h"

namespace orchid {

// x = gelu(x + bias) over n values; bias (n values) may be null.
void BiasGelu(float* x, const float* bias, size_t n);

// x = gelu(x), split across the pool.
void Gelu(ThreadPool* pool, float* x, size_t n);

// The sigmoid-gated GELUs, x = x sigmoid(k1 x + k3 x^3), split across the pool:
//   quick_gelu (CLIP)                        k1 = 1.702, k3 = 0
//   gelu_pytorch_tanh (SigLIP; = gelu_new)   x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
//                                            which is x sigmoid(2u)
void QuickGelu(ThreadPool* pool, float* x, size_t n);
void GeluTanh(ThreadPool* pool, float* x, size_t n);

}  // namespace orchid
