#include "tokenizer/static_input.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace orchid {
namespace {

// The first `n` characters of UTF-8 text (a prefix of whole code points), as Python's s[:n].
std::string_view FirstChars(std::string_view s, int64_t n) {
  int64_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (seen++ == n) return s.substr(0, i);
  }
  return s;
}

class StaticInputTokenizer final : public Tokenizer {
 public:
  StaticInputTokenizer(std::unique_ptr<Tokenizer> inner, StaticInputRules rules)
      : inner_(std::move(inner)), rules_(rules) {}

  Status Encode(std::string_view text, const EncodeOptions& options, Encoding* out) const override {
    EncodeOptions plain = options;
    plain.add_special_tokens = false;
    if (rules_.max_chars > 0) text = FirstChars(text, rules_.max_chars);
    ORCHID_RETURN_IF_ERROR(inner_->Encode(text, plain, out));
    if (rules_.drop_token < 0) return Status::Ok();
    size_t kept = 0;
    for (size_t i = 0; i < out->ids.size(); ++i) {
      if (out->ids[i] == rules_.drop_token) continue;
      out->ids[kept] = out->ids[i];
      if (i < out->type_ids.size()) out->type_ids[kept] = out->type_ids[i];
      if (i < out->offsets.size()) out->offsets[kept] = out->offsets[i];
      if (i < out->special_tokens_mask.size()) {
        out->special_tokens_mask[kept] = out->special_tokens_mask[i];
      }
      ++kept;
    }
    out->ids.resize(kept);
    out->type_ids.resize(std::min(kept, out->type_ids.size()));
    out->offsets.resize(std::min(kept, out->offsets.size()));
    out->special_tokens_mask.resize(std::min(kept, out->special_tokens_mask.size()));
    return Status::Ok();
  }

  Status Decode(const std::vector<int32_t>& ids, bool skip_special_tokens,
                std::string* out) const override {
    return inner_->Decode(ids, skip_special_tokens, out);
  }
  std::optional<EncodeOptions> FileTruncation() const override { return inner_->FileTruncation(); }
  int32_t vocab_size() const override { return inner_->vocab_size(); }
  std::optional<int32_t> TokenToId(std::string_view token) const override {
    return inner_->TokenToId(token);
  }
  std::optional<std::string_view> IdToToken(int32_t id) const override {
    return inner_->IdToToken(id);
  }
  size_t num_special_tokens() const override { return 0; }

 private:
  std::unique_ptr<Tokenizer> inner_;
  StaticInputRules rules_;
};

}  // namespace

std::unique_ptr<Tokenizer> WithStaticInputRules(std::unique_ptr<Tokenizer> inner,
                                                StaticInputRules rules) {
  return std::make_unique<StaticInputTokenizer>(std::move(inner), rules);
}

}  // namespace orchid
