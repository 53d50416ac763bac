// Patterns for the Split pre-tokenizer (and ByteLevel's use_regex): they find the
// non-overlapping matches of a literal string or a regex in a piece of text.
//
// The GPT-2, Qwen2/3 and Llama-3 split regexes are recognized by their exact text and run
// through a hand-written scanner (split_patterns.cpp) with the reference's own character
// classes; every other regex runs through PCRE2 with JIT, its \p{L} \p{N} \s \w \d (and
// negations) spelled out as classes of the reference's members. Other Unicode properties
// (\p{M}, \p{Lu}, …) and \b use PCRE2's own tables, which may differ from Oniguruma's on rare
// code points.
//
// Thread safety: immutable after construction; FindMatches may run on many threads at once.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/components.h"

namespace orchid::tok {

class SplitPattern {
 public:
  virtual ~SplitPattern() = default;
  // Appends the non-empty matches inside text[range), in order, as byte ranges into text.
  virtual void FindMatches(std::string_view text, Span range, std::vector<Span>* matches) const = 0;
};

// The ByteLevel pre-tokenizer's regex (GPT-2's).
inline constexpr std::string_view kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::unique_ptr<SplitPattern> MakeLiteralPattern(std::string_view literal);
Result<std::unique_ptr<SplitPattern>> MakeRegexPattern(std::string_view regex);

}  // namespace orchid::tok
