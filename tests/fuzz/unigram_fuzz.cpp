// Arbitrary bytes as input text to the XLM-R-style Unigram tokenizer (Precompiled charsmap,
// Metaspace, Viterbi) of tests/fixtures/tokenizer/unigram_xlmr.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.h"

namespace {
const orchid::Tokenizer* g_tok = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_tok = orchid::fuzz::LoadOrDie(
              orchid::fuzz::SourcePath("tests/fixtures/tokenizer/unigram_xlmr/tokenizer.json"))
              .release();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static orchid::Encoding enc;
  orchid::fuzz::EncodeAndCheck(*g_tok, {reinterpret_cast<const char*>(data), size}, &enc);
  return 0;
}
