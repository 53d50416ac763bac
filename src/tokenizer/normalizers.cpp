#include "tokenizer/normalizers.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/precompiled.h"
#include "tokenizer/split_patterns.h"
#include "tokenizer/unicode.h"

namespace orchid::tok {

void NormalizedText::Append(char32_t cp, uint32_t b, uint32_t e) {
  if (cp < 0x80) {
    text.push_back(static_cast<char>(cp));
    begin.push_back(b);
    end.push_back(e);
    return;
  }
  const size_t before = text.size();
  AppendUtf8(cp, &text);
  const size_t n = text.size() - before;
  begin.insert(begin.end(), n, b);
  end.insert(end.end(), n, e);
}

void NormalizedText::AssignIdentity(std::string_view raw, uint32_t base) {
  text.assign(raw);
  begin.resize(raw.size());
  end.resize(raw.size());
  size_t i = 0;
  while (i < raw.size()) {
    const size_t n = static_cast<size_t>(Utf8SeqLength(static_cast<unsigned char>(raw[i])));
    const auto b = static_cast<uint32_t>(base + i);
    const auto e = static_cast<uint32_t>(base + i + n);
    for (size_t k = 0; k < n && i + k < raw.size(); ++k) {
      begin[i + k] = b;
      end[i + k] = e;
    }
    i += n;
  }
}

namespace {

// Iterates (code point, original range) over raw valid UTF-8.
struct RawSource {
  std::string_view text;
  uint32_t base;
  template <typename F>
  void ForEach(F&& f) const {
    size_t i = 0;
    char32_t cp = 0;
    while (i < text.size()) {
      const size_t start = i;
      const auto byte = static_cast<unsigned char>(text[i]);
      if (byte < 0x80) {
        ++i;
        f(char32_t{byte}, static_cast<uint32_t>(base + start), static_cast<uint32_t>(base + i));
        continue;
      }
      if (!DecodeUtf8(text, &i, &cp)) {  // cannot happen: input was validated
        cp = 0xFFFD;
        i = start + 1;
      }
      f(cp, static_cast<uint32_t>(base + start), static_cast<uint32_t>(base + i));
    }
  }
};

// Iterates (code point, original range) over a NormalizedText.
struct NormalizedSource {
  const NormalizedText& in;
  template <typename F>
  void ForEach(F&& f) const {
    size_t i = 0;
    char32_t cp = 0;
    while (i < in.text.size()) {
      const size_t start = i;
      if (!DecodeUtf8(in.text, &i, &cp)) {
        cp = 0xFFFD;
        i = start + 1;
      }
      f(cp, in.begin[start], in.end[start]);
    }
  }
};

class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(const BertNormalizerOptions& o) : o_(o) {}

  void NormalizeRaw(std::string_view raw, uint32_t base, NormalizedText* out) const override {
    Run(RawSource{raw, base}, out);
  }
  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    Run(NormalizedSource{in}, out);
  }

 private:
  struct Pending {
    char32_t cp;
    int ccc;
    uint32_t b, e;
  };

  template <typename Source>
  void Run(const Source& src, NormalizedText* out) const {
    out->clear();
    // Combining marks after the last starter, awaiting canonical reordering (NFD).
    thread_local std::vector<Pending> run;
    run.clear();
    src.ForEach([&](char32_t cp, uint32_t b, uint32_t e) {
      if (cp < 0x80) {  // ASCII: no decomposition, no marks, no CJK
        if (o_.clean_text) {
          if (cp == '\t' || cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C) {
            if (cp == 0x0B || cp == 0x0C) return;  // Cc: removed before the space mapping
            cp = ' ';
          } else if (cp < 0x20 || cp == 0x7F) {
            return;
          }
        }
        if (!run.empty()) FlushRun(&run, out);
        if (o_.lowercase && cp >= 'A' && cp <= 'Z') cp += 32;
        out->Append(cp, b, e);
        return;
      }
      if (o_.clean_text) {
        if (cp == 0 || cp == 0xFFFD) return;
        const bool tab_nl_cr = cp == '\t' || cp == '\n' || cp == '\r';
        if (!tab_nl_cr && IsOther(cp)) return;
        if (IsWhiteSpace(cp)) cp = ' ';
      }
      if (o_.handle_chinese_chars && cp >= 0x3400 && IsChineseChar(cp)) {
        Decompose(' ', b, e, &run, out);
        Decompose(cp, b, e, &run, out);
        Decompose(' ', b, e, &run, out);
      } else {
        Decompose(cp, b, e, &run, out);
      }
    });
    FlushRun(&run, out);
  }

  // strip_accents: NFD (decompose, canonically reorder) then drop Mn; then lowercase.
  void Decompose(char32_t cp, uint32_t b, uint32_t e, std::vector<Pending>* run,
                 NormalizedText* out) const {
    if (!o_.strip_accents) {
      Emit(cp, b, e, out);
      return;
    }
    if (cp < 0x80) {  // ASCII: a starter that does not decompose
      FlushRun(run, out);
      Emit(cp, b, e, out);
      return;
    }
    char32_t d[kMaxDecomposition];
    const int n = DecomposeCanonical(cp, d);
    for (int i = 0; i < n; ++i) {
      const int ccc = CombiningClass(d[i]);
      if (ccc == 0) {
        FlushRun(run, out);
        if (!IsMarkNonspacing(d[i])) Emit(d[i], b, e, out);
      } else {
        run->push_back({d[i], ccc, b, e});
      }
    }
  }

  void FlushRun(std::vector<Pending>* run, NormalizedText* out) const {
    if (run->empty()) return;
    // Stable insertion sort by combining class (runs are a few marks long).
    for (size_t i = 1; i < run->size(); ++i) {
      Pending p = (*run)[i];
      size_t j = i;
      while (j > 0 && (*run)[j - 1].ccc > p.ccc) {
        (*run)[j] = (*run)[j - 1];
        --j;
      }
      (*run)[j] = p;
    }
    for (const Pending& p : *run) {
      if (!IsMarkNonspacing(p.cp)) Emit(p.cp, p.b, p.e, out);
    }
    run->clear();
  }

  void Emit(char32_t cp, uint32_t b, uint32_t e, NormalizedText* out) const {
    if (!o_.lowercase) {
      out->Append(cp, b, e);
      return;
    }
    char32_t l[3];
    const int n = ToLowercase(cp, l);
    for (int i = 0; i < n; ++i) out->Append(l[i], b, e);
  }

  BertNormalizerOptions o_;
};

// Base for normalizers written against NormalizedText input only.
class TextNormalizer : public Normalizer {
 public:
  void NormalizeRaw(std::string_view raw, uint32_t base, NormalizedText* out) const override {
    thread_local NormalizedText in;
    in.AssignIdentity(raw, base);
    Normalize(in, out);
  }
};

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

// NFC / NFD / NFKC / NFKD. Canonical decomposition uses the reference's tables (see
// unicode.h); compatibility decomposition and composition use utf8proc. The text is cut into
// segments that normalize independently (before every code point that cannot combine with
// what precedes it); characters keep their original range when a segment keeps its length,
// otherwise every character of the segment gets the whole segment's range.
class UnicodeNormalizer final : public TextNormalizer {
 public:
  explicit UnicodeNormalizer(UnicodeForm form) : form_(form) {}

  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    out->clear();
    bool ascii = true;
    for (char c : in.text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii) {
      *out = in;
      return;
    }
    thread_local Segment seg;
    seg.clear();
    const bool compat = form_ == UnicodeForm::kNfkc || form_ == UnicodeForm::kNfkd;
    NormalizedSource{in}.ForEach([&](char32_t cp, uint32_t b, uint32_t e) {
      char32_t buf[32];
      const int n = compat ? DecomposeCompatibility(cp, buf, 32) : DecomposeCanonical(cp, buf);
      if (!seg.inputs.empty() && !MayComposeWithPrevious(buf[0])) Flush(&seg, out);
      seg.inputs.push_back({cp, b, e, false});
      for (int k = 0; k < n; ++k) seg.decomposed.push_back({buf[k], b, e, k > 0});
    });
    Flush(&seg, out);
  }

 private:
  struct Item {
    char32_t cp;
    uint32_t b, e;
    bool inserted;  // not the first code point of its input's decomposition
  };
  struct Segment {
    std::vector<Item> inputs;      // the original code points
    std::vector<Item> decomposed;  // their full decompositions
    void clear() {
      inputs.clear();
      decomposed.clear();
    }
  };

  void Flush(Segment* seg, NormalizedText* out) const {
    if (seg->inputs.empty()) return;
    std::vector<Item>& d = seg->decomposed;
    // Canonical ordering: stable sort of each run of non-starters by combining class. For the
    // composition below only the characters move (alignments stay where they were, as the
    // reference's NFC / NFKC give them); NFD / NFKD reassign them after the sort.
    for (size_t i = 1; i < d.size(); ++i) {
      const char32_t x = d[i].cp;
      const bool x_inserted = d[i].inserted;
      const int ccc = CombiningClass(x);
      if (ccc == 0) continue;
      size_t j = i;
      while (j > 0) {
        const int prev = CombiningClass(d[j - 1].cp);
        if (prev == 0 || prev <= ccc) break;
        d[j].cp = d[j - 1].cp;
        d[j].inserted = d[j - 1].inserted;
        --j;
      }
      d[j].cp = x;
      d[j].inserted = x_inserted;
    }
    if (form_ == UnicodeForm::kNfd || form_ == UnicodeForm::kNfkd) {
      // The reference's alignment transform is sequential: each code point that starts an
      // input's decomposition takes the next input's range, each further one the range taken
      // last. The "inserted" marks moved with the characters above, so a mark that the
      // reordering put between a decomposition's pieces takes its own input's range.
      size_t next = 0;
      uint32_t b = 0, e = 0;
      for (Item& it : d) {
        if (!it.inserted && next < seg->inputs.size()) {
          b = seg->inputs[next].b;
          e = seg->inputs[next].e;
          ++next;
        }
        it.b = b;
        it.e = e;
      }
    }
    if (form_ == UnicodeForm::kNfc || form_ == UnicodeForm::kNfkc) {
      // Canonical composition (UAX #15): each character not blocked from the last starter is
      // merged into it when the pair composes. Alignments, as in the reference, are consumed
      // in order: a composite takes the next one and skips one more per merged character.
      thread_local std::vector<Item> slots;
      thread_local std::vector<uint32_t> merged;
      slots = d;
      merged.assign(d.size(), 0);
      size_t starter = SIZE_MAX;
      int last_ccc = -1;  // combining class of the last character kept
      size_t w = 0;
      for (size_t i = 0; i < d.size(); ++i) {
        const Item x = d[i];
        const int ccc = CombiningClass(x.cp);
        if (starter != SIZE_MAX) {
          const bool adjacent = w == starter + 1;
          if (adjacent || (last_ccc != 0 && last_ccc < ccc)) {
            if (const char32_t c = ComposePair(d[starter].cp, x.cp)) {
              d[starter].cp = c;
              ++merged[starter];
              continue;
            }
          }
        }
        if (ccc == 0) starter = w;
        last_ccc = ccc;
        d[w++] = x;
      }
      d.resize(w);
      size_t slot = 0;
      for (size_t j = 0; j < w; ++j) {
        d[j].b = slots[slot].b;
        d[j].e = slots[slot].e;
        slot += 1 + merged[j];
      }
    }
    for (const Item& it : d) out->Append(it.cp, it.b, it.e);
    seg->clear();
  }

  UnicodeForm form_;
};

// Replace: every non-overlapping match of a literal or regex pattern, left to right.
class ReplaceNormalizer final : public TextNormalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<SplitPattern> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}

  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    out->clear();
    thread_local std::vector<Span> matches;
    matches.clear();
    pattern_->FindMatches(in.text, {0, static_cast<uint32_t>(in.text.size())}, &matches);
    if (matches.empty()) {
      *out = in;
      return;
    }
    size_t i = 0;
    auto copy = [&](size_t stop) {
      out->text.append(std::string_view(in.text).substr(i, stop - i));
      out->begin.insert(out->begin.end(), in.begin.begin() + static_cast<ptrdiff_t>(i),
                        in.begin.begin() + static_cast<ptrdiff_t>(stop));
      out->end.insert(out->end.end(), in.end.begin() + static_cast<ptrdiff_t>(i),
                      in.end.begin() + static_cast<ptrdiff_t>(stop));
    };
    for (const Span& m : matches) {
      copy(m.begin);
      // Like the reference, the replacement takes the alignment of the last replaced character.
      out->text.append(content_);
      out->begin.insert(out->begin.end(), content_.size(), in.begin[m.end - 1]);
      out->end.insert(out->end.end(), content_.size(), in.end[m.end - 1]);
      i = m.end;
    }
    copy(in.text.size());
  }

 private:
  std::unique_ptr<SplitPattern> pattern_;
  std::string content_;
};

// Strip: removes leading and/or trailing whitespace (Rust char::is_whitespace).
class StripNormalizer final : public TextNormalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    const std::string_view text = in.text;
    size_t b = 0;
    size_t e = text.size();
    if (left_) {
      while (b < e) {
        size_t next = b;
        char32_t cp = 0;
        if (!DecodeUtf8(text, &next, &cp) || !IsWhiteSpace(cp)) break;
        b = next;
      }
    }
    if (right_) {
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t next = start;
        char32_t cp = 0;
        if (!DecodeUtf8(text, &next, &cp) || !IsWhiteSpace(cp)) break;
        e = start;
      }
    }
    out->text.assign(text.substr(b, e - b));
    out->begin.assign(in.begin.begin() + static_cast<ptrdiff_t>(b), in.begin.begin() + static_cast<ptrdiff_t>(e));
    out->end.assign(in.end.begin() + static_cast<ptrdiff_t>(b), in.end.begin() + static_cast<ptrdiff_t>(e));
  }

 private:
  bool left_, right_;
};

// Prepend: `prepend` before non-empty text, aligned to the first character.
class PrependNormalizer final : public TextNormalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    out->clear();
    if (in.text.empty()) return;
    out->text = prepend_;
    out->begin.assign(prepend_.size(), in.begin[0]);
    out->end.assign(prepend_.size(), in.end[0]);
    out->text += in.text;
    out->begin.insert(out->begin.end(), in.begin.begin(), in.begin.end());
    out->end.insert(out->end.end(), in.end.begin(), in.end.end());
  }

 private:
  std::string prepend_;
};

class LowercaseNormalizer final : public TextNormalizer {
 public:
  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    out->clear();
    NormalizedSource{in}.ForEach([&](char32_t cp, uint32_t b, uint32_t e) {
      char32_t l[3];
      const int n = ToLowercase(cp, l);
      for (int k = 0; k < n; ++k) out->Append(l[k], b, e);
    });
  }
};

// StripAccents: removes every combining mark (general category M). Unlike BertNormalizer's
// strip_accents it does not decompose first: files pair it with NFD / NFKD. Kept characters
// keep their alignment, as the reference's NormalizedString::filter does.
class StripAccentsNormalizer final : public Normalizer {
 public:
  void NormalizeRaw(std::string_view raw, uint32_t base, NormalizedText* out) const override {
    Run(RawSource{raw, base}, out);
  }
  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    Run(NormalizedSource{in}, out);
  }

 private:
  template <typename Source>
  static void Run(const Source& src, NormalizedText* out) {
    out->clear();
    src.ForEach([&](char32_t cp, uint32_t b, uint32_t e) {
      if (cp >= 0x80 && IsCombiningMark(cp)) return;
      out->Append(cp, b, e);
    });
  }
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void NormalizeRaw(std::string_view raw, uint32_t base, NormalizedText* out) const override {
    if (steps_.empty()) {
      out->AssignIdentity(raw, base);
      return;
    }
    steps_[0]->NormalizeRaw(raw, base, out);
    Rest(out);
  }
  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    if (steps_.empty()) {
      *out = in;
      return;
    }
    steps_[0]->Normalize(in, out);
    Rest(out);
  }

 private:
  void Rest(NormalizedText* out) const {
    // One buffer per nesting level (a Sequence may hold Sequences), reused across calls.
    thread_local std::vector<std::unique_ptr<NormalizedText>> buffers;
    thread_local size_t depth = 0;
    if (buffers.size() <= depth) buffers.push_back(std::make_unique<NormalizedText>());
    NormalizedText& tmp = *buffers[depth];
    ++depth;
    for (size_t k = 1; k < steps_.size(); ++k) {
      std::swap(tmp, *out);
      steps_[k]->Normalize(tmp, out);
    }
    --depth;
  }
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> MakeBertNormalizer(const BertNormalizerOptions& options) {
  return std::make_unique<BertNormalizer>(options);
}

Result<std::unique_ptr<Normalizer>> MakeNormalizer(JsonElement json, std::string_view where) {
  if (json.is_null()) return std::unique_ptr<Normalizer>();
  ORCHID_ASSIGN_OR_RETURN(std::string_view type, ComponentType(json, where));
  const std::string ctx = StrCat({where, " (", type, ")"});
  JsonObject o = json.get_object().value_unsafe();
  if (type == "BertNormalizer") {
    BertNormalizerOptions opt;
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "clean_text", ctx, &opt.clean_text));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "handle_chinese_chars", ctx, &opt.handle_chinese_chars));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "lowercase", ctx, &opt.lowercase));
    bool has_strip = false;
    bool strip = false;
    ORCHID_RETURN_IF_ERROR(ReadOptionalBool(o, "strip_accents", ctx, &has_strip, &strip));
    opt.strip_accents = has_strip ? strip : opt.lowercase;
    return MakeBertNormalizer(opt);
  }
  if (type == "NFC") return std::unique_ptr<Normalizer>(std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfc));
  if (type == "NFD") return std::unique_ptr<Normalizer>(std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfd));
  if (type == "NFKC") return std::unique_ptr<Normalizer>(std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfkc));
  if (type == "NFKD") return std::unique_ptr<Normalizer>(std::make_unique<UnicodeNormalizer>(UnicodeForm::kNfkd));
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(std::make_unique<StripAccentsNormalizer>());
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(std::make_unique<LowercaseNormalizer>());
  if (type == "Replace") {
    JsonObject pattern;
    std::string_view literal, regex, content;
    ORCHID_RETURN_IF_ERROR(ReadString(o, "content", ctx, &content, true));
    std::unique_ptr<SplitPattern> p;
    if (o["pattern"].get(pattern) == simdjson::SUCCESS && pattern["String"].get(literal) == simdjson::SUCCESS) {
      p = MakeLiteralPattern(literal);
    } else if (o["pattern"].get(pattern) == simdjson::SUCCESS && pattern["Regex"].get(regex) == simdjson::SUCCESS) {
      auto r = MakeRegexPattern(regex);
      if (!r.ok()) return JsonError(ctx, r.status().message());
      p = std::move(r).value();
    } else {
      return JsonError(ctx, "\"pattern\" must be {\"String\": …} or {\"Regex\": …}");
    }
    return std::unique_ptr<Normalizer>(std::make_unique<ReplaceNormalizer>(std::move(p), std::string(content)));
  }
  if (type == "Strip") {
    bool left = true, right = true;
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "strip_left", ctx, &left));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "strip_right", ctx, &right));
    return std::unique_ptr<Normalizer>(std::make_unique<StripNormalizer>(left, right));
  }
  if (type == "Precompiled") {
    std::string_view charsmap;
    ORCHID_RETURN_IF_ERROR(ReadString(o, "precompiled_charsmap", ctx, &charsmap, true));
    auto map = std::make_unique<PrecompiledCharsmap>();
    if (Status st = map->Parse(charsmap); !st.ok()) return JsonError(ctx, st.message());
    return MakePrecompiledNormalizer(std::move(map));
  }
  if (type == "Prepend") {
    std::string_view prepend;
    ORCHID_RETURN_IF_ERROR(ReadString(o, "prepend", ctx, &prepend, true));
    return std::unique_ptr<Normalizer>(std::make_unique<PrependNormalizer>(std::string(prepend)));
  }
  if (type == "Sequence") {
    simdjson::dom::array items;
    if (o["normalizers"].get(items) != simdjson::SUCCESS) {
      return JsonError(ctx, "\"normalizers\" must be an array");
    }
    std::vector<std::unique_ptr<Normalizer>> steps;
    size_t k = 0;
    for (JsonElement item : items) {
      ORCHID_ASSIGN_OR_RETURN(std::unique_ptr<Normalizer> step,
                              MakeNormalizer(item, StrCat({ctx, "[", std::to_string(k++), "]"})));
      if (step) steps.push_back(std::move(step));
    }
    return std::unique_ptr<Normalizer>(std::make_unique<SequenceNormalizer>(std::move(steps)));
  }
  return UnsupportedType(where, "normalizer", type);
}

std::unique_ptr<Normalizer> LowercaseFirst(std::unique_ptr<Normalizer> rest) {
  std::vector<std::unique_ptr<Normalizer>> steps;
  steps.push_back(std::make_unique<LowercaseNormalizer>());
  if (rest) steps.push_back(std::move(rest));
  return std::make_unique<SequenceNormalizer>(std::move(steps));
}

}  // namespace orchid::tok
