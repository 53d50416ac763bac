#include "tokenizer/pre_tokenizers.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "tokenizer/split_patterns.h"
#include "tokenizer/unicode.h"

namespace orchid::tok {
namespace {

// The code point at *pos, advancing *pos past it. Pre-tokenizers see validated UTF-8, so the
// U+FFFD branch (one byte) cannot happen; it only keeps a broken invariant from looping.
char32_t NextCodePoint(std::string_view text, size_t* pos) {
  const size_t at = *pos;
  char32_t cp = 0;
  if (!DecodeUtf8(text, pos, &cp)) {
    *pos = at + 1;
    cp = 0xFFFD;
  }
  return cp;
}

enum CharClass : uint8_t { kWord = 0, kSpace = 1, kPunct = 2 };

constexpr std::array<uint8_t, 128> MakeAsciiClasses() {
  std::array<uint8_t, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c >= 9 && c <= 13) || c == ' ') {
      t[c] = kSpace;
    } else if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126)) {
      t[c] = kPunct;
    }
  }
  return t;
}
constexpr std::array<uint8_t, 128> kAsciiClasses = MakeAsciiClasses();

class BertPreTokenizer final : public PreTokenizer {
 public:
  void PreTokenize(const NormalizedText& normalized, Span range,
                   std::vector<Span>* words) const override {
    const std::string_view text = normalized.text;
    size_t i = range.begin;
    size_t word_start = i;
    auto close_word = [&](size_t at) {
      if (at > word_start) {
        words->push_back({static_cast<uint32_t>(word_start), static_cast<uint32_t>(at)});
      }
    };
    while (i < range.end) {
      const auto byte = static_cast<unsigned char>(text[i]);
      size_t next = i;
      uint8_t cls;
      if (byte < 0x80) {
        cls = kAsciiClasses[byte];
        next = i + 1;
      } else {
        const char32_t cp = NextCodePoint(text, &next);
        cls = IsWhiteSpace(cp) ? kSpace : IsBertPunctuation(cp) ? kPunct : kWord;
      }
      if (cls != kWord) {
        close_word(i);
        if (cls == kPunct) {
          words->push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(next)});
        }
        word_start = next;
      }
      i = next;
    }
    close_word(range.end);
  }
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Split: the pattern's matches and the text between them, combined per `behavior` exactly as
// `tokenizers`' NormalizedString::split does (empty pieces dropped).
class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<SplitPattern> pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  void PreTokenize(const NormalizedText& normalized, Span range,
                   std::vector<Span>* words) const override {
    Split(*pattern_, behavior_, invert_, normalized.text, range, words);
  }

  static void Split(const SplitPattern& pattern, SplitBehavior behavior, bool invert,
                    std::string_view text, Span range, std::vector<Span>* words) {
    struct Piece {
      Span span;
      bool match;
    };
    thread_local std::vector<Span> matches;
    thread_local std::vector<Piece> pieces;
    matches.clear();
    pieces.clear();
    pattern.FindMatches(text, range, &matches);
    uint32_t prev = range.begin;
    for (const Span& m : matches) {
      if (m.begin > prev) pieces.push_back({{prev, m.begin}, invert});
      pieces.push_back({m, !invert});
      prev = m.end;
    }
    if (range.end > prev) pieces.push_back({{prev, range.end}, invert});

    auto emit = [&](Span s) {
      if (s.end > s.begin) words->push_back(s);
    };
    switch (behavior) {
      case SplitBehavior::kRemoved:
        for (const Piece& p : pieces) {
          if (!p.match) emit(p.span);
        }
        return;
      case SplitBehavior::kIsolated:
        for (const Piece& p : pieces) emit(p.span);
        return;
      case SplitBehavior::kMergedWithPrevious:
      case SplitBehavior::kContiguous: {
        const size_t first = words->size();
        bool previous_match = false;
        for (const Piece& p : pieces) {
          const bool merge = behavior == SplitBehavior::kContiguous
                                 ? p.match == previous_match
                                 : p.match && !previous_match;
          if (merge && words->size() > first) {
            words->back().end = p.span.end;
          } else {
            emit(p.span);
          }
          previous_match = p.match;
        }
        return;
      }
      case SplitBehavior::kMergedWithNext: {
        const size_t first = words->size();
        bool previous_match = false;
        for (size_t k = pieces.size(); k-- > 0;) {
          const Piece& p = pieces[k];
          if (p.match && !previous_match && words->size() > first) {
            words->back().begin = p.span.begin;
          } else {
            emit(p.span);
          }
          previous_match = p.match;
        }
        std::reverse(words->begin() + static_cast<ptrdiff_t>(first), words->end());
        return;
      }
    }
  }

 private:
  std::unique_ptr<SplitPattern> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// ByteLevel: optionally prepends a space (add_prefix_space, when the piece does not start with
// one) and splits with GPT-2's regex; the byte-to-character mapping itself is done by the BPE
// model (byte_level() tells the pipeline to switch it on).
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(std::unique_ptr<SplitPattern> gpt2, bool add_prefix_space)
      : gpt2_(std::move(gpt2)), add_prefix_space_(add_prefix_space) {}
  void PreTokenize(const NormalizedText& normalized, Span range,
                   std::vector<Span>* words) const override {
    if (gpt2_) {
      SplitPreTokenizer::Split(*gpt2_, SplitBehavior::kIsolated, false, normalized.text, range, words);
    } else if (range.end > range.begin) {
      words->push_back(range);
    }
  }
  void RewriteAndSplit(const NormalizedText& in, Span range, NormalizedText* out,
                       std::vector<Span>* words) const override {
    if (range.end <= range.begin) return;
    const auto start = static_cast<uint32_t>(out->text.size());
    if (in.text[range.begin] != ' ') {
      out->text.push_back(' ');
      out->begin.push_back(in.begin[range.begin]);
      out->end.push_back(in.end[range.begin]);
    }
    out->text.append(std::string_view(in.text).substr(range.begin, range.end - range.begin));
    out->begin.insert(out->begin.end(), in.begin.begin() + range.begin, in.begin.begin() + range.end);
    out->end.insert(out->end.end(), in.end.begin() + range.begin, in.end.begin() + range.end);
    PreTokenize(*out, {start, static_cast<uint32_t>(out->text.size())}, words);
  }
  bool byte_level() const override { return true; }
  bool rewrites_text() const override { return add_prefix_space_; }

 private:
  std::unique_ptr<SplitPattern> gpt2_;  // null when use_regex is false
  bool add_prefix_space_;
};

// WhitespaceSplit: splits on (and drops) Unicode whitespace.
class WhitespaceSplitPreTokenizer final : public PreTokenizer {
 public:
  void PreTokenize(const NormalizedText& normalized, Span range,
                   std::vector<Span>* words) const override {
    const std::string_view text = normalized.text;
    size_t i = range.begin;
    size_t start = i;
    while (i < range.end) {
      size_t next = i;
      char32_t cp = 0;
      if (!DecodeUtf8(text, &next, &cp)) {
        next = i + 1;
        cp = 0xFFFD;
      }
      if (IsWhiteSpace(cp)) {
        if (i > start) words->push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(i)});
        start = next;
      }
      i = next;
    }
    if (range.end > start) words->push_back({static_cast<uint32_t>(start), range.end});
  }
};

// Whitespace: the reference's \w+|[^\w\s]+ (a Rust `regex` crate regex, not Oniguruma: its \w
// leaves out ² ³ ½), keeping the matches: maximal runs of word characters and maximal runs of
// other non-space characters.
class WhitespacePreTokenizer final : public PreTokenizer {
 public:
  void PreTokenize(const NormalizedText& normalized, Span range,
                   std::vector<Span>* words) const override {
    enum Kind : uint8_t { kWordRun, kSpaceRun, kOtherRun };
    const std::string_view text = normalized.text;
    size_t i = range.begin;
    size_t start = i;
    Kind current = kSpaceRun;
    auto close = [&](size_t at) {
      if (current != kSpaceRun && at > start) {
        words->push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(at)});
      }
    };
    while (i < range.end) {
      size_t next = i;
      const char32_t cp = NextCodePoint(text, &next);
      const Kind kind = IsWordChar(cp) ? kWordRun : IsWhiteSpace(cp) ? kSpaceRun : kOtherRun;
      if (kind != current) {
        close(i);
        start = i;
        current = kind;
      }
      i = next;
    }
    close(range.end);
  }
};

// Matches every single character for which `Predicate` holds (the reference's Split with a
// char -> bool pattern: one match per character, Contiguous / Merged* combine them).
template <bool (*Predicate)(char32_t)>
class CharPattern final : public SplitPattern {
 public:
  void FindMatches(std::string_view text, Span range, std::vector<Span>* matches) const override {
    size_t i = range.begin;
    while (i < range.end) {
      size_t next = i;
      const char32_t cp = NextCodePoint(text, &next);
      if (Predicate(cp)) {
        matches->push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(next)});
      }
      i = next;
    }
  }
};

enum class PrependScheme { kAlways, kFirst, kNever };

// Metaspace: spaces become `replacement` (▁), which is prepended to each piece (always, or
// only to the piece at the start of the input with kFirst) unless it already starts with one;
// with split, the text is cut before every ▁ (MergedWithNext).
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split),
        pattern_(MakeLiteralPattern(replacement_)) {}

  bool rewrites_text() const override { return true; }
  void PreTokenize(const NormalizedText& text, Span range, std::vector<Span>* words) const override {
    thread_local NormalizedText scratch;  // not reached through the pipeline (rewrites_text)
    scratch.clear();
    RewriteAndSplit(text, range, &scratch, words);
  }

  void RewriteAndSplit(const NormalizedText& in, Span range, NormalizedText* out,
                       std::vector<Span>* words) const override {
    if (range.end <= range.begin) return;
    const std::string_view text = in.text;
    const auto start = static_cast<uint32_t>(out->text.size());
    const bool starts_with_space = text[range.begin] == ' ';
    const bool starts_with_rep = text.substr(range.begin, range.end - range.begin)
                                     .substr(0, replacement_.size()) == replacement_;
    bool prepend = false;
    if (!starts_with_space && !starts_with_rep) {
      prepend = scheme_ == PrependScheme::kAlways ||
                (scheme_ == PrependScheme::kFirst && in.begin[range.begin] == 0);
    }
    if (prepend) Append(replacement_, in.begin[range.begin], in.end[range.begin], out);
    // Spaces become the replacement; the runs between them are copied whole.
    uint32_t i = range.begin;
    while (i < range.end) {
      if (text[i] == ' ') {
        Append(replacement_, in.begin[i], in.end[i], out);
        ++i;
        continue;
      }
      const void* hit = std::memchr(text.data() + i, ' ', range.end - i);
      const auto run_end = hit == nullptr ? range.end
                                          : static_cast<uint32_t>(static_cast<const char*>(hit) -
                                                                  text.data());
      out->text.append(text.substr(i, run_end - i));
      out->begin.insert(out->begin.end(), in.begin.begin() + i, in.begin.begin() + run_end);
      out->end.insert(out->end.end(), in.end.begin() + i, in.end.begin() + run_end);
      i = run_end;
    }
    const Span rewritten{start, static_cast<uint32_t>(out->text.size())};
    if (split_) {
      SplitPreTokenizer::Split(*pattern_, SplitBehavior::kMergedWithNext, false, out->text, rewritten, words);
    } else {
      words->push_back(rewritten);
    }
  }

 private:
  static void Append(std::string_view s, uint32_t b, uint32_t e, NormalizedText* out) {
    out->text.append(s);
    out->begin.insert(out->begin.end(), s.size(), b);
    out->end.insert(out->end.end(), s.size(), e);
  }

  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  std::unique_ptr<SplitPattern> pattern_;
};

// Sequence: each pre-tokenizer splits every piece the previous one produced. At most one step
// may rewrite the text (Metaspace); the steps after it work on the rewritten text.
class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {
    for (const auto& s : steps_) {
      byte_level_ = byte_level_ || s->byte_level();
      rewrites_ = rewrites_ || s->rewrites_text();
    }
  }
  void PreTokenize(const NormalizedText& normalized, Span range,
                   std::vector<Span>* words) const override {
    Run(normalized, range, nullptr, words);
  }
  void RewriteAndSplit(const NormalizedText& text, Span range, NormalizedText* rewritten,
                       std::vector<Span>* words) const override {
    Run(text, range, rewritten, words);
  }
  bool byte_level() const override { return byte_level_; }
  bool rewrites_text() const override { return rewrites_; }

 private:
  void Run(const NormalizedText& normalized, Span range, NormalizedText* rewritten,
           std::vector<Span>* words) const {
    if (steps_.empty()) {
      if (range.end > range.begin) words->push_back(range);
      return;
    }
    // One pair of buffers per nesting level (a Sequence may hold Sequences), reused.
    struct Buffers {
      std::vector<Span> current, next;
    };
    thread_local std::vector<std::unique_ptr<Buffers>> buffers;
    thread_local size_t depth = 0;
    if (buffers.size() <= depth) buffers.push_back(std::make_unique<Buffers>());
    std::vector<Span>& current = buffers[depth]->current;
    std::vector<Span>& next = buffers[depth]->next;
    ++depth;
    current.clear();
    current.push_back(range);
    const NormalizedText* text = &normalized;
    for (size_t k = 0; k < steps_.size(); ++k) {
      std::vector<Span>* out = k + 1 == steps_.size() ? words : &next;
      if (out == &next) next.clear();
      const bool rewrite = rewritten != nullptr && steps_[k]->rewrites_text();
      for (const Span& piece : current) {
        if (rewrite) {
          steps_[k]->RewriteAndSplit(*text, piece, rewritten, out);
        } else {
          steps_[k]->PreTokenize(*text, piece, out);
        }
      }
      if (rewrite) text = rewritten;
      if (out == &next) current.swap(next);
    }
    --depth;
  }

  std::vector<std::unique_ptr<PreTokenizer>> steps_;
  bool byte_level_ = false;
  bool rewrites_ = false;
};

Result<SplitBehavior> ParseBehavior(std::string_view b, std::string_view where) {
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  return JsonError(where, StrCat({"unknown split behavior \"", b, "\""}));
}

// {"String": "x"} or {"Regex": "..."}.
Result<std::unique_ptr<SplitPattern>> ParsePattern(JsonObject o, std::string_view where) {
  JsonObject pattern;
  if (o["pattern"].get(pattern) != simdjson::SUCCESS) {
    return JsonError(where, "\"pattern\" must be {\"String\": …} or {\"Regex\": …}");
  }
  std::string_view s;
  if (pattern["String"].get(s) == simdjson::SUCCESS) return MakeLiteralPattern(s);
  if (pattern["Regex"].get(s) == simdjson::SUCCESS) {
    auto r = MakeRegexPattern(s);
    if (!r.ok()) return JsonError(where, r.status().message());
    return r;
  }
  return JsonError(where, "\"pattern\" must be {\"String\": …} or {\"Regex\": …}");
}

}  // namespace

std::unique_ptr<PreTokenizer> MakeBertPreTokenizer() {
  return std::make_unique<BertPreTokenizer>();
}

Result<std::unique_ptr<PreTokenizer>> MakePreTokenizer(JsonElement json, std::string_view where) {
  if (json.is_null()) return std::unique_ptr<PreTokenizer>();
  ORCHID_ASSIGN_OR_RETURN(std::string_view type, ComponentType(json, where));
  if (type == "BertPreTokenizer") return MakeBertPreTokenizer();
  const std::string ctx = StrCat({where, " (", type, ")"});
  JsonObject o = json.get_object().value_unsafe();
  if (type == "Split") {
    ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<SplitPattern> pattern, ParsePattern(o, ctx));
    std::string_view behavior = "Isolated";
    ORCHID_RETURN_IF_ERROR(ReadString(o, "behavior", ctx, &behavior, true));
    ORCHID_ASSIGN_OR_RETURN(SplitBehavior b, ParseBehavior(behavior, ctx));
    bool invert = false;
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "invert", ctx, &invert));
    return std::unique_ptr<PreTokenizer>(std::make_unique<SplitPreTokenizer>(std::move(pattern), b, invert));
  }
  if (type == "ByteLevel") {
    bool add_prefix_space = true;
    bool use_regex = true;
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "add_prefix_space", ctx, &add_prefix_space));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "use_regex", ctx, &use_regex));
    std::unique_ptr<SplitPattern> gpt2;
    if (use_regex) {
      ORCHID_ASSIGN_OR_RETURN(gpt2, MakeRegexPattern(kGpt2SplitRegex));
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<ByteLevelPreTokenizer>(std::move(gpt2), add_prefix_space));
  }
  if (type == "Metaspace") {
    std::string_view replacement = "\u2581";
    std::string_view scheme = "always";
    bool split = true;
    ORCHID_RETURN_IF_ERROR(ReadString(o, "replacement", ctx, &replacement, false));
    ORCHID_RETURN_IF_ERROR(ReadString(o, "prepend_scheme", ctx, &scheme, false));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "split", ctx, &split));
    JsonElement legacy;
    if (o["prepend_scheme"].get(legacy) != simdjson::SUCCESS &&
        o["add_prefix_space"].get(legacy) == simdjson::SUCCESS) {  // older files
      bool add = true;
      ORCHID_RETURN_IF_ERROR(ReadBool(o, "add_prefix_space", ctx, &add));
      scheme = add ? "always" : "never";
    }
    PrependScheme ps;
    if (scheme == "always") {
      ps = PrependScheme::kAlways;
    } else if (scheme == "first") {
      ps = PrependScheme::kFirst;
    } else if (scheme == "never") {
      ps = PrependScheme::kNever;
    } else {
      return JsonError(ctx, StrCat({"unknown prepend_scheme \"", scheme, "\""}));
    }
    return std::unique_ptr<PreTokenizer>(
        std::make_unique<MetaspacePreTokenizer>(std::string(replacement), ps, split));
  }
  if (type == "Whitespace") {
    return std::unique_ptr<PreTokenizer>(std::make_unique<WhitespacePreTokenizer>());
  }
  if (type == "Punctuation") {  // ASCII punctuation | P*, as BertPreTokenizer's
    std::string_view behavior = "Isolated";
    ORCHID_RETURN_IF_ERROR(ReadString(o, "behavior", ctx, &behavior, false));
    ORCHID_ASSIGN_OR_RETURN(SplitBehavior b, ParseBehavior(behavior, ctx));
    return std::unique_ptr<PreTokenizer>(std::make_unique<SplitPreTokenizer>(
        std::make_unique<CharPattern<IsBertPunctuation>>(), b, false));
  }
  if (type == "Digits") {
    bool individual = false;
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "individual_digits", ctx, &individual));
    return std::unique_ptr<PreTokenizer>(std::make_unique<SplitPreTokenizer>(
        std::make_unique<CharPattern<IsNumeric>>(),
        individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false));
  }
  if (type == "WhitespaceSplit") {
    return std::unique_ptr<PreTokenizer>(std::make_unique<WhitespaceSplitPreTokenizer>());
  }
  if (type == "Sequence") {
    simdjson::dom::array items;
    if (o["pretokenizers"].get(items) != simdjson::SUCCESS) {
      return JsonError(ctx, "\"pretokenizers\" must be an array");
    }
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    size_t k = 0;
    for (JsonElement item : items) {
      ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> step,
                              MakePreTokenizer(item, StrCat({ctx, "[", std::to_string(k++), "]"})));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<SequencePreTokenizer>(std::move(steps)));
  }
  return UnsupportedType(where, "pre-tokenizer", type);
}

}  // namespace orchid::tok
