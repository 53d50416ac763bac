// Arbitrary bytes as tokenizer.json: loading must give a Status or a Tokenizer, and a Tokenizer
// that loads must encode a few fixed texts without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tok = orchid::Tokenizer::FromJson({reinterpret_cast<const char*>(data), size});
  if (!tok.ok()) return 0;
  static constexpr std::string_view kTexts[] = {
      "",
      "Hello, world! A man is playing a guitar.",
      "  leading and trailing  \t\n",
      "naïve café 東京 Привет مرحبا 🤷🏽‍♀️ ｆｕｌｌ 123,456.78",
      "[CLS] <s> </s> <unk> <|endoftext|> [MASK]",
      "\xff\xfe invalid utf-8",
  };
  orchid::Encoding enc;
  for (std::string_view text : kTexts) {
    orchid::fuzz::EncodeAndCheck(**tok, text, &enc, /*check_ids=*/false);
  }
  // Round-trips through the vocabulary must stay inside it.
  for (int32_t id : {0, 1, (*tok)->vocab_size() - 1, (*tok)->vocab_size()}) {
    if (auto piece = (*tok)->IdToToken(id)) (void)(*tok)->TokenToId(*piece);
  }
  return 0;
}
