// Pre-tokenizers (tokenizer.json "pre_tokenizer"). Supported: BertPreTokenizer, Split (literal
// or regex pattern, every behavior, invert; see split_patterns.h), ByteLevel (add_prefix_space,
// use_regex), Metaspace (replacement, prepend_scheme, split), Whitespace, WhitespaceSplit,
// Punctuation (behavior), Digits (individual_digits), Sequence.
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

// Splits on whitespace (removed) and isolates each punctuation character.
std::unique_ptr<PreTokenizer> MakeBertPreTokenizer();

// Builds the pre-tokenizer described by `json`; JSON null gives nullptr (whole text = 1 word).
Result<std::unique_ptr<PreTokenizer>> MakePreTokenizer(JsonElement json, std::string_view where);

}  // namespace orchid::tok
