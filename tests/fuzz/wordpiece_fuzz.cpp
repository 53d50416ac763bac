// Arbitrary bytes as input text to the WordPiece tokenizer of all-MiniLM-L6-v2.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"

namespace {
const orchid::Tokenizer* g_tok = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_tok =
      orchid::fuzz::LoadOrDie(orchid::fuzz::SourcePath("models/all-MiniLM-L6-v2/tokenizer.json"))
          .release();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static orchid::Encoding enc;
  orchid::fuzz::EncodeAndCheck(*g_tok, {reinterpret_cast<const char*>(data), size}, &enc);
  return 0;
}
