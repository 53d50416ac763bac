// FakeTokenizer: splits on spaces; word → 3 + (FNV-1a hash % 900), its offsets the word's bytes
// in its text; adds [CLS]=1 … [SEP]=2 (offsets (0, 0)). Pairs: [CLS] a [SEP] b [SEP], type ids 0
// up to the first [SEP], 1 after; truncation longest_first (one word at a time from the longer
// side, on options.side).
// Rejects text containing the byte 0xFF as invalid UTF-8, like the real tokenizer would.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace orchid::testing {

class FakeTokenizer : public Tokenizer {
 public:
  static int32_t WordId(std::string_view w) {
    uint32_t h = 2166136261u;
    for (char c : w) h = (h ^ uint8_t(c)) * 16777619u;
    return 3 + int32_t(h % 900);
  }

  struct Word {
    int32_t id;
    std::pair<uint32_t, uint32_t> bytes;
  };
  static std::vector<Word> Words(std::string_view text) {
    std::vector<Word> words;
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && text[i] == ' ') ++i;
      size_t j = i;
      while (j < text.size() && text[j] != ' ') ++j;
      if (j > i) words.push_back({WordId(text.substr(i, j - i)), {uint32_t(i), uint32_t(j)}});
      i = j;
    }
    return words;
  }

  static void Cut(std::vector<Word>* words, size_t keep, TruncationSide side) {
    if (words->size() <= keep) return;
    if (side == TruncationSide::kLeft) {
      words->erase(words->begin(), words->end() - std::ptrdiff_t(keep));
    } else {
      words->resize(keep);
    }
  }

  static void Append(const std::vector<Word>& words, Encoding* out) {
    for (const Word& w : words) {
      out->ids.push_back(w.id);
      out->offsets.push_back(w.bytes);
    }
  }
  static void AppendSpecial(int32_t id, Encoding* out) {
    out->ids.push_back(id);
    out->offsets.emplace_back(0, 0);
  }

  Status Encode(std::string_view text, const EncodeOptions& options, Encoding* out) const override {
    if (text.find('\xff') != std::string_view::npos)
      return Status::InvalidArgument("invalid UTF-8");
    out->clear();
    std::vector<Word> words = Words(text);
    const size_t specials = options.add_special_tokens ? 2 : 0;
    if (options.max_length > specials) Cut(&words, options.max_length - specials, options.side);
    if (options.add_special_tokens) AppendSpecial(1, out);
    Append(words, out);
    if (options.add_special_tokens) AppendSpecial(2, out);
    out->type_ids.assign(out->ids.size(), 0);
    return Status::Ok();
  }

  Status EncodePair(std::string_view a, std::string_view b, const EncodeOptions& options,
                    Encoding* out) const override {
    if (a.find('\xff') != std::string_view::npos || b.find('\xff') != std::string_view::npos)
      return Status::InvalidArgument("invalid UTF-8");
    out->clear();
    std::vector<Word> wa = Words(a), wb = Words(b);
    if (options.max_length > 3) {
      while (wa.size() + wb.size() + 3 > options.max_length) {
        std::vector<Word>* longer = wa.size() > wb.size() ? &wa : &wb;
        Cut(longer, longer->size() - 1, options.side);
      }
    }
    AppendSpecial(1, out);
    Append(wa, out);
    AppendSpecial(2, out);
    out->type_ids.assign(out->ids.size(), 0);
    Append(wb, out);
    AppendSpecial(2, out);
    out->type_ids.resize(out->ids.size(), 1);
    return Status::Ok();
  }
  int32_t vocab_size() const override { return 1000; }
  std::optional<int32_t> TokenToId(std::string_view) const override { return std::nullopt; }
  std::optional<std::string_view> IdToToken(int32_t) const override { return std::nullopt; }
  size_t num_special_tokens() const override { return 2; }
};

}  // namespace orchid::testing
