// Element-wise addition. (Bias and residual additions after a linear layer are fused into
// its epilogue: linear.h.)
#pragma once

#include <cstddef>

namespace orchid {

// y[i] += x[i] for i < n.
void Add(float* y, const float* x, size_t n);

}  // namespace orchid
