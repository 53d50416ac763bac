// SentencePiece's precompiled_charsmap (the "Precompiled" normalizer of XLM-R / T5
// tokenizer.json files): a darts-clone double-array trie mapping UTF-8 strings to
// replacement strings, applied the way `tokenizers` (spm_precompiled) does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/components.h"

namespace orchid::tok {

class PrecompiledCharsmap {
 public:
  // `base64` is the tokenizer.json field: LE u32 trie size in bytes, the trie units, then the
  // NUL-separated replacement strings. Every offset is bounds-checked at lookup.
  Status Parse(std::string_view base64);
  // The replacement for the shortest key that prefixes `chunk`; false when none does.
  bool Transform(std::string_view chunk, std::string_view* out) const;

 private:
  std::vector<uint32_t> trie_;
  std::string normalized_;
};

std::unique_ptr<Normalizer> MakePrecompiledNormalizer(std::unique_ptr<PrecompiledCharsmap> map);

}  // namespace orchid::tok
