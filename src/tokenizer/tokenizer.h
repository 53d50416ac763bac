// Tokenizer: a Hugging Face tokenizer.json pipeline (normalizer → pre-tokenizer → model →
// post-processor), reproducing the `tokenizers` library's ids exactly.
//
// Thread safety: a Tokenizer is immutable after loading; Encode() is const and may be called
// from many threads at once. Pass a reused Encoding to avoid reallocating its vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace orchid {

enum class TruncationSide : uint8_t { kRight, kLeft };

struct EncodeOptions {
  bool add_special_tokens = true;  // apply the post-processor's template ([CLS] … [SEP])
  // 0 = no truncation. Otherwise the total length, special tokens included, is cut to
  // max_length (as `tokenizers` does with enable_truncation(max_length)). Like `tokenizers`,
  // a max_length below num_special_tokens() (with add_special_tokens) cuts nothing.
  // The truncation/padding settings stored in tokenizer.json are not applied: callers pass
  // the limit they want here.
  size_t max_length = 0;
  TruncationSide side = TruncationSide::kRight;
};

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  // Byte offsets [begin, end) into the input text; (0, 0) for special tokens.
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  void clear() {
    ids.clear();
    type_ids.clear();
    offsets.clear();
  }
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads tokenizer.json. Errors name the file and the unsupported or malformed part.
  static Result<std::unique_ptr<Tokenizer>> FromFile(const std::string& path);
  static Result<std::unique_ptr<Tokenizer>> FromJson(std::string_view json,
                                                     const std::string& origin = "tokenizer.json");

  // Encodes one text. Invalid UTF-8 → InvalidArgument (the API rejects it with a 400).
  virtual Status Encode(std::string_view text, const EncodeOptions& options,
                        Encoding* out) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  virtual std::optional<std::string_view> IdToToken(int32_t id) const = 0;
  // How many special tokens the post-processor adds to one sequence (2 for BERT).
  virtual size_t num_special_tokens() const = 0;
};

}  // namespace orchid
