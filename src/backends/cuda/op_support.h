// What the CUDA backend's kernels accept, as a pure function of one op call (ops/backend.h's
// OpCall: the op, its buffers' declarations, its options, the weights' load-time facts). No
// device and no CUDA toolkit are needed: CudaBackend::Supports() asks it before every op, so a
// model is refused while it is loaded and planned, and tests ask it of a recorded forward pass
// on machines without a GPU (tests/families/cuda_admission_test.cpp), which is how docs/models.md's
// model table knows what runs on CUDA.
//
// Thread safety: pure functions.
#pragma once

#include "core/status.h"
#include "ops/backend.h"

namespace orchid::cuda {

// The row kernels (norms, the embedding's LayerNorm) keep a row in 48 KB of shared memory,
// beside their reduction array (backends/cuda/ops.cu).
constexpr int kMaxRowWidth = 12256;

// The head widths the attention kernel is instantiated for (backends/cuda/attention.cu).
bool AttentionHeadDimSupported(int head_dim);

// Ok, or kUnimplemented naming the op and what the kernels lack.
Status Supports(const ops::OpCall& call);

}  // namespace orchid::cuda
