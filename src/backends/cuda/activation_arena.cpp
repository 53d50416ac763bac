#include "backends/cuda/activation_arena.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "backends/cuda/cuda_check.h"

namespace orchid::cuda {
namespace {

constexpr size_t kAlign = 256;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

void ActivationArena::EndPlan(bool planned) {
  planning_ = false;
  if (planned) planned_ = true;
}

Status ActivationArena::Allocate(const std::vector<ops::BufferDecl>& decls, int max_tokens,
                                 int max_seqs, int unplanned_width, DeviceMemory* memory,
                                 cudaStream_t stream) {
  if (allocated_) return Status::Internal("cuda backend: Allocate called twice");
  if (max_tokens <= 0 || max_seqs <= 0) {
    return Status::Internal("cuda backend: Allocate needs positive bucket sizes");
  }
  max_tokens_ = max_tokens;
  max_seqs_ = max_seqs;
  auto max_rows = [&](ops::Rows r) {
    return size_t(r == ops::Rows::kTokens ? max_tokens : max_seqs);
  };

  // Scratch capacities (bf16 elements).
  for (int s = 0; s < kNumScratch; ++s) {
    size_t elems = 0;
    if (planned_) {
      for (ops::Rows r : {ops::Rows::kTokens, ops::Rows::kPooled, ops::Rows::kSequences}) {
        elems = std::max(elems, max_rows(r) * size_t(plan_width_[s][int(r)]));
      }
    } else {
      elems = size_t(max_tokens) * size_t(unplanned_width);
    }
    scratch_elems_[s] = elems;
  }

  std::vector<size_t> offsets(decls.size());
  size_t total = 0;
  for (size_t i = 0; i < decls.size(); ++i) {
    const size_t elem = decls[i].precision == ops::Precision::kActivation ? 2 : 4;
    offsets[i] = total;
    total += AlignUp(max_rows(decls[i].rows) * size_t(decls[i].width) * elem);
  }
  size_t scratch_off[kNumScratch];
  for (int s = 0; s < kNumScratch; ++s) {
    scratch_off[s] = total;
    total += AlignUp(scratch_elems_[s] * sizeof(uint16_t));
  }
  const size_t cu_off = total;
  total += AlignUp((size_t(max_seqs) + 1) * sizeof(int32_t));
  const size_t flags_off = total;
  total += AlignUp(size_t(max_seqs));

  ORCHID_ASSIGN_OR_RETURN(void* arena, memory->Alloc(total));
  bytes_ = total;
  auto* base = static_cast<unsigned char*>(arena);
  buffers_.resize(decls.size());
  for (size_t i = 0; i < decls.size(); ++i) buffers_[i] = base + offsets[i];
  for (int s = 0; s < kNumScratch; ++s) {
    scratch_[s] = scratch_elems_[s] > 0 ? reinterpret_cast<bf16*>(base + scratch_off[s]) : nullptr;
  }
  identity_cu_ = reinterpret_cast<int32_t*>(base + cu_off);
  zero_flags_ = base + flags_off;

  // Defined contents everywhere, then the identity cu_seqlens.
  ORCHID_CUDA_TRY(cudaMemsetAsync(arena, 0, total, stream));
  std::vector<int32_t> cu(size_t(max_seqs) + 1);
  for (size_t i = 0; i < cu.size(); ++i) cu[i] = int32_t(i);
  ORCHID_CUDA_TRY(cudaMemcpyAsync(identity_cu_, cu.data(), cu.size() * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, stream));
  ORCHID_CUDA_TRY(cudaStreamSynchronize(stream));  // `cu` is a local
  allocated_ = true;
  return Status::Ok();
}

Status ActivationArena::NeedScratch(Scratch s, ops::Rows domain, int width, int tb, int sb) {
  if (planning_) {
    int& w = plan_width_[s][int(domain)];
    w = std::max(w, width);
    return Status::Ok();
  }
  if (!allocated_) return Status::Internal("cuda backend: an op before Allocate");
  const size_t rows_now = size_t(domain == ops::Rows::kTokens ? tb : sb);
  if (tb > max_tokens_ || sb > max_seqs_ || rows_now * size_t(width) > scratch_elems_[s]) {
    return Status::Internal("cuda backend: scratch " + std::to_string(int(s)) + " holds " +
                            std::to_string(scratch_elems_[s]) + " elements, the op needs " +
                            std::to_string(rows_now * size_t(width)) +
                            " (an op form that Plan did not see?)");
  }
  return Status::Ok();
}

}  // namespace orchid::cuda
