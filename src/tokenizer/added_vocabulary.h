// Added tokens (tokenizer.json "added_tokens"): matched in the text before the normalizer
// (normalized=false) or in the normalized text (normalized=true), leftmost-longest, exactly
// like `tokenizers`' AddedVocabulary; matched spans become their id and skip the model.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/components.h"
#include "tokenizer/json_util.h"

namespace orchid::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
};

// A piece of text: an added token (id >= 0) or text still to tokenize (id < 0).
struct TextPiece {
  uint32_t begin;
  uint32_t end;
  int32_t id;
};

class AddedVocabulary {
 public:
  // `model` resolves ids of tokens already in the vocab; `normalizer` (may be null) gives the
  // normalized form of normalized=true tokens.
  Status Load(JsonElement added_tokens, const Model& model, const Normalizer* normalizer,
              std::string_view where);

  // Splits text[range) by the non-normalized tokens, appending pieces to *out.
  void SplitRaw(std::string_view text, Span range, std::vector<TextPiece>* out) const {
    raw_.Split(tokens_, text, range, out);
  }
  // Splits normalized text[range) by the normalized tokens.
  bool has_normalized() const { return !normalized_.empty(); }
  void SplitNormalized(std::string_view text, Span range, std::vector<TextPiece>* out) const {
    normalized_.Split(tokens_, text, range, out);
  }

  std::optional<int32_t> TokenToId(std::string_view content) const;
  std::optional<std::string_view> IdToToken(int32_t id) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  // Leftmost-longest matcher over a few patterns, indexed by first byte.
  class Matcher {
   public:
    void Add(std::string pattern, uint32_t token_index);
    void Finish();
    bool empty() const { return patterns_.empty(); }
    void Split(const std::vector<AddedToken>& tokens, std::string_view text, Span range,
               std::vector<TextPiece>* out) const;

   private:
    struct Pattern {
      std::string text;
      uint32_t token_index;
    };
    std::vector<Pattern> patterns_;  // sorted by first byte, then longest first
    std::array<uint32_t, 257> first_byte_start_{};  // patterns_[start[b] .. start[b+1])
  };

  std::vector<AddedToken> tokens_;
  Matcher raw_;
  Matcher normalized_;
};

}  // namespace orchid::tok
