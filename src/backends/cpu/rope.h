// Rotary position embedding, "neox" layout (Hugging Face's rotate_half, as Qwen3 and Llama use):
// within each head of head_dim d, element i < d/2 is paired with i + d/2 and rotated by the
// angle pos * theta^(-2i/d) / inv_freq_divisor:
//   x[i]       = x[i] cos - x[i + d/2] sin
//   x[i + d/2] = x[i + d/2] cos + x[i] sin
// Frequencies and angles are computed in fp32 as transformers does (inv_freq = 1 / theta^(2i/d),
// angle = pos * inv_freq), so long positions round the same way.
#pragma once

#include <cstdint>

#include "backends/cpu/thread_pool.h"

namespace orchid {

// In place on rows [rows] of x (ld floats apart): heads [0, num_heads), each head_dim floats,
// starting at x + r * ld. positions[r] is the token's position in its sequence.
void ApplyRope(ThreadPool* pool, float* x, int ld, int rows, int num_heads, int head_dim,
               const int32_t* positions, double theta, double inv_freq_divisor = 1.0);

}  // namespace orchid
