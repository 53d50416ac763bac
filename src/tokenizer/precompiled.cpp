#include "tokenizer/precompiled.h"

#include <utf8proc.h>

#include <array>
#include <utility>

#include "tokenizer/json_util.h"
#include "tokenizer/unicode.h"

namespace orchid::tok {
namespace {

bool DecodeBase64(std::string_view in, std::string* out) {
  std::array<int8_t, 256> value{};
  value.fill(-1);
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) value[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

}  // namespace

Status PrecompiledCharsmap::Parse(std::string_view base64) {
  std::string blob;
  if (!DecodeBase64(base64, &blob)) return Status::Corrupt("precompiled_charsmap is not base64");
  if (blob.size() < 4) return Status::Corrupt("precompiled_charsmap is too short");
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(blob[i])); };
  const uint32_t trie_bytes = byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4 || trie_bytes == 0) {
    return Status::Corrupt("precompiled_charsmap: bad trie size");
  }
  trie_.resize(trie_bytes / 4);
  for (size_t k = 0; k < trie_.size(); ++k) {
    const size_t p = 4 + 4 * k;
    trie_[k] = byte(p) | byte(p + 1) << 8 | byte(p + 2) << 16 | byte(p + 3) << 24;
  }
  normalized_ = blob.substr(4 + trie_bytes);
  if (FindInvalidUtf8(normalized_) != std::string_view::npos) {
    return Status::Corrupt("precompiled_charsmap: replacements are not valid UTF-8");
  }
  return Status::Ok();
}

bool PrecompiledCharsmap::Transform(std::string_view chunk, std::string_view* out) const {
  // darts-clone unit layout: label = unit & (1<<31 | 0xFF), has_leaf = bit 8,
  // offset = (unit >> 10) << ((unit & (1<<9)) >> 6), value = unit & 0x7FFFFFFF.
  auto offset = [](uint32_t unit) -> size_t { return static_cast<size_t>((unit >> 10) << ((unit & (1u << 9)) >> 6)); };
  size_t node = 0;
  uint32_t unit = trie_[0];
  node ^= offset(unit);
  for (char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= trie_.size()) return false;
    unit = trie_[node];
    if ((unit & ((1u << 31) | 0xFF)) != c) return false;
    node ^= offset(unit);
    if (node >= trie_.size()) return false;
    if ((unit >> 8) & 1) {
      const size_t index = trie_[node] & 0x7FFFFFFFu;
      if (index > normalized_.size()) return false;
      size_t end = normalized_.find('\0', index);
      if (end == std::string::npos) end = normalized_.size();
      *out = std::string_view(normalized_).substr(index, end - index);
      return true;
    }
  }
  return false;
}

namespace {

// Like `tokenizers`' Precompiled::normalize: per extended grapheme cluster, the whole cluster
// is replaced when it is under 6 bytes and a key prefixes it; otherwise each character is
// replaced on its own when it has a mapping.
class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(std::unique_ptr<PrecompiledCharsmap> map) : map_(std::move(map)) {
    for (size_t c = 0; c < ascii_.size(); ++c) {
      const char ch = static_cast<char>(c);
      ascii_[c].mapped = map_->Transform(std::string_view(&ch, 1), &ascii_[c].norm);
      // CR is left out: CR LF is one grapheme.
      ascii_[c].identity = !ascii_[c].mapped && ch != '\r';
    }
  }

  void NormalizeRaw(std::string_view raw, uint32_t base, NormalizedText* out) const override {
    thread_local NormalizedText in;
    in.AssignIdentity(raw, base);
    Normalize(in, out);
  }

  void Normalize(const NormalizedText& in, NormalizedText* out) const override {
    out->clear();
    const std::string_view text = in.text;
    size_t g = 0;  // start of the current grapheme
    utf8proc_int32_t state = 0;
    char32_t prev = 0;
    size_t i = 0;
    while (i < text.size()) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (i == g && c < 0x80 && ascii_[c].identity) {
        // Bulk path: a run of ASCII characters the charsmap leaves alone, each its own
        // grapheme, is copied in one go. The run's last character stays for the general path:
        // it may start a grapheme with what follows (a combining mark after a letter).
        size_t j = i + 1;
        while (j < text.size() && static_cast<unsigned char>(text[j]) < 0x80 &&
               ascii_[static_cast<unsigned char>(text[j])].identity) {
          ++j;
        }
        const size_t stop = j == text.size() ? j : j - 1;
        if (stop > i) {
          CopyIdentity(in, i, stop, out);
          g = i = stop;
          state = 0;
          prev = stop > 0 ? static_cast<unsigned char>(text[stop - 1]) : 0;
          if (i == text.size()) break;
          continue;
        }
      }
      if (c < 0x80 && prev < 0x80 && i > g && !(prev == '\r' && c == '\n')) {
        // Fast path: between two ASCII characters (but CR LF) is always a grapheme break, and
        // utf8proc's state after an ASCII character is just that character's class, which it
        // recomputes from `prev` when the state is reset.
        Grapheme(in, g, i, out);
        g = i;
        state = 0;
        prev = c;
        ++i;
        continue;
      }
      size_t next = i;
      char32_t cp = 0;
      if (!DecodeUtf8(text, &next, &cp)) {
        next = i + 1;
        cp = 0xFFFD;
      }
      if (i > g && utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(prev),
                                                    static_cast<utf8proc_int32_t>(cp), &state)) {
        Grapheme(in, g, i, out);
        g = i;
      }
      prev = cp;
      i = next;
    }
    if (text.size() > g) Grapheme(in, g, text.size(), out);
  }

 private:
  void Grapheme(const NormalizedText& in, size_t b, size_t e, NormalizedText* out) const {
    const std::string_view text = in.text;
    std::string_view norm;
    if (e - b == 1 && static_cast<unsigned char>(text[b]) < 0x80) {
      const AsciiMapping& m = ascii_[static_cast<unsigned char>(text[b])];
      if (m.mapped) {
        Emit(m.norm, in.begin[b], in.end[b], out);
      } else {
        out->text.push_back(text[b]);
        out->begin.push_back(in.begin[b]);
        out->end.push_back(in.end[b]);
      }
      return;
    }
    if (e - b < 6 && map_->Transform(text.substr(b, e - b), &norm)) {
      // As in the reference, output character k takes the alignment of input character k
      // (the last input character's for any extra ones).
      size_t src = b;
      size_t k = 0;
      while (k < norm.size()) {
        const size_t n = std::min<size_t>(static_cast<size_t>(Utf8SeqLength(static_cast<unsigned char>(norm[k]))),
                                          norm.size() - k);
        Emit(norm.substr(k, n), in.begin[src], in.end[src], out);
        k += n;
        const size_t next = src + static_cast<size_t>(Utf8SeqLength(static_cast<unsigned char>(text[src])));
        if (next < e) src = next;
      }
      return;
    }
    size_t i = b;
    while (i < e) {
      const size_t n = std::min<size_t>(static_cast<size_t>(Utf8SeqLength(static_cast<unsigned char>(text[i]))), e - i);
      if (map_->Transform(text.substr(i, n), &norm)) {
        Emit(norm, in.begin[i], in.end[i], out);
      } else {
        out->text.append(text.substr(i, n));
        out->begin.insert(out->begin.end(), in.begin.begin() + static_cast<ptrdiff_t>(i),
                          in.begin.begin() + static_cast<ptrdiff_t>(i + n));
        out->end.insert(out->end.end(), in.end.begin() + static_cast<ptrdiff_t>(i),
                        in.end.begin() + static_cast<ptrdiff_t>(i + n));
      }
      i += n;
    }
  }

  static void CopyIdentity(const NormalizedText& in, size_t b, size_t e, NormalizedText* out) {
    out->text.append(std::string_view(in.text).substr(b, e - b));
    out->begin.insert(out->begin.end(), in.begin.begin() + static_cast<ptrdiff_t>(b),
                      in.begin.begin() + static_cast<ptrdiff_t>(e));
    out->end.insert(out->end.end(), in.end.begin() + static_cast<ptrdiff_t>(b),
                    in.end.begin() + static_cast<ptrdiff_t>(e));
  }

  static void Emit(std::string_view norm, uint32_t b, uint32_t e, NormalizedText* out) {
    out->text.append(norm);
    out->begin.insert(out->begin.end(), norm.size(), b);
    out->end.insert(out->end.end(), norm.size(), e);
  }

  // Transform() of each single ASCII character, precomputed: most text is ASCII.
  struct AsciiMapping {
    bool mapped = false;
    bool identity = false;  // unmapped and not CR: copied as it is, a grapheme of its own
    std::string_view norm;
  };
  std::unique_ptr<PrecompiledCharsmap> map_;
  std::array<AsciiMapping, 128> ascii_{};
};

}  // namespace

std::unique_ptr<Normalizer> MakePrecompiledNormalizer(std::unique_ptr<PrecompiledCharsmap> map) {
  return std::make_unique<PrecompiledNormalizer>(std::move(map));
}

}  // namespace orchid::tok
