// Internal interfaces of the tokenizer pipeline, one per tokenizer.json section:
//   added tokens → Normalizer → PreTokenizer → Model → (truncation) → PostProcessor.
// Each component is built from its JSON object by a factory (normalizers.h, pre_tokenizers.h,
// models.h, post_processors.h); an unsupported "type" is a clear error naming it. New
// components implement these interfaces and register in the factories.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace orchid::tok {

// Text under normalization, with its alignment to the original input: for every byte i of
// `text`, [begin[i], end[i]) is the byte range of the original character it came from.
struct NormalizedText {
  std::string text;
  std::vector<uint32_t> begin;
  std::vector<uint32_t> end;

  void clear() {
    text.clear();
    begin.clear();
    end.clear();
  }
  size_t size() const { return text.size(); }
  // Appends the UTF-8 of cp, aligned to the original range [b, e).
  void Append(char32_t cp, uint32_t b, uint32_t e);
  // Copies `raw` (valid UTF-8) unchanged; original offsets start at `base`.
  void AssignIdentity(std::string_view raw, uint32_t base);
};

// A byte range [begin, end) into a NormalizedText (or into the original input).
struct Span {
  uint32_t begin;
  uint32_t end;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Normalizes `raw` (valid UTF-8 whose first byte is at original offset `base`) into *out
  // (cleared first).
  virtual void NormalizeRaw(std::string_view raw, uint32_t base, NormalizedText* out) const = 0;
  // Normalizes already-normalized text (for chaining in a Sequence); *out is cleared first.
  virtual void Normalize(const NormalizedText& in, NormalizedText* out) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Appends the words of text[range) to *words (byte ranges into text, non-empty).
  virtual void PreTokenize(const NormalizedText& text, Span range,
                           std::vector<Span>* words) const = 0;
  // True for ByteLevel (alone or in a Sequence): the model must see each word's bytes mapped
  // to GPT-2's byte-level alphabet (the BPE model does that mapping itself, see bpe.h).
  virtual bool byte_level() const { return false; }
  // Pre-tokenizers that change the text (Metaspace, or a Sequence holding one) return true and
  // implement RewriteAndSplit instead of PreTokenize: they append the rewritten text of
  // text[range) to *rewritten (aligned to the original input) and its words, as byte ranges
  // into *rewritten, to *words.
  virtual bool rewrites_text() const { return false; }
  virtual void RewriteAndSplit(const NormalizedText& text, Span range, NormalizedText* rewritten,
                               std::vector<Span>* words) const {
    (void)rewritten;
    PreTokenize(text, range, words);
  }
};

struct ModelToken {
  int32_t id;
  uint32_t begin;  // byte range inside the word
  uint32_t end;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the tokens of one pre-tokenized word to *out.
  virtual Status Tokenize(std::string_view word, std::vector<ModelToken>* out) const = 0;
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  virtual std::optional<std::string_view> IdToToken(int32_t id) const = 0;
  // 1 + the largest id of the model's vocabulary.
  virtual int32_t vocab_size() const = 0;
};

// Token sequence before post-processing.
struct TokenSequence {
  std::vector<int32_t> ids;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  void clear() {
    ids.clear();
    offsets.clear();
  }
};

// The trim_offsets of a ByteLevel or RobertaProcessing post-processor: each token's offsets
// lose the characters of its leading and trailing spaces (Ġ or whitespace in the token
// string); with add_prefix_space a single leading space of a sequence's first token is kept.
struct OffsetTrim {
  bool enabled = false;
  bool add_prefix_space = false;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Applied by the pipeline to each sequence after truncation, before Process / ProcessPair.
  virtual OffsetTrim offset_trim() const { return {}; }
  // Special tokens added around one sequence.
  virtual size_t num_special_tokens() const = 0;
  // Appends the final single-sequence encoding to *out: with the special tokens when
  // add_special_tokens, otherwise just the sequence (with its template type id).
  virtual void Process(const TokenSequence& seq, bool add_special_tokens,
                       Encoding* out) const = 0;
  // Special tokens added around a pair.
  virtual size_t num_special_tokens_pair() const = 0;
  // Appends the final pair encoding to *out (type ids from the pair template). False when the
  // processor has no pair template.
  virtual bool ProcessPair(const TokenSequence& a, const TokenSequence& b,
                           bool add_special_tokens, Encoding* out) const = 0;
};

}  // namespace orchid::tok
