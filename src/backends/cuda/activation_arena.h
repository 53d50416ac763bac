// ActivationArena: the CUDA backend's activation memory. ONE device block, allocated once
// after the family is loaded (fixed addresses, so every pass can be captured in a CUDA graph),
// holding every declared buffer sized for the largest bucket (kTokens: max_tokens rows;
// kPooled, kSequences: max_seqs rows; kActivation = bf16, kAccumulator = fp32), the backend's
// scratch, an identity cu_seqlens (0, 1, 2, ...: each pooled row its own sequence) and
// all-zero normalise flags. Everything is zeroed first (GEMMs read padding rows; their results
// are never used).
//
// Scratch sizes come from a plan: while planning (BeginPlan .. EndPlan, the family's Forward
// run with nothing launched) NeedScratch records the widest need per scratch and row domain;
// during a pass it checks that the need fits. Without a plan, every scratch gets the widest
// row any op could put there over all tokens.
//
// Thread safety: none; the backend's thread alone (the engine's lock).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cuda/device_memory.h"
#include "backends/cuda/ops.h"
#include "core/status.h"
#include "ops/backend.h"

namespace orchid::cuda {

class ActivationArena {
 public:
  // delta: pending residual adds; attention: the full attention output of a pruned last layer;
  // convert_in: bf16 copies of fp32 GEMM inputs; convert_out: GEMM outputs of a padded width
  // (bf16 or fp32; an fp32 value takes two bf16 elements).
  enum Scratch : int { kDelta, kAttention, kConvertIn, kConvertOut, kNumScratch };

  void BeginPlan() { planning_ = true; }
  // `planned`: the plan ran through; Allocate sizes the scratch from it.
  void EndPlan(bool planned);
  bool planning() const { return planning_; }
  bool allocated() const { return allocated_; }

  // Lays out `decls` and the scratch for buckets up to max_tokens token rows and max_seqs
  // sequence rows; `unplanned_width` is the scratch width (in bf16 columns over max_tokens
  // rows) without a plan. Allocates from `memory`, zeroes on `stream` and blocks until done.
  Status Allocate(const std::vector<ops::BufferDecl>& decls, int max_tokens, int max_seqs,
                  int unplanned_width, DeviceMemory* memory, cudaStream_t stream);

  // Planning: records that scratch `s` must hold `width` bf16 columns of rows of `domain`. A
  // pass of bucket (tb, sb): Internal unless it does.
  Status NeedScratch(Scratch s, ops::Rows domain, int width, int tb, int sb);

  // A buffer's device memory by id; null before Allocate.
  void* buffer(int id) const {
    return id >= 0 && size_t(id) < buffers_.size() ? buffers_[size_t(id)] : nullptr;
  }
  bf16* scratch(Scratch s) const { return scratch_[s]; }
  const int32_t* identity_cu() const { return identity_cu_; }  // [max_seqs + 1]
  const uint8_t* zero_flags() const { return zero_flags_; }    // [max_seqs]
  size_t bytes() const { return bytes_; }

 private:
  bool planning_ = false;
  bool planned_ = false;
  int plan_width_[kNumScratch][3] = {};  // the widest need per scratch and row domain

  bool allocated_ = false;
  int max_tokens_ = 0, max_seqs_ = 0;
  size_t bytes_ = 0;
  std::vector<void*> buffers_;  // by buffer id
  bf16* scratch_[kNumScratch] = {};
  size_t scratch_elems_[kNumScratch] = {};  // capacity in bf16 elements
  int32_t* identity_cu_ = nullptr;
  uint8_t* zero_flags_ = nullptr;
};

}  // namespace orchid::cuda
