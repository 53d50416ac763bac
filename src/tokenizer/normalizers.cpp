#include "tokenizer/normalizers.h"

#include <string>
#include <vector>

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
  return UnsupportedType(where, "normalizer", type);
}

}  // namespace orchid::tok
