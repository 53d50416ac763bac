// Normalizers (tokenizer.json "normalizer"). Supported: BertNormalizer, NFC, NFD, NFKC, NFKD,
// Lowercase, StripAccents, Replace (literal or regex pattern), Prepend, Strip, Precompiled (precompiled.h),
// Sequence.
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

struct BertNormalizerOptions {
  bool clean_text = true;            // drop NUL, U+FFFD and controls; whitespace → ' '
  bool handle_chinese_chars = true;  // pad CJK ideographs with spaces
  bool strip_accents = true;         // NFD, then drop Mn (JSON null → follows lowercase)
  bool lowercase = true;             // Rust char::to_lowercase, per character
};

std::unique_ptr<Normalizer> MakeBertNormalizer(const BertNormalizerOptions& options);

// Builds the normalizer described by `json`; a JSON null gives nullptr (no normalizer).
Result<std::unique_ptr<Normalizer>> MakeNormalizer(JsonElement json, std::string_view where);

// Lowercase, then `rest` (which may be null): what sentence-transformers 6 makes of a tokenizer
// whose sentence_bert_config.json says do_lower_case.
std::unique_ptr<Normalizer> LowercaseFirst(std::unique_ptr<Normalizer> rest);

}  // namespace orchid::tok
