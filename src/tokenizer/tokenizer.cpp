// Tokenizer::FromJson and the pipeline that runs the components of one tokenizer.json.
#include "tokenizer/tokenizer.h"

#include <simdjson.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe.h"
#include "tokenizer/components.h"
#include "tokenizer/decoders.h"
#include "tokenizer/json_util.h"
#include "tokenizer/models.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processors.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/unicode.h"

namespace orchid {
namespace {

using tok::NormalizedText;
using tok::Span;
using tok::TextPiece;

// Per-thread buffers, so that Encode allocates nothing once they have grown.
struct Scratch {
  std::vector<TextPiece> pieces;
  std::vector<TextPiece> sub_pieces;
  NormalizedText normalized;
  NormalizedText rewritten;  // the pre-tokenizer's rewrite of `normalized` (Metaspace)
  std::vector<Span> words;
  std::vector<tok::ModelToken> model_tokens;
  tok::TokenSequence seq;
  tok::TokenSequence seq_b;  // the second sequence of a pair
  tok::TokenSequence* cur = &seq;  // where TokenizeNormalized appends
};

// A JSON null (a default-constructed dom::element is not one: reading it crashes).
simdjson::dom::element NullElement() {
  static simdjson::dom::parser* parser = new simdjson::dom::parser();
  static const simdjson::dom::element null = parser->parse(std::string_view("null")).value();
  return null;
}

class PipelineTokenizer final : public Tokenizer {
 public:
  Status Load(simdjson::dom::element root, const std::string& origin,
              const TokenizerOptions& options) {
    simdjson::dom::object o;
    if (root.get(o) != simdjson::SUCCESS) return Status::Corrupt(tok::StrCat({origin, ": not a JSON object"}));
    auto section = [&](const char* key) {
      simdjson::dom::element e;
      if (o[key].get(e) != simdjson::SUCCESS) e = NullElement();  // absent: as null
      return e;
    };
    simdjson::dom::element model_json;
    if (o["model"].get(model_json) != simdjson::SUCCESS) {
      return Status::Corrupt(tok::StrCat({origin, ": missing \"model\""}));
    }
    ORCHID_ASSIGN_OR_RETURN(model_, tok::MakeModel(model_json, tok::StrCat({origin, ": model"})));
    ORCHID_ASSIGN_OR_RETURN(normalizer_,
                            tok::MakeNormalizer(section("normalizer"), tok::StrCat({origin, ": normalizer"})));
    if (options.lowercase) normalizer_ = tok::LowercaseFirst(std::move(normalizer_));
    ORCHID_ASSIGN_OR_RETURN(pre_tokenizer_, tok::MakePreTokenizer(section("pre_tokenizer"),
                                                                  tok::StrCat({origin, ": pre_tokenizer"})));
    if (pre_tokenizer_ && pre_tokenizer_->byte_level()) {
      auto* bpe = dynamic_cast<tok::BpeModel*>(model_.get());
      if (bpe == nullptr) {
        return Status::Corrupt(tok::StrCat({origin, ": a ByteLevel pre-tokenizer needs a BPE model"}));
      }
      bpe->EnableByteLevel();
    }
    ORCHID_ASSIGN_OR_RETURN(post_processor_, tok::MakePostProcessor(section("post_processor"),
                                                                    tok::StrCat({origin, ": post_processor"})));
    ORCHID_RETURN_IF_ERROR(added_.Load(section("added_tokens"), *model_, normalizer_.get(),
                                       tok::StrCat({origin, ": added_tokens"})));
    ORCHID_RETURN_IF_ERROR(ReadTruncation(section("truncation"), origin));
    if (auto decoder = tok::MakeDecoder(section("decoder"), tok::StrCat({origin, ": decoder"}));
        decoder.ok()) {
      decoder_ = std::move(*decoder);
    } else {  // loading still succeeds: only Decode needs the decoder
      decoder_error_ = decoder.status().ToString();
    }
    for (const tok::AddedToken& t : added_.tokens()) {
      if (t.special) special_tokens_.insert(t.content);
    }
    vocab_size_ = model_->vocab_size();
    for (const tok::AddedToken& t : added_.tokens()) vocab_size_ = std::max(vocab_size_, t.id + 1);
    if (post_processor_) trim_ = post_processor_->offset_trim();
    if (trim_.enabled) BuildTrimTables();
    return Status::Ok();
  }

  Status Encode(std::string_view text, const EncodeOptions& options,
                Encoding* out) const override {
    out->clear();
    thread_local Scratch s;
    ORCHID_RETURN_IF_ERROR(EncodeSequence(text, &s.seq, &s));
    Truncate(options, &s.seq);
    TrimOffsets(text, &s.seq);
    if (post_processor_) {
      post_processor_->Process(s.seq, options.add_special_tokens, out);
    } else {
      out->ids = s.seq.ids;
      out->type_ids.assign(s.seq.ids.size(), 0);
      out->offsets = s.seq.offsets;
      out->special_tokens_mask.assign(s.seq.ids.size(), 0);
    }
    return Status::Ok();
  }

  Status EncodePair(std::string_view a, std::string_view b, const EncodeOptions& options,
                    Encoding* out) const override {
    out->clear();
    thread_local Scratch s;
    ORCHID_RETURN_IF_ERROR(EncodeSequence(a, &s.seq, &s));
    ORCHID_RETURN_IF_ERROR(EncodeSequence(b, &s.seq_b, &s));
    ORCHID_RETURN_IF_ERROR(TruncatePair(options, &s.seq, &s.seq_b));
    TrimOffsets(a, &s.seq);
    TrimOffsets(b, &s.seq_b);
    if (post_processor_) {
      if (!post_processor_->ProcessPair(s.seq, s.seq_b, options.add_special_tokens, out)) {
        return Status::InvalidArgument("the tokenizer's post-processor has no pair template");
      }
    } else {
      out->ids = s.seq.ids;
      out->ids.insert(out->ids.end(), s.seq_b.ids.begin(), s.seq_b.ids.end());
      out->type_ids.assign(s.seq.ids.size(), 0);  // like `tokenizers`: A 0, B 1
      out->type_ids.resize(out->ids.size(), 1);
      out->offsets = s.seq.offsets;
      out->offsets.insert(out->offsets.end(), s.seq_b.offsets.begin(), s.seq_b.offsets.end());
      out->special_tokens_mask.assign(out->ids.size(), 0);
    }
    return Status::Ok();
  }

  // Tokenizes one text (added tokens, normalizer, pre-tokenizer, model) into *seq (cleared).
  Status EncodeSequence(std::string_view text, tok::TokenSequence* seq, Scratch* s) const {
    if (text.size() >= 0xFFFFFFFFu) {
      return Status::InvalidArgument(
          tok::StrCat({"text too long to tokenize (", std::to_string(text.size()), " bytes)"}));
    }
    const size_t bad = tok::FindInvalidUtf8(text);
    if (bad != std::string_view::npos) {
      return Status::InvalidArgument(
          tok::StrCat({"text is not valid UTF-8 (at byte ", std::to_string(bad), ")"}));
    }
    seq->clear();
    s->cur = seq;
    s->pieces.clear();
    added_.SplitRaw(text, {0, static_cast<uint32_t>(text.size())}, &s->pieces);
    for (const TextPiece& piece : s->pieces) {
      if (piece.id >= 0) {
        s->cur->ids.push_back(piece.id);
        s->cur->offsets.emplace_back(piece.begin, piece.end);
        continue;
      }
      const std::string_view raw = text.substr(piece.begin, piece.end - piece.begin);
      if (normalizer_) {
        normalizer_->NormalizeRaw(raw, piece.begin, &s->normalized);
      } else {
        s->normalized.AssignIdentity(raw, piece.begin);
      }
      const Span all{0, static_cast<uint32_t>(s->normalized.size())};
      if (!added_.has_normalized()) {
        ORCHID_RETURN_IF_ERROR(TokenizeNormalized(all, s));
        continue;
      }
      s->sub_pieces.clear();
      added_.SplitNormalized(s->normalized.text, all, &s->sub_pieces);
      for (const TextPiece& sub : s->sub_pieces) {
        if (sub.id >= 0) {
          s->cur->ids.push_back(sub.id);
          s->cur->offsets.push_back(OriginalOffsets(s->normalized, sub.begin, sub.end));
        } else {
          ORCHID_RETURN_IF_ERROR(TokenizeNormalized({sub.begin, sub.end}, s));
        }
      }
    }
    return Status::Ok();
  }

  Status Decode(const std::vector<int32_t>& ids, bool skip_special_tokens,
                std::string* out) const override {
    out->clear();
    if (!decoder_error_.empty()) return Status::InvalidArgument(decoder_error_);
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
      std::optional<std::string_view> t = IdToToken(id);
      if (!t) continue;
      if (skip_special_tokens && special_tokens_.count(std::string(*t)) > 0) continue;
      tokens.emplace_back(*t);
    }
    if (decoder_) {
      decoder_->DecodeChain(&tokens);
      for (const std::string& t : tokens) out->append(t);
    } else {
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0) out->push_back(' ');
        out->append(tokens[i]);
      }
    }
    return Status::Ok();
  }

  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<EncodeOptions> FileTruncation() const override { return truncation_; }

  // {"direction": "Right" | "Left", "max_length": N, "strategy": "LongestFirst" | "OnlyFirst" |
  // "OnlySecond", "stride": S} or null. The stride only shapes `tokenizers`' overflowing
  // encodings, which orchid does not return, so it is read and ignored.
  Status ReadTruncation(simdjson::dom::element t, const std::string& origin) {
    if (t.is_null()) return Status::Ok();
    const std::string where = tok::StrCat({origin, ": truncation"});
    simdjson::dom::object o;
    if (t.get_object().get(o)) return Status::Corrupt(where + " must be an object or null");
    EncodeOptions e;
    int64_t max_length = 0;
    if (o["max_length"].get_int64().get(max_length) || max_length < 0) {
      return Status::Corrupt(where + ": \"max_length\" must be a non-negative integer");
    }
    e.max_length = size_t(max_length);
    std::string_view direction = "Right", strategy = "LongestFirst";
    simdjson::dom::element v;
    if (!o["direction"].get(v) && v.get_string().get(direction)) {
      return Status::Corrupt(where + ": \"direction\" must be a string");
    }
    if (!o["strategy"].get(v) && v.get_string().get(strategy)) {
      return Status::Corrupt(where + ": \"strategy\" must be a string");
    }
    if (direction != "Right" && direction != "Left") {
      return Status::Corrupt(where + ": \"direction\" must be \"Right\" or \"Left\"");
    }
    e.side = direction == "Left" ? TruncationSide::kLeft : TruncationSide::kRight;
    if (strategy == "LongestFirst") {
      e.strategy = TruncationStrategy::kLongestFirst;
    } else if (strategy == "OnlyFirst") {
      e.strategy = TruncationStrategy::kOnlyFirst;
    } else if (strategy == "OnlySecond") {
      e.strategy = TruncationStrategy::kOnlySecond;
    } else {
      return Status::Corrupt(where + ": unknown \"strategy\" \"" + std::string(strategy) + "\"");
    }
    if (e.max_length > 0) truncation_ = e;
    return Status::Ok();
  }
  std::optional<int32_t> TokenToId(std::string_view token) const override {
    if (auto id = added_.TokenToId(token)) return id;
    return model_->TokenToId(token);
  }
  std::optional<std::string_view> IdToToken(int32_t id) const override {
    if (auto t = added_.IdToToken(id)) return t;
    return model_->IdToToken(id);
  }
  size_t num_special_tokens() const override {
    return post_processor_ ? post_processor_->num_special_tokens() : 0;
  }

 private:
  static std::pair<uint32_t, uint32_t> OriginalOffsets(const NormalizedText& n, uint32_t b,
                                                       uint32_t e) {
    if (b >= e) return {0, 0};
    return {n.begin[b], n.end[e - 1]};
  }

  // For trim_offsets: how many leading / trailing characters of each token's string are
  // spaces (Ġ, the byte-level space, or whitespace), capped at 255.
  void BuildTrimTables() {
    leading_spaces_.assign(static_cast<size_t>(vocab_size_), 0);
    trailing_spaces_.assign(static_cast<size_t>(vocab_size_), 0);
    std::vector<char32_t> cps;
    for (int32_t id = 0; id < vocab_size_; ++id) {
      const std::optional<std::string_view> token = IdToToken(id);
      if (!token) continue;
      cps.clear();
      size_t i = 0;
      char32_t cp = 0;
      while (i < token->size()) {
        if (!tok::DecodeUtf8(*token, &i, &cp)) {
          cp = 0xFFFD;
          ++i;
        }
        cps.push_back(cp);
      }
      auto space = [](char32_t c) { return c == 0x120 || tok::IsWhiteSpace(c); };
      size_t lead = 0;
      while (lead < cps.size() && space(cps[lead])) ++lead;
      size_t trail = 0;
      while (trail < cps.size() && space(cps[cps.size() - 1 - trail])) ++trail;
      leading_spaces_[static_cast<size_t>(id)] = static_cast<uint8_t>(std::min<size_t>(lead, 255));
      trailing_spaces_[static_cast<size_t>(id)] = static_cast<uint8_t>(std::min<size_t>(trail, 255));
    }
  }

  // `tokenizers`' process_offsets (ByteLevel / RobertaProcessing trim_offsets). The reference
  // works in character offsets of the input, so the counts step over characters of `text`.
  void TrimOffsets(std::string_view text, tok::TokenSequence* seq) const {
    if (!trim_.enabled) return;
    for (size_t i = 0; i < seq->ids.size(); ++i) {
      const auto id = static_cast<size_t>(seq->ids[i]);
      if (id >= leading_spaces_.size()) continue;
      size_t lead = leading_spaces_[id];
      const size_t trail = trailing_spaces_[id];
      if (lead == 0 && trail == 0) continue;
      auto& [b, e] = seq->offsets[i];
      if (lead > 0) {
        const bool is_first = i == 0 || b == 0;
        if (is_first && trim_.add_prefix_space && lead == 1) lead = 0;
        for (size_t k = 0; k < lead && b < e; ++k) {
          b += static_cast<uint32_t>(tok::Utf8SeqLength(static_cast<unsigned char>(text[b])));
        }
        b = std::min(b, e);
      }
      if (trail > 0) {
        uint32_t p = e;
        size_t k = 0;
        for (; k < trail && p > 0; ++k) {
          --p;
          while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        }
        if (k == trail) e = std::max(p, b);  // the reference: only when offsets.1 >= trailing
      }
    }
  }

  // Pre-tokenizes normalized[range) and runs the model on each word.
  Status TokenizeNormalized(Span range, Scratch* s) const {
    s->words.clear();
    const NormalizedText* src = &s->normalized;
    if (pre_tokenizer_ && pre_tokenizer_->rewrites_text()) {
      s->rewritten.clear();
      pre_tokenizer_->RewriteAndSplit(s->normalized, range, &s->rewritten, &s->words);
      src = &s->rewritten;
    } else if (pre_tokenizer_) {
      pre_tokenizer_->PreTokenize(s->normalized, range, &s->words);
    } else if (range.end > range.begin) {
      s->words.push_back(range);
    }
    const std::string_view text = src->text;
    for (const Span& w : s->words) {
      s->model_tokens.clear();
      ORCHID_RETURN_IF_ERROR(model_->Tokenize(text.substr(w.begin, w.end - w.begin),
                                              &s->model_tokens));
      for (const tok::ModelToken& t : s->model_tokens) {
        s->cur->ids.push_back(t.id);
        s->cur->offsets.push_back(OriginalOffsets(*src, w.begin + t.begin, w.begin + t.end));
      }
    }
    return Status::Ok();
  }

  // Like `tokenizers`: with special tokens, they count towards max_length; a max_length
  // smaller than their number disables truncation (the reference's unsigned wrap-around).
  void Truncate(const EncodeOptions& options, tok::TokenSequence* seq) const {
    if (options.max_length == 0) return;
    size_t limit = options.max_length;
    if (options.add_special_tokens) {
      const size_t added = num_special_tokens();
      if (limit < added) return;
      limit -= added;
    }
    const size_t n = seq->ids.size();
    if (n <= limit) return;
    if (options.side == TruncationSide::kRight) {
      seq->ids.resize(limit);
      seq->offsets.resize(limit);
    } else {
      seq->ids.erase(seq->ids.begin(), seq->ids.begin() + static_cast<ptrdiff_t>(n - limit));
      seq->offsets.erase(seq->offsets.begin(),
                         seq->offsets.begin() + static_cast<ptrdiff_t>(n - limit));
    }
  }

  static void TruncateTo(size_t n, TruncationSide side, tok::TokenSequence* seq) {
    const size_t len = seq->ids.size();
    if (len <= n) return;
    if (side == TruncationSide::kRight) {
      seq->ids.resize(n);
      seq->offsets.resize(n);
    } else {
      seq->ids.erase(seq->ids.begin(), seq->ids.begin() + static_cast<ptrdiff_t>(len - n));
      seq->offsets.erase(seq->offsets.begin(),
                         seq->offsets.begin() + static_cast<ptrdiff_t>(len - n));
    }
  }

  // `tokenizers`' truncate_encodings for a pair (stride 0).
  Status TruncatePair(const EncodeOptions& options, tok::TokenSequence* a,
                      tok::TokenSequence* b) const {
    if (options.max_length == 0) return Status::Ok();
    size_t max_length = options.max_length;
    if (options.add_special_tokens) {
      const size_t added = post_processor_ ? post_processor_->num_special_tokens_pair() : 0;
      if (max_length < added) return Status::Ok();  // the reference's wrap-around: no cut
      max_length -= added;
    }
    const size_t total = a->ids.size() + b->ids.size();
    if (total <= max_length) return Status::Ok();
    const size_t to_remove = total - max_length;
    if (options.strategy == TruncationStrategy::kLongestFirst) {
      size_t n1 = a->ids.size();
      size_t n2 = b->ids.size();
      const bool swap = n1 > n2;
      if (swap) std::swap(n1, n2);
      n2 = n1 > max_length ? n1 : std::max(n1, max_length - n1);
      if (n1 + n2 > max_length) {
        n1 = max_length / 2;
        n2 = n1 + max_length % 2;
      }
      if (swap) std::swap(n1, n2);
      TruncateTo(n1, options.side, a);
      TruncateTo(n2, options.side, b);
      return Status::Ok();
    }
    tok::TokenSequence* target = options.strategy == TruncationStrategy::kOnlyFirst ? a : b;
    const size_t len = target->ids.size();
    if (len <= to_remove) {
      return Status::InvalidArgument(tok::StrCat(
          {"truncation error: the ", options.strategy == TruncationStrategy::kOnlyFirst ? "first" : "second",
           " sequence is too short to remove ", std::to_string(to_remove), " tokens"}));
    }
    TruncateTo(len - to_remove, options.side, target);
    return Status::Ok();
  }

  std::unique_ptr<tok::Model> model_;
  std::unique_ptr<tok::Normalizer> normalizer_;
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<tok::PostProcessor> post_processor_;
  tok::AddedVocabulary added_;
  std::unique_ptr<tok::Decoder> decoder_;
  std::string decoder_error_;  // why the decoder could not be built (Decode reports it)
  std::unordered_set<std::string> special_tokens_;
  int32_t vocab_size_ = 0;
  std::optional<EncodeOptions> truncation_;
  tok::OffsetTrim trim_;
  std::vector<uint8_t> leading_spaces_;  // per id, for trim_offsets (BuildTrimTables)
  std::vector<uint8_t> trailing_spaces_;
};

Result<std::unique_ptr<Tokenizer>> Build(simdjson::dom::parser& parser,
                                         const simdjson::padded_string& json,
                                         const std::string& origin,
                                         const TokenizerOptions& options) {
  simdjson::dom::element root;
  if (auto err = parser.parse(json).get(root); err != simdjson::SUCCESS) {
    return Status::Corrupt(tok::StrCat({origin, ": invalid JSON: ", simdjson::error_message(err)}));
  }
  auto tokenizer = std::make_unique<PipelineTokenizer>();
  ORCHID_RETURN_IF_ERROR(tokenizer->Load(root, origin, options));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path,
                                                       const TokenizerOptions& options) {
  if (path.size() >= 6 && path.compare(path.size() - 6, 6, ".model") == 0) {
    // A SentencePiece model without a tokenizer.json (SigLIP v1): its tokenizer.json made here.
    ORCHID_ASSIGN_OR_RETURN(std::string made, SentencePieceFileTokenizerJson(path));
    return FromJson(made, path, options);
  }
  simdjson::padded_string json;
  if (auto err = simdjson::padded_string::load(path).get(json); err != simdjson::SUCCESS) {
    return Status::IoError(tok::StrCat({path, ": cannot read: ", simdjson::error_message(err)}));
  }
  simdjson::dom::parser parser;
  return Build(parser, json, path, options);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json,
                                                       const std::string& origin,
                                                       const TokenizerOptions& options) {
  simdjson::padded_string padded(json);
  simdjson::dom::parser parser;
  return Build(parser, padded, origin, options);
}

}  // namespace orchid
