// WordPiece, as `tokenizers` implements it: greedy longest-match-first from the start of the
// word; pieces after the first carry the continuing-subword prefix ("##"); a word with more
// than max_input_chars_per_word characters, or with any unmatchable part, becomes [UNK].
#include "tokenizer/wordpiece.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/vocab_map.h"

namespace orchid::tok {
namespace {

inline bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

class WordPiece final : public Model {
 public:
  Status Load(JsonObject o, std::string_view where) {
    std::string_view unk = "[UNK]";
    std::string_view prefix = "##";
    uint64_t max_chars = 100;
    ORCHID_RETURN_IF_ERROR(ReadString(o, "unk_token", where, &unk, false));
    ORCHID_RETURN_IF_ERROR(ReadString(o, "continuing_subword_prefix", where, &prefix, false));
    ORCHID_RETURN_IF_ERROR(ReadUint(o, "max_input_chars_per_word", where, &max_chars, false));
    unk_token_ = std::string(unk);
    prefix_ = std::string(prefix);
    max_input_chars_per_word_ = max_chars;

    JsonObject vocab;
    if (o["vocab"].get(vocab) != simdjson::SUCCESS) {
      return JsonError(where, "\"vocab\" must be an object of token → id");
    }
    for (auto field : vocab) {
      uint64_t id = 0;
      if (field.value.get(id) != simdjson::SUCCESS || id > kMaxVocabId) {
        return JsonError(
            where, StrCat({"vocab id of \"", field.key, "\" must be an integer in [0, 2^22)"}));
      }
      const auto id32 = static_cast<int32_t>(id);
      const std::string_view token = field.key;
      full_.Insert(token, id32);
      if (token.size() >= prefix_.size() && token.substr(0, prefix_.size()) == prefix_) {
        continuing_.Insert(token.substr(prefix_.size()), id32);
      }
      if (static_cast<size_t>(id32) >= id_to_token_.size()) {
        id_to_token_.resize(static_cast<size_t>(id32) + 1);
        has_id_.resize(static_cast<size_t>(id32) + 1, false);
      }
      id_to_token_[static_cast<size_t>(id32)] = std::string(token);
      has_id_[static_cast<size_t>(id32)] = true;
    }
    full_.Finish();
    continuing_.Finish();
    unk_id_ = full_.Find(unk_token_);
    return Status::Ok();
  }

  Status Tokenize(std::string_view word, std::vector<ModelToken>* out) const override {
    const auto len = static_cast<uint32_t>(word.size());
    // Character count, stopping once it exceeds the limit.
    size_t chars = 0;
    for (char c : word) {
      if (!IsContinuationByte(c) && ++chars > max_input_chars_per_word_) break;
    }
    if (chars > max_input_chars_per_word_) return PushUnk(len, out);

    const size_t first = out->size();
    uint32_t start = 0;
    while (start < len) {
      const StringIdMap& map = start == 0 ? full_ : continuing_;
      // No key is longer than max_key_length(): start there (at a character boundary).
      uint32_t end = static_cast<uint32_t>(
          std::min<size_t>(len, start + std::max<size_t>(map.max_key_length(), 1)));
      while (end < len && end > start && IsContinuationByte(word[end])) --end;
      int32_t id = -1;
      while (start < end) {
        id = map.Find(word.substr(start, end - start));
        if (id >= 0) break;
        do {
          --end;
        } while (end > start && IsContinuationByte(word[end]));
      }
      if (id < 0) {
        out->resize(first);
        return PushUnk(len, out);
      }
      out->push_back({id, start, end});
      start = end;
    }
    return Status::Ok();
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override {
    const int32_t id = full_.Find(token);
    return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
  }
  std::optional<std::string_view> IdToToken(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() ||
        !has_id_[static_cast<size_t>(id)]) {
      return std::nullopt;
    }
    return std::string_view(id_to_token_[static_cast<size_t>(id)]);
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  Status PushUnk(uint32_t len, std::vector<ModelToken>* out) const {
    if (unk_id_ < 0) {
      return Status::Corrupt(StrCat({"WordPiece: unk_token \"", unk_token_, "\" is not in the vocab"}));
    }
    out->push_back({unk_id_, 0, len});
    return Status::Ok();
  }

  StringIdMap full_;        // every token
  StringIdMap continuing_;  // tokens that start with prefix_, without it
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::string unk_token_;
  std::string prefix_;
  size_t max_input_chars_per_word_ = 100;
  int32_t unk_id_ = -1;
};

}  // namespace

Result<std::unique_ptr<Model>> MakeWordPiece(JsonObject json, std::string_view where) {
  auto model = std::make_unique<WordPiece>();
  ORCHID_RETURN_IF_ERROR(model->Load(json, where));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace orchid::tok
