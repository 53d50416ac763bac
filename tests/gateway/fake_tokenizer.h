// FakeTokenizer: splits on spaces; word → 3 + (FNV-1a hash % 900); adds [CLS]=1 … [SEP]=2.
// Rejects text containing the byte 0xFF as invalid UTF-8, like the real tokenizer would.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace orchid::testing {

class FakeTokenizer : public Tokenizer {
 public:
  static int32_t WordId(std::string_view w) {
    uint32_t h = 2166136261u;
    for (char c : w) h = (h ^ uint8_t(c)) * 16777619u;
    return 3 + int32_t(h % 900);
  }

  Status Encode(std::string_view text, const EncodeOptions& options, Encoding* out) const override {
    if (text.find('\xff') != std::string_view::npos)
      return Status::InvalidArgument("invalid UTF-8");
    out->clear();
    if (options.add_special_tokens) out->ids.push_back(1);
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && text[i] == ' ') ++i;
      size_t j = i;
      while (j < text.size() && text[j] != ' ') ++j;
      if (j > i) out->ids.push_back(WordId(text.substr(i, j - i)));
      i = j;
    }
    if (options.add_special_tokens) out->ids.push_back(2);
    if (options.max_length > 0 && out->ids.size() > options.max_length) {
      out->ids.resize(options.max_length);
      if (options.add_special_tokens) out->ids.back() = 2;
    }
    out->type_ids.assign(out->ids.size(), 0);
    out->offsets.assign(out->ids.size(), {0, 0});
    return Status::Ok();
  }
  int32_t vocab_size() const override { return 1000; }
  std::optional<int32_t> TokenToId(std::string_view) const override { return std::nullopt; }
  std::optional<std::string_view> IdToToken(int32_t) const override { return std::nullopt; }
  size_t num_special_tokens() const override { return 2; }
};

}  // namespace orchid::testing
