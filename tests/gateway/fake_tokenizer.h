// FakeTokenizer: splits on spaces; word → 3 + (FNV-1a hash % 900); adds [CLS]=1 … [SEP]=2.
// Pairs: [CLS] a [SEP] b [SEP], type ids 0 up to the first [SEP], 1 after; truncation
// longest_first (one word at a time from the longer side, on options.side).
// Rejects text containing the byte 0xFF as invalid UTF-8, like the real tokenizer would.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
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

  static std::vector<int32_t> Words(std::string_view text) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && text[i] == ' ') ++i;
      size_t j = i;
      while (j < text.size() && text[j] != ' ') ++j;
      if (j > i) ids.push_back(WordId(text.substr(i, j - i)));
      i = j;
    }
    return ids;
  }

  static void Cut(std::vector<int32_t>* ids, size_t keep, TruncationSide side) {
    if (ids->size() <= keep) return;
    if (side == TruncationSide::kLeft) {
      ids->erase(ids->begin(), ids->end() - std::ptrdiff_t(keep));
    } else {
      ids->resize(keep);
    }
  }

  Status Encode(std::string_view text, const EncodeOptions& options, Encoding* out) const override {
    if (text.find('\xff') != std::string_view::npos)
      return Status::InvalidArgument("invalid UTF-8");
    out->clear();
    std::vector<int32_t> words = Words(text);
    const size_t specials = options.add_special_tokens ? 2 : 0;
    if (options.max_length > specials) Cut(&words, options.max_length - specials, options.side);
    if (options.add_special_tokens) out->ids.push_back(1);
    out->ids.insert(out->ids.end(), words.begin(), words.end());
    if (options.add_special_tokens) out->ids.push_back(2);
    out->type_ids.assign(out->ids.size(), 0);
    out->offsets.assign(out->ids.size(), {0, 0});
    return Status::Ok();
  }

  Status EncodePair(std::string_view a, std::string_view b, const EncodeOptions& options,
                    Encoding* out) const override {
    if (a.find('\xff') != std::string_view::npos || b.find('\xff') != std::string_view::npos)
      return Status::InvalidArgument("invalid UTF-8");
    out->clear();
    std::vector<int32_t> wa = Words(a), wb = Words(b);
    if (options.max_length > 3) {
      while (wa.size() + wb.size() + 3 > options.max_length) {
        std::vector<int32_t>* longer = wa.size() > wb.size() ? &wa : &wb;
        Cut(longer, longer->size() - 1, options.side);
      }
    }
    out->ids.push_back(1);
    out->ids.insert(out->ids.end(), wa.begin(), wa.end());
    out->ids.push_back(2);
    out->type_ids.assign(out->ids.size(), 0);
    out->ids.insert(out->ids.end(), wb.begin(), wb.end());
    out->ids.push_back(2);
    out->type_ids.resize(out->ids.size(), 1);
    out->offsets.assign(out->ids.size(), {0, 0});
    return Status::Ok();
  }
  int32_t vocab_size() const override { return 1000; }
  std::optional<int32_t> TokenToId(std::string_view) const override { return std::nullopt; }
  std::optional<std::string_view> IdToToken(int32_t) const override { return std::nullopt; }
  size_t num_special_tokens() const override { return 2; }
};

}  // namespace orchid::testing
