// SwiGLU, the gated MLP activation of Qwen3 / Llama: out = silu(gate) * up, silu(g) = g / (1 + e^-g).
#pragma once

#include "backends/cpu/thread_pool.h"

namespace orchid {

// gate_up: [rows, 2 * dim], each row [gate (dim) | up (dim)] (the fused gate_proj and up_proj
// outputs). out: [rows, dim], contiguous.
void SwiGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out);

// GeGLU with GELU's tanh approximation (Gemma's gelu_pytorch_tanh):
// out = gelu_tanh(gate) * up, gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void GeluTanhGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out);

// GeGLU with exact GELU (ModernBERT): out = gelu(gate) * up, gelu(x) = x/2 (1 + erf(x / sqrt 2)).
void GeluGlu(ThreadPool* pool, const float* gate_up, int rows, int dim, float* out);

}  // namespace orchid
