// Arbitrary bytes as input text to both BPE tokenizers: Qwen3's byte-level BPE (hand-written
// split scanner) and Gemma3's BPE with byte fallback.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"

namespace {
const orchid::Tokenizer* g_qwen3 = nullptr;
const orchid::Tokenizer* g_gemma3 = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_qwen3 = orchid::fuzz::LoadOrDie(
                orchid::fuzz::SourcePath("tests/data/tokenizers/qwen3/tokenizer.json"))
                .release();
  g_gemma3 = orchid::fuzz::LoadOrDie(
                 orchid::fuzz::SourcePath("tests/data/tokenizers/gemma3/tokenizer.json"))
                 .release();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static orchid::Encoding enc;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  orchid::fuzz::EncodeAndCheck(*g_qwen3, text, &enc);
  orchid::fuzz::EncodeAndCheck(*g_gemma3, text, &enc);
  return 0;
}
