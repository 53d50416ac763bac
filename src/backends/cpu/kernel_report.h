// What the CPU backend's kernels are for a weight type, in words, for the log: the notes
// `orchid` prints when it loads a model, so that the command line asks the backend instead of
// probing the CPU or including the kernels itself.
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/linear.h"

namespace orchid {

struct KernelNote {
  bool warning = false;  // a slow path the user should know about
  std::string text;
};

// Before the model loads: the CPU (cpu_features.h), and what multiplies `type`'s linear layers
// (bfloat16: vdpbf16ps or FMAs, measured once here rather than in the first request; int8:
// oneDNN's instruction set).
std::vector<KernelNote> DescribeCpuKernels(WeightType type);
// After it loads: the choices made per layer shape while loading (bfloat16: packed kernel or
// oneDNN, with the probe's times); none for the other types.
std::vector<KernelNote> DescribeCpuKernelChoices(WeightType type);

}  // namespace orchid
