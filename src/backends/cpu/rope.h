// Rotary position embedding, "neox" layout (Hugging Face's rotate_half, as Qwen3 and Llama use):
// within each head of head_dim d, element i < d/2 is paired with i + d/2 and rotated by the
// angle pos * inv_freq[i], cos and sin times `scale` (YaRN's attention factor; 1 otherwise):
//   x[i]       = x[i] cos - x[i + d/2] sin
//   x[i + d/2] = x[i + d/2] cos + x[i] sin
// Angles are computed in fp32 as transformers does (angle = pos * inv_freq), so long positions
// round the same way; the frequencies come from ops::RopeInverseFrequencies.
#pragma once

#include <cstdint>

#include "backends/cpu/thread_pool.h"

namespace orchid {

// In place on rows [rows] of x (ld floats apart): heads [0, num_heads), each head_dim floats,
// starting at x + r * ld. positions[r] is the token's position in its sequence.
void ApplyRope(ThreadPool* pool, float* x, int ld, int rows, int num_heads, int head_dim,
               const int32_t* positions, const float* inv_freq, float scale = 1.0f);

}  // namespace orchid
