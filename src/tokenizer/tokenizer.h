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

// How EncodePair truncates a pair (as `tokenizers`' TruncationStrategy). Single-sequence
// Encode always truncates its one sequence.
enum class TruncationStrategy : uint8_t { kLongestFirst, kOnlyFirst, kOnlySecond };

struct EncodeOptions {
  bool add_special_tokens = true;  // apply the post-processor's template ([CLS] … [SEP])
  // 0 = no truncation. Otherwise the total length, special tokens included, is cut to
  // max_length (as `tokenizers` does with enable_truncation(max_length)). Like `tokenizers`,
  // a max_length below num_special_tokens() (with add_special_tokens) cuts nothing.
  // The truncation/padding settings stored in tokenizer.json are not applied: callers pass
  // the limit they want here.
  size_t max_length = 0;
  TruncationSide side = TruncationSide::kRight;
  TruncationStrategy strategy = TruncationStrategy::kLongestFirst;  // pairs only
};

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
  // Byte offsets [begin, end) into the input text; (0, 0) for special tokens.
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  // 1 for the tokens the post-processor added ([CLS], [SEP], …), 0 for the text's own tokens
  // (added tokens matched in the text included), as `tokenizers`' special_tokens_mask.
  std::vector<uint8_t> special_tokens_mask;
  void clear() {
    ids.clear();
    type_ids.clear();
    offsets.clear();
    special_tokens_mask.clear();
  }
};

// What a model directory changes about its tokenizer.json.
struct TokenizerOptions {
  // Lowercase text before tokenizer.json's own normalizer (sentence-transformers'
  // sentence_bert_config.json do_lower_case).
  bool lowercase = false;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads tokenizer.json. Errors name the file and the unsupported or malformed part.
  static Result<std::unique_ptr<Tokenizer>> FromFile(const std::string& path,
                                                     const TokenizerOptions& options = {});
  static Result<std::unique_ptr<Tokenizer>> FromJson(std::string_view json,
                                                     const std::string& origin = "tokenizer.json",
                                                     const TokenizerOptions& options = {});

  // Encodes one text. Invalid UTF-8 → InvalidArgument (the API rejects it with a 400).
  virtual Status Encode(std::string_view text, const EncodeOptions& options,
                        Encoding* out) const = 0;

  // Encodes a pair (a, b) with the post-processor's pair template ([CLS] A [SEP] B [SEP] for
  // BERT) and its token_type_ids. Truncation as `tokenizers` does it: max_length counts the
  // pair's special tokens; longest_first trims the longer sequence first (both to about half
  // when both are too long); only_first / only_second trim one sequence and fail with
  // InvalidArgument when it is too short to remove enough. A post-processor without a pair
  // template (TemplateProcessing without "pair") → InvalidArgument.
  // (Default: InvalidArgument, for tokenizers that cannot encode pairs, e.g. test fakes.)
  virtual Status EncodePair(std::string_view a, std::string_view b, const EncodeOptions& options,
                            Encoding* out) const {
    (void)a;
    (void)b;
    (void)options;
    out->clear();
    return Status::InvalidArgument("this tokenizer does not encode pairs");
  }

  // Decodes ids back to text with tokenizer.json's "decoder" (tokens joined by spaces when it
  // has none), as `tokenizers`' decode: unknown ids are dropped, and with skip_special_tokens
  // so are special added tokens. An unsupported decoder → InvalidArgument naming it.
  // (Default: InvalidArgument, for tokenizers that cannot decode, e.g. test fakes.)
  virtual Status Decode(const std::vector<int32_t>& ids, bool skip_special_tokens,
                        std::string* out) const {
    (void)ids;
    (void)skip_special_tokens;
    out->clear();
    return Status::InvalidArgument("this tokenizer does not decode");
  }

  // tokenizer.json's "truncation" section (what Hugging Face `tokenizers` applies by default
  // when it loads the file): max_length > 0, its direction and pair strategy; nullopt when the
  // section is null or absent. Encode does not apply it by itself (see EncodeOptions).
  virtual std::optional<EncodeOptions> FileTruncation() const { return std::nullopt; }

  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  virtual std::optional<std::string_view> IdToToken(int32_t id) const = 0;
  // How many special tokens the post-processor adds to one sequence (2 for BERT).
  virtual size_t num_special_tokens() const = 0;
};

}  // namespace orchid
