// Arbitrary bytes as a torch.save archive (a .pt / pytorch_model.bin), through the restricted
// reader's parser (checkpoint/torch_checkpoint.h) straight from memory. It must return an error
// or tensors whose bytes all lie inside the input: reading every one (raw and as fp32) is
// checked by ASan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "checkpoint/torch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size copy, so that ASan sees any read past the end.
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = std::byte(data[i]);
  std::vector<orchid::TensorInfo> tensors;
  if (!orchid::ParseTorchCheckpoint(bytes.data(), size, "fuzz.pt", &tensors).ok()) return 0;
  volatile uint8_t sink = 0;
  for (const orchid::TensorInfo& t : tensors) {
    if (t.begin > t.end || t.end > size ||
        t.end - t.begin != t.numel * orchid::DTypeSize(t.dtype)) {
      std::abort();
    }
    for (uint64_t i = t.begin; i < t.end; ++i) sink = sink ^ static_cast<uint8_t>(bytes[i]);
    std::vector<float> f(static_cast<size_t>(t.numel));
    (void)orchid::ConvertToF32(t.dtype, bytes.data() + t.begin, f.size(), f.data());
  }
  return 0;
}
